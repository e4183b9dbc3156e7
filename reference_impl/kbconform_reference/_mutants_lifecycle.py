"""Mutants of the reference, write side and lifecycle: spoof, shadow ids, deletion and backup.

Each entry is ``(name, kind, breaks, killers)``: a :class:`KnowledgeBase` subclass with one
invariant broken, and the suite test ids that must fail against it (see ``mutants.py``).
"""

from __future__ import annotations

MUTANTS: tuple[tuple[str, type, str, tuple[str, ...]], ...] = ()
