"""Mutants of the project-pool reference, what the stores keep: an episode written once for every
session that says it, entities kept one per name, names cut at a column's width, names looked up
as ``LIKE`` patterns."""

from __future__ import annotations

import uuid
from typing import Any

from kbconform_reference.pool.membership import Membership, SessionRow
from kbconform_reference.pool.mutants._base import Mutant
from kbconform_reference.pool.qdrant import ENTITIES, EPISODES, equal
from kbconform_reference.pool.service import ProjectPool, _entities

#: The width of the name columns of :class:`_CutNames` (a ``VARCHAR(64)`` that cuts silently).
NAME_WIDTH = 64


class EpisodesDeduplicated(ProjectPool):
    """An episode whose text is stored already is not stored again ("add if new", as memory
    layers deduplicate): the write answers the stored episode's id, whichever session wrote it,
    so the second session's episode is never in its own pool."""

    def write_episode(self, session: object, text: object, /) -> str:
        with self._lock:
            self._caller(session, "write_episode")
            if type(text) is str and text:
                (vector,) = self._embed([text])
                with self._store("write_episode"):
                    same = self.vectors.search(EPISODES, vector, equal("text", text), 1)
                if same:
                    return same[0].id
            return super().write_episode(session, text)


class EntitiesKeptByName(ProjectPool):
    """An entity's point id is derived from its name (an upsert by name, as a graph keeps one
    node per entity): an entity named again, in another project or in the same batch, replaces
    the stored one and its project tag."""

    def extract_entities(self, session: object, entities: object, /) -> list[str]:
        with self._lock:
            caller = self._caller(session, "extract_entities")
            checked = _entities(entities)
            if not checked:
                return []
            ids = [str(uuid.uuid5(uuid.NAMESPACE_URL, entity["name"])) for entity in checked]
            vectors = self._embed([f"{e['name']} ({e['type']}): {e['notes']}" for e in checked])
            points = [
                (entity_id, vector, self._entity_payload(caller, entity))
                for entity_id, vector, entity in zip(ids, vectors, checked, strict=True)
            ]
            with self._store("extract_entities"):
                self.vectors.upsert(ENTITIES, points)
            return ids


class _CutNames(Membership):
    """Session ids and project names are kept in columns of :data:`NAME_WIDTH` characters that
    cut longer values silently, and looked up by the value the column would hold."""

    def session(self, external_id: str) -> SessionRow | None:
        return super().session(external_id[:NAME_WIDTH])

    def project(self, name: str) -> int | None:
        return super().project(name[:NAME_WIDTH])

    def create_project(self, name: str) -> int:
        return super().create_project(name[:NAME_WIDTH])

    def start_session(self, external_id: str, project_id: int | None) -> int:
        return super().start_session(external_id[:NAME_WIDTH], project_id)


class NamesCut(ProjectPool):
    """Names are stored cut at 64 characters: two long names alike in their first 64 are one
    session, or one project."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.membership.close()
        self.membership = _CutNames()


class _LikeNames(Membership):
    """Sessions and projects are looked up with ``LIKE`` (a search box's helper reused): the
    name is a pattern, so ``_`` and ``%`` in it match other names (case kept:
    ``case_sensitive_like``)."""

    def __init__(self) -> None:
        super().__init__()
        self._db.execute("PRAGMA case_sensitive_like = ON")

    def session(self, external_id: str) -> SessionRow | None:
        row = self._db.execute(
            "SELECT s.id, m.project_id FROM sessions s "
            "LEFT JOIN memberships m ON m.session_id = s.id AND m.removed_at IS NULL "
            "WHERE s.external_id LIKE ? ORDER BY s.id",
            (external_id,),
        ).fetchone()
        return None if row is None else SessionRow(int(row[0]), None if row[1] is None else int(row[1]))

    def project(self, name: str) -> int | None:
        row = self._db.execute("SELECT id FROM projects WHERE name LIKE ? ORDER BY id", (name,)).fetchone()
        return None if row is None else int(row[0])


class NamesMatchedLike(ProjectPool):
    """Membership looks names up as ``LIKE`` patterns (:class:`_LikeNames`)."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.membership.close()
        self.membership = _LikeNames()


MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "pool-episodes-deduplicated",
        EpisodesDeduplicated,
        "an episode whose text is stored already answers the stored one's id, whoever wrote it",
        ("pool-08",),
    ),
    Mutant(
        "pool-entities-kept-by-name",
        EntitiesKeptByName,
        "an entity's id is derived from its name: one named again replaces the stored one and its tag",
        ("pool-08",),
    ),
    Mutant(
        "pool-names-cut",
        NamesCut,
        "session ids and project names are cut at 64 characters: long look-alikes are one",
        ("pool-08",),
    ),
    Mutant(
        "pool-names-matched-like",
        NamesMatchedLike,
        "session ids and project names are looked up as LIKE patterns: '_' and '%' match others",
        ("pool-08",),
    ),
)
