"""The reference knowledge base of the ``project-pool`` isolation profile (``schemas/project-pool.md``).

Project-scoped conversation memory: membership in SQLite, episodes and entities in Qdrant
(local mode), every filter built from internal ids. ``kbconform_reference.pool.adapter:qdrant_local``
is its adapter; ``kbconform_reference.pool.mutants:MUTANTS`` its mutant set (``reference-pool``).
Needs the ``qdrant`` extra; ``qdrant_client`` is imported only when a backend is opened.
"""

from kbconform_reference.pool.service import PoolHit, ProjectPool

__all__ = ["PoolHit", "ProjectPool"]
