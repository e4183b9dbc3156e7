"""The memory-scope reference (``schemas/memory-scope.md``): agent memory scoped by user, agent
and run, on Qdrant in local mode. ``kbconform_reference.memory.adapter:qdrant_local`` is its
adapter; ``kbconform_reference.memory.mutants`` its mutant set (``reference-memory``)."""
