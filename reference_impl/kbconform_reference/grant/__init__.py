"""The reference knowledge base of the ``kb-grant`` isolation profile (``schemas/kb-grant.md``).

Tenants own knowledge bases bound to vector stores and share them by grant; one search fans out
to every store its knowledge bases live on, in parallel, and merges on one score scale. The
catalogue is in SQLite; documents are in Chroma embedded and Qdrant local mode at once, tagged
with internal ids. ``kbconform_reference.grant.adapter:multi_store`` is its adapter;
``kbconform_reference.grant.mutants:MUTANTS`` its mutant set (``reference-grant``). Needs the
``chroma`` and ``qdrant`` extras; neither is imported until a backend is opened.
"""

from kbconform.adapter import GrantHit, KbInfo
from kbconform_reference.grant.service import KbGrantService, unit_score

__all__ = ["GrantHit", "KbGrantService", "KbInfo", "unit_score"]
