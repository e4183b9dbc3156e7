"""The ``project-pool`` profile's driver (a backend and :class:`PoolPolicy` driven together)
and its world for the shared isolation suite."""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kbconform.adapter import MAX_LIMIT, BackendOptions, Manifest
from kbconform.conformance import (
    PROBE,
    TOPIC,
    Driver,
    Reader,
    Reading,
    Refused,
    call_args,
    carried,
    hits_count,
    judged,
)
from kbconform.errors import KbconformError
from kbconform.profiles.project_pool.model import PoolPolicy
from kbconform.profiles.project_pool.protocol import POOL_READ_FACADES

__all__ = ["POOL_LAYOUT", "PoolDriver", "PoolIsolation", "PoolWorld"]


@dataclass
class PoolDriver(Driver):
    """A project-pool backend and its model, driven together: each call is made, its outcome
    compared with :class:`~kbconform.profiles.project_pool.model.PoolPolicy`, and what landed committed to it.
    Every error is checked for stored text the call did not send. ``rng`` makes the unique
    token each written text starts with."""

    backend: Any
    rng: random.Random = field(default_factory=random.Random)
    policy: PoolPolicy = field(default_factory=PoolPolicy)

    # -- membership and writes -------------------------------------------------------------------

    def attempt(self, operation: str, *args: Any, may_fail: bool = False) -> Any:
        """Call ``operation`` (a membership or write facade) with ``args``: a refusal the model
        expects comes back as the error; a call that lands is checked (its ids) and committed.
        With ``may_fail`` (a store fault armed), BackendUnavailable is a call that changed
        nothing. Any other outcome fails."""
        _, outcome = self._made(operation, args, may_fail, self.policy.stored.values())
        if isinstance(outcome, KbconformError):
            return outcome
        if operation == "write_episode":
            problems = self.policy.check_ids([outcome], 1)
            assert not problems, f"write_episode{call_args(args)}: {'; '.join(problems)}"
            self.policy.commit_episode(args[0], args[1], outcome)
        elif operation == "extract_entities":
            outcome = list(outcome)
            problems = self.policy.check_ids(outcome, len(args[1]))
            assert not problems, f"extract_entities{call_args(args)}: {'; '.join(problems)}"
            self.policy.commit_entities(args[0], args[1], outcome)
        else:
            getattr(self.policy, f"commit_{operation}")(*args)
        return outcome

    def session_id(self) -> str:
        """A new external session id as clients make them: a random UUID."""
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def text(self, what: str = TOPIC) -> str:
        """An episode's text: a unique token, then ``what``."""
        return f"kbp{self.rng.getrandbits(48):012x} {what}"

    def entities(self, n: int = 1, what: str = "the billing service") -> list[dict[str, str]]:
        """``n`` valid entities whose names start with a unique token, then ``what``. Each claims
        a scope inside its data, as extracted notes do (P16): its notes name a project and a
        session the backend knows (or made-up ones), and so do keys beside the three an entity
        has, which are dropped."""
        projects = sorted(self.policy.projects) or ["alpha"]
        sessions = sorted(self.policy.sessions) or ["1"]
        made = []
        for k in range(n):
            project, session = self.rng.choice(projects), self.rng.choice(sessions)
            made.append(
                {
                    "name": f"kbe{self.rng.getrandbits(48):012x} {what}",
                    "type": "concept",
                    "notes": f"note {k}; project: {project}; session: {session}",
                    "project": project,
                    "session": session,
                }
            )
        return made

    def write(self, session: str, what: str = TOPIC) -> str:
        """An episode of ``session`` that must land; its id."""
        return str(self.call("write_episode", session, self.text(what)))

    def extract(self, session: str, n: int = 1, what: str = "the billing service") -> list[str]:
        """``n`` entities of ``session`` that must land; their ids."""
        return [str(i) for i in self.call("extract_entities", session, self.entities(n, what))]

    # -- searches --------------------------------------------------------------------------------

    @property
    def everything(self) -> int:
        """A search limit at least the size of every scope."""
        limit = len(self.policy.stored) + 1
        assert limit <= MAX_LIMIT, "the suite stored more than a search may return"
        return limit

    def attempt_search(
        self,
        facade: str,
        session: object,
        text: str = PROBE,
        limit: int | None = None,
        may_fail: bool = False,
    ) -> list[Any] | KbconformError:
        """Search as ``session`` (any caller): the hits, checked against the model's scope (P13),
        or the error the model expects (with ``may_fail``, BackendUnavailable too)."""
        limit = self.everything if limit is None else limit
        scope = self.policy.search(facade, session)
        who = f"{facade} as {session!r} (limit {limit})"
        outcome: list[Any] | KbconformError = judged(
            who,
            scope,
            lambda: list(getattr(self.backend, facade.replace("-", "_"))(session, text, limit)),
            self.policy.stored.values(),
            [text],
            may_fail,
            hits_count,
        )
        if isinstance(outcome, KbconformError):
            return outcome
        assert not isinstance(scope, Refused)  # what _judged checked
        problems = self.policy.hit_problems(scope, outcome, limit)
        assert not problems, f"{who}: {'; '.join(problems)}"
        return outcome

    def search(self, facade: str, session: object, text: str = PROBE, limit: int | None = None) -> list[Any]:
        """A search the model allows: its hits, exactly as the model says (P13)."""
        assert not isinstance(self.policy.search(facade, session), Refused), (
            f"the suite searches as {session!r}, which the model refuses"
        )
        outcome = self.attempt_search(facade, session, text, limit)
        assert isinstance(outcome, list)
        return outcome

    def refuse_search(self, facade: str, session: object) -> KbconformError:
        """A search the model refuses: it must raise exactly that error."""
        assert isinstance(self.policy.search(facade, session), Refused), (
            f"the suite expects {session!r} to be refused, which the model is not"
        )
        outcome = self.attempt_search(facade, session)
        assert isinstance(outcome, KbconformError)
        return outcome

    def check(self) -> int:
        """Every search of every session equals the model; how many scopes were neither empty
        nor everything (a check that could tell a leak, or a loss, from a correct backend)."""
        informative = 0
        for session in self.policy.sessions:
            for facade in POOL_READ_FACADES:
                hits = self.search(facade, session)
                informative += 0 < len(hits) < self.policy.size(facade)
        return informative


@dataclass
class PoolWorld:
    """The seeded sessions, and the model that holds what they wrote."""

    policy: PoolPolicy
    readers: tuple[Reader, ...]

    def size(self, facade: str) -> int:
        return self.policy.size(facade)

    def expected(self, facade: str, reader: Reader) -> Reading:
        scope = self.policy.search(facade, reader.identity)
        assert not isinstance(scope, Refused), f"{reader.label} is no identity to the model"
        return Reading(dict(scope), len(scope))

    def read(self, backend: Any, facade: str, reader: Reader) -> Reading:
        limit = min(MAX_LIMIT, len(self.policy.stored) + 1)
        hits = list(getattr(backend, facade.replace("-", "_"))(reader.identity, PROBE, limit))
        return Reading({hit.id: hit.text for hit in hits}, len(hits))

    def read_once(self, backend: Any, facade: str, identity: object) -> object:
        return getattr(backend, facade.replace("-", "_"))(identity, PROBE, 10)

    def no_identities(self) -> dict[str, object]:
        """None, values that are not strings, and strings that are no session: empty, never
        started, a number that is some session's internal id, case and space variants of one."""
        started = [s for s in self.policy.sessions if not s.isdecimal()]
        numbers = {s for s in self.policy.sessions if s.isdecimal()}
        unused = next(str(n) for n in range(1, 100) if str(n) not in numbers)
        return {
            "None": None,
            "a number": 1,
            "a list holding a session's id": [started[0]],
            "an empty string": "",
            "a session never started": f"never-started-{started[0]}",
            "a small number no session has as its id": unused,
            "a session's id in upper case": started[0].upper(),
            "a session's id with a trailing space": f"{started[0]} ",
        }

    def carried(self, error: BaseException) -> list[str]:
        return carried(error, self.policy.stored.values())

    def writers(self) -> tuple[Reader, ...]:
        """A session of each of the first three pools (a project's, or the pool of no project)."""
        pools: dict[str | None, Reader] = {}
        for reader in self.readers:
            pools.setdefault(self.policy.project_of(reader.identity), reader)
        return tuple(pools.values())[:3]

    @staticmethod
    def _entity(mark: str) -> dict[str, str]:
        return {"name": f"{mark} the billing service written at once", "type": "concept", "notes": "at once"}

    def write(self, backend: Any, facade: str, identity: object, mark: str) -> object:
        if facade == "search-entities":
            return backend.extract_entities(identity, [self._entity(mark)])
        return backend.write_episode(identity, f"{mark} {TOPIC} written at once")

    def wrote(self, facade: str, writer: Reader, mark: str, answer: object) -> list[str]:
        if facade == "search-entities":
            problems = self.policy.check_ids(answer, 1)
            if not problems and isinstance(answer, Sequence):
                self.policy.commit_entities(writer.identity, [self._entity(mark)], [str(i) for i in answer])
            return problems
        problems = self.policy.check_ids([answer], 1)
        if not problems:
            self.policy.commit_episode(writer.identity, f"{mark} {TOPIC} written at once", str(answer))
        return problems


#: The seeded layout: each project, and the sessions started in it (None: in no project).
#: Session labels: "uN" become random UUIDs; digit strings stay (they look like the internal
#: ids a backend gives; the UUID sessions are started first, so no digit is its own internal id).
POOL_LAYOUT: tuple[tuple[str | None, tuple[str, ...]], ...] = (
    ("alpha", ("u1", "3")),
    ("alpha-2", ("u2", "1")),
    ("1", ("u3",)),  # a project named like another project's internal id
    ("empty", ("u4",)),  # its one session writes nothing
    (None, ("u5", "u6", "4")),
)


@dataclass(frozen=True)
class PoolIsolation:
    """The ``project-pool`` profile (its world is the same for every manifest)."""

    manifest: Manifest

    def seed(self, backend: Any, rng: random.Random) -> PoolWorld:
        driver = PoolDriver(backend, rng)
        for project, _ in POOL_LAYOUT:
            if project is not None:
                driver.call("create_project", project)
        uuids = {
            label: driver.session_id() for _, labels in POOL_LAYOUT for label in labels if label[0] == "u"
        }
        placed = [(uuids.get(label, label), project) for project, labels in POOL_LAYOUT for label in labels]
        mover, leaver = driver.session_id(), driver.session_id()
        for session, project in sorted(placed, key=lambda pair: pair[0].isdecimal()):
            driver.call("start_session", session, project)
        driver.call("start_session", mover, "alpha")
        driver.call("start_session", leaver, "1")
        for session, project in placed:
            if project != "empty":
                driver.write(session, f"{TOPIC} said by {session}")
                driver.write(session, f"{TOPIC} said by {session} again")
                driver.extract(session, 2, f"what {session} named")
        for session in (mover, leaver):  # entities before and after a move keep their tags (P7)
            driver.write(session)
            driver.extract(session)
        driver.call("assign_session", mover, "alpha-2")
        driver.call("remove_session", leaver)
        for session in (mover, leaver):
            driver.write(session, f"{TOPIC} after the move")
            driver.extract(session, 1, "after the move")
        readers = tuple(
            Reader(f"session {s!r} (in {'no project' if p is None else f'project {p!r}'})", s)
            for s, p in driver.policy.sessions.items()
        )
        return PoolWorld(driver.policy, readers)

    def options(self, store_fails: Callable[[], bool]) -> BackendOptions:
        return BackendOptions(store_fails=store_fails)
