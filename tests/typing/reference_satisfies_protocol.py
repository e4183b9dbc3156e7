"""Checked by mypy (tests/typing/test_typing.py): the reference satisfies the adapter protocol."""

from __future__ import annotations

from kbconform.adapter import Adapter
from kbconform.profiles.tenant_namespace.protocol import Backend, SupportsAsk, SupportsCount, SupportsScan
from kbconform_reference import KnowledgeBase
from kbconform_reference.adapter import ReferenceAdapter
from kbconform_reference.stores import MemoryStore

backend: Backend = KnowledgeBase(MemoryStore())
counting: SupportsCount = KnowledgeBase(MemoryStore())
asking: SupportsAsk = KnowledgeBase(MemoryStore())
scanning: SupportsScan = KnowledgeBase(MemoryStore())
adapter: Adapter = ReferenceAdapter("memory")
