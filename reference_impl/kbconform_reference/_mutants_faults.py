"""Mutants of the reference that break all-or-nothing writes when the store fails part-way.

Each entry is ``(name, kind, breaks, killers)``: a :class:`KnowledgeBase` subclass with one
invariant broken, and the suite test ids that must fail against it (see ``mutants.py``).
"""

from __future__ import annotations

MUTANTS: tuple[tuple[str, type, str, tuple[str, ...]], ...] = ()
