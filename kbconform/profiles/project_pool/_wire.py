"""The project-pool profile's harness-v1 operations (:class:`~kbconform.adapter.ProjectPoolBackend`):
the session crosses as sent (a string, or None for no identity), which the backend checks as it
does in process."""

from __future__ import annotations

import builtins
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kbconform.harness import HarnessBackend, WireTable, done, json_form

# -- sessions ---------------------------------------------------------------------------------


def session_to_wire(session: object) -> Any:
    """The caller of a project-pool read or write (a session), as
    harness-v1 data: its JSON form, so that the backend sees what it would see in process (a
    ``str`` as its plain value, the empty string included; a number, a list as themselves: no
    identity, which the backend refuses); a value with no JSON form (an object, bytes, NaN) as
    ``None``, no identity too."""
    return json_form(session)


def name_to_wire(what: str, name: object, *, optional: bool = False) -> str | None:
    """A session or project name a membership operation takes (the operator's, not a caller):
    a ``str`` crosses as its plain value (None too, where ``optional``); anything else has no
    harness-v1 form."""
    if isinstance(name, str):
        return str.__str__(name)
    if optional and name is None:
        return None
    allowed = "a str or None" if optional else "a str"
    raise TypeError(f"behind harness-v1 a {what} is {allowed}; got {type(name).__name__}")


@dataclass(frozen=True, slots=True)
class PoolHit:
    """An episode or an entity as a project-pool search returns it."""

    id: str
    text: str


def pool_hit_to_wire(hit: Any) -> dict[str, Any]:
    return {"id": hit.id, "text": hit.text}


def pool_hit_from_wire(data: Mapping[str, Any]) -> PoolHit:
    return PoolHit(data["id"], data["text"])


class PoolHarnessBackend(HarnessBackend):
    """A project-pool backend behind a harness."""

    def _as(self, op: str, session: object, **params: Any) -> Mapping[str, Any]:
        """A read or write: the session crosses as data (:func:`session_to_wire`)."""
        return self._request(op, {"backend": self.handle, "session": session_to_wire(session), **params})

    def create_project(self, project: str, /) -> None:
        self._request(
            "createProject", {"backend": self.handle, "project": name_to_wire("project name", project)}
        )

    def start_session(self, session: str, project: str | None, /) -> None:
        params = {
            "backend": self.handle,
            "session": name_to_wire("session id", session),
            "project": name_to_wire("project name", project, optional=True),
        }
        self._request("startSession", params)

    def assign_session(self, session: str, project: str, /) -> None:
        params = {
            "backend": self.handle,
            "session": name_to_wire("session id", session),
            "project": name_to_wire("project name", project),
        }
        self._request("assignSession", params)

    def remove_session(self, session: str, /) -> None:
        self._request(
            "removeSession", {"backend": self.handle, "session": name_to_wire("session id", session)}
        )

    def write_episode(self, session: object, text: str, /) -> str:
        return str(self._as("writeEpisode", session, text=text)["id"])

    def extract_entities(
        self, session: object, entities: Sequence[Mapping[str, str]], /
    ) -> builtins.list[str]:
        sent = [dict(entity) if isinstance(entity, Mapping) else entity for entity in entities]
        return list(self._as("extractEntities", session, entities=sent)["ids"])

    def search_episodes(self, session: object, text: str, limit: int, /) -> builtins.list[PoolHit]:
        result = self._as("searchEpisodes", session, text=text, limit=limit)
        return [pool_hit_from_wire(hit) for hit in result["hits"]]

    def search_entities(self, session: object, text: str, limit: int, /) -> builtins.list[PoolHit]:
        result = self._as("searchEntities", session, text=text, limit=limit)
        return [pool_hit_from_wire(hit) for hit in result["hits"]]


def _hits(found: Any) -> dict[str, Any]:
    return {"hits": [pool_hit_to_wire(hit) for hit in found]}


WIRE = WireTable(
    handlers={
        "createProject": lambda s, a: done(s.backend.create_project(a["project"])),
        "startSession": lambda s, a: done(s.backend.start_session(a["session"], a["project"])),
        "assignSession": lambda s, a: done(s.backend.assign_session(a["session"], a["project"])),
        "removeSession": lambda s, a: done(s.backend.remove_session(a["session"])),
        "writeEpisode": lambda s, a: {"id": s.backend.write_episode(a["session"], a["text"])},
        "extractEntities": lambda s, a: {
            "ids": list(s.backend.extract_entities(a["session"], a["entities"]))
        },
        "searchEpisodes": lambda s, a: _hits(s.backend.search_episodes(a["session"], a["text"], a["limit"])),
        "searchEntities": lambda s, a: _hits(s.backend.search_entities(a["session"], a["text"], a["limit"])),
    },
    backend=PoolHarnessBackend,
    # a NotFound names the project startSession names, or the session of the other operations
    named={"startSession": "project", "assignSession": "session", "removeSession": "session"},
)
