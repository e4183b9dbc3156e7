"""The tenant-namespace reference's adapters under the names the README, the default of
``kbconform run`` and users' configurations give them: ``kbconform_reference.adapter:memory``,
``:chroma_embedded``, ``:chroma_server``, ``:postgres`` and ``:memory_shared_for_all``. They are
:mod:`kbconform_reference.namespace.adapter`'s."""

from kbconform_reference.namespace.adapter import (
    POSTGRES_MAX_BATCH,
    ReferenceAdapter,
    SwitchedStore,
    chroma_embedded,
    chroma_server,
    memory,
    memory_shared_for_all,
    postgres,
)

__all__ = [
    "POSTGRES_MAX_BATCH",
    "ReferenceAdapter",
    "SwitchedStore",
    "chroma_embedded",
    "chroma_server",
    "memory",
    "memory_shared_for_all",
    "postgres",
]
