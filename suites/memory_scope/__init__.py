"""The memory-scope profile's own suite (schemas/memory-scope.md)."""
