"""The reference knowledge base of the ``tenant-namespace`` isolation profile (``schemas/*.md``).

``KnowledgeBase(store)`` (:mod:`.service`) over a :class:`~.stores.VectorStore`: the exact
in-memory store, Chroma embedded, a Chroma server (:mod:`.stores.chroma`), or PostgreSQL whose
row-level security enforces the read filter itself (:mod:`.stores.postgres`). Server stamps and
the spoof check are in :mod:`.stamping`, the read filter in :mod:`.read_filter`, deletion
signals in :mod:`.deletion`. ``kbconform_reference.namespace.adapter`` holds its adapters (also
named ``kbconform_reference.adapter:memory``, ``:chroma_embedded``, ``:chroma_server``,
``:postgres``); :mod:`.mutants` its mutant sets (``reference``, and ``reference-postgres`` in
:mod:`.mutants.postgres`).
"""
