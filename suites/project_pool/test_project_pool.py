"""The project-pool profile's own suite (schemas/project-pool.md): membership, tags, identity.

Each test drives a fresh backend and the policy model together (:class:`PoolDriver`): every
call's outcome is compared with :class:`~kbconform.profiles.project_pool.model.PoolPolicy` and
committed to it, every search's hits are compared with the model's scope (exactly, or ``limit``
hits of it), and every error is checked for stored text. Each test's docstring names the rule it checks; the
profile-independent tests (iso-01 to iso-03) are in ``test_isolation.py``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from functools import partial
from typing import Any

import pytest
from hypothesis import strategies as st
from hypothesis.stateful import initialize, rule

from kbconform.adapter import MAX_LIMIT, BackendOptions
from kbconform.conformance import DriverMachine, Fault, Run, every_fault, refuses
from kbconform.conformance.strategies import names_of, with_twins
from kbconform.errors import BackendUnavailable, ContractViolation
from kbconform.profiles.project_pool.protocol import POOL_INVALID, POOL_READ_FACADES
from kbconform.profiles.project_pool.world import PoolDriver

#: The isolation profile these tests are written for (schemas/project-pool.md).
PROFILES = ("project-pool",)

EPISODES, ENTITIES = POOL_READ_FACADES
#: Pairs of external session ids that collide under a common mistake: numbers a backend gives as
#: internal ids (and one with a leading zero), prefixes of each other, case and trailing-space
#: variants, the NFC and NFD forms of one name, separators a key format folds, names of projects.
SESSION_FAMILIES = (
    ("1", "01"),
    ("1", "10"),
    ("2", "3"),
    ("a", "A"),
    ("a", "a "),
    ("s-1", "S-1"),
    ("s-1", "s-10"),
    ("caf\u00e9", "cafe\u0301"),
    ("s/1", "s_1"),
    ("alpha", "a"),
)
SESSION_NAMES = names_of(SESSION_FAMILIES)
#: Project names that collide likewise: numbers, a prefix, a case variant, the NFC and NFD forms,
#: a separator, a session's name.
PROJECT_FAMILIES = (
    ("1", "2"),
    ("alpha", "alpha-2"),
    ("alpha", "Alpha"),
    ("caf\u00e9", "cafe\u0301"),
    ("p/1", "p_1"),
    ("a", "alpha"),
)
PROJECT_NAMES = names_of(PROJECT_FAMILIES)
#: Names at a store's boundaries, made in this order in every program of pool-08, each session in
#: the project beside it: two long names alike in their first 77 characters (a column that cuts
#: values at a width makes them one), then a name holding a quote, a double quote, a backslash and
#: a colon, and after it a name holding ``_`` and ``%`` that matches it as a ``LIKE`` pattern.
EDGE_PROJECTS = ("project-" + "0" * 70 + "-a", "project-" + "0" * 70 + "-b", "p'1\"\\:", "p_1%")
EDGE_SESSIONS = ("session-" + "0" * 70 + "-a", "session-" + "0" * 70 + "-b", "s'1\"\\:", "s_1%")


def _ids(hits: list[Any]) -> set[str]:
    return {hit.id for hit in hits}


def _driver(run: Run, backend: Any, name: str) -> PoolDriver:
    return PoolDriver(backend, run.rng(name))


@pytest.mark.kbconform(id="pool-01", rule="project-pool.md#p5", guide="the-project-pool-profile", level="L2")
def test_a_session_added_to_a_project_brings_its_episodes_on_its_next_call(
    kbconform_run: Run, kbconform_backend: Any
) -> None:
    """P5: a session in no project, added to project alpha, searches alpha's pool (its own
    episodes included) and alpha's entities on its very next call; alpha's sessions see its
    episodes and the shared pool no longer does. Moved on to beta, its episodes leave alpha."""
    d = _driver(kbconform_run, kbconform_backend, "pool-01")
    d.call("create_project", "alpha")
    d.call("create_project", "beta")
    mover, shared, in_alpha, in_beta = (d.session_id() for _ in range(4))
    for session, project in ((mover, None), (shared, None), (in_alpha, "alpha"), (in_beta, "beta")):
        d.call("start_session", session, project)
    moved = {d.write(mover), d.write(mover)}
    alpha = {d.write(in_alpha)}
    d.write(shared)
    d.write(in_beta)
    alpha_entities = set(d.extract(in_alpha, 2))
    d.extract(in_beta)
    d.check()  # every session has searched before the move: a cached project would show
    assert moved <= _ids(d.search(EPISODES, shared)), "control: the shared pool holds the mover's episodes"
    d.call("assign_session", mover, "alpha")
    assert _ids(d.search(EPISODES, mover)) == alpha | moved
    assert _ids(d.search(ENTITIES, mover)) == alpha_entities
    assert moved <= _ids(d.search(EPISODES, in_alpha))
    assert not moved & _ids(d.search(EPISODES, shared))
    d.check()
    d.call("assign_session", mover, "beta")
    assert moved <= _ids(d.search(EPISODES, in_beta))
    assert not moved & _ids(d.search(EPISODES, in_alpha))
    assert d.check()


@pytest.mark.kbconform(id="pool-02", rule="project-pool.md#p6", guide="the-project-pool-profile", level="L2")
def test_a_session_removed_from_its_project_returns_to_the_shared_pool_at_once(
    kbconform_run: Run, kbconform_backend: Any
) -> None:
    """P6: a session removed from alpha searches the shared pool (its episodes with it) and gets
    no entity context from its next call on; alpha's sessions no longer see its episodes, the
    shared pool's do. Removing a session in no project leaves it there."""
    d = _driver(kbconform_run, kbconform_backend, "pool-02")
    d.call("create_project", "alpha")
    leaver, stayer, shared = (d.session_id() for _ in range(3))
    for session, project in ((leaver, "alpha"), (stayer, "alpha"), (shared, None)):
        d.call("start_session", session, project)
    left = {d.write(leaver), d.write(leaver)}
    pooled = {d.write(shared)}
    d.write(stayer)
    d.extract(leaver)
    d.extract(stayer)
    d.check()
    assert left <= _ids(d.search(EPISODES, stayer)), "control: alpha's pool holds the leaver's episodes"
    assert d.search(ENTITIES, leaver), "control: the leaver gets alpha's entities"
    d.call("remove_session", leaver)
    assert _ids(d.search(EPISODES, leaver)) == left | pooled
    assert d.search(ENTITIES, leaver) == []
    assert left <= _ids(d.search(EPISODES, shared))
    assert not left & _ids(d.search(EPISODES, stayer))
    d.check()
    d.call("remove_session", leaver)
    d.call("remove_session", shared)
    assert d.check()


@pytest.mark.kbconform(id="pool-03", rule="project-pool.md#p7", guide="the-project-pool-profile", level="L2")
def test_entity_tags_are_immutable_across_moves(kbconform_run: Run, kbconform_backend: Any) -> None:
    """P7: entities a session extracted in alpha stay alpha's after it moves to beta; those it
    extracts in beta are beta's; those it extracts after its removal are no one's, even when it
    returns to alpha."""
    d = _driver(kbconform_run, kbconform_backend, "pool-03")
    d.call("create_project", "alpha")
    d.call("create_project", "beta")
    mover, in_alpha, in_beta = (d.session_id() for _ in range(3))
    for session, project in ((mover, "alpha"), (in_alpha, "alpha"), (in_beta, "beta")):
        d.call("start_session", session, project)
    first = set(d.extract(mover, 2))
    d.extract(in_alpha)
    d.extract(in_beta)
    d.call("assign_session", mover, "beta")
    second = set(d.extract(mover))
    assert first <= _ids(d.search(ENTITIES, in_alpha))
    assert not second & _ids(d.search(ENTITIES, in_alpha))
    assert second <= _ids(d.search(ENTITIES, in_beta))
    assert not first & _ids(d.search(ENTITIES, in_beta))
    d.check()
    d.call("remove_session", mover)
    third = set(d.extract(mover))
    assert d.search(ENTITIES, mover) == []
    d.call("assign_session", mover, "alpha")
    seen = _ids(d.search(ENTITIES, mover))
    assert first <= seen
    assert not (second | third) & seen
    assert d.check()
    assert not any(third & _ids(d.search(ENTITIES, s)) for s in d.policy.sessions)


@pytest.mark.kbconform(id="pool-04", rule="project-pool.md#p8", guide="the-project-pool-profile", level="L2")
def test_external_ids_that_look_like_internal_ids_change_nothing(
    kbconform_run: Run, kbconform_backend: Any
) -> None:
    """P8: projects named "2" and "1" (created in that order) and sessions named "3", "1", "2",
    "01", "10", "s-1", "S-1" and "s-1 " beside UUID sessions, each in another pool than the
    session or project whose internal id its name spells, each search exactly its own scope,
    before and after moves."""
    d = _driver(kbconform_run, kbconform_backend, "pool-04")
    for name in ("2", "1", "alpha"):
        d.call("create_project", name)
    u1, u2, u3 = (d.session_id() for _ in range(3))
    layout: tuple[tuple[str, str | None], ...] = (
        (u1, "alpha"),
        (u2, "1"),
        (u3, None),
        ("3", "2"),
        ("1", None),
        ("2", "alpha"),
        ("01", "1"),
        ("10", None),
        ("s-1", "2"),
        ("S-1", "alpha"),
        ("s-1 ", None),
    )
    for session, project in layout:
        d.call("start_session", session, project)
        d.write(session)
        d.write(session)
        d.extract(session)
    assert d.check()
    d.call("assign_session", "1", "2")
    d.call("assign_session", "2", "1")
    d.call("remove_session", "01")
    d.call("assign_session", "10", "alpha")
    assert d.check()


@pytest.mark.kbconform(id="pool-05", rule="project-pool.md#p9", guide="the-project-pool-profile", level="L2")
def test_a_session_started_in_a_project_is_in_it_from_its_first_call(
    kbconform_run: Run, kbconform_backend: Any
) -> None:
    """P9: sessions started in alpha whose very first call is a search of episodes, a search of
    entities, an episode written, or entities extracted: answered from alpha's pool, or stored
    into it (alpha's other session sees them at once, the shared pool never). The first session
    of a new project finds nothing at all: its pool is empty, not the shared pool or everything."""
    d = _driver(kbconform_run, kbconform_backend, "pool-05")
    d.call("create_project", "alpha")
    member, shared = d.session_id(), d.session_id()
    d.call("start_session", member, "alpha")
    d.call("start_session", shared, None)
    alpha = {d.write(member), d.write(member)}
    alpha_entities = set(d.extract(member, 2))
    d.write(shared)
    d.extract(shared)
    d.call("create_project", "beta")
    opening = d.session_id()
    d.call("start_session", opening, "beta")
    assert d.search(EPISODES, opening) == []
    assert d.search(ENTITIES, opening) == []
    first = {name: d.session_id() for name in ("search-episodes", "search-entities", "write", "extract")}
    for session in first.values():
        d.call("start_session", session, "alpha")
    assert _ids(d.search(EPISODES, first["search-episodes"])) == alpha
    assert _ids(d.search(ENTITIES, first["search-entities"])) == alpha_entities
    written = d.write(first["write"])
    assert written in _ids(d.search(EPISODES, member))
    assert written not in _ids(d.search(EPISODES, shared))
    extracted = set(d.extract(first["extract"]))
    assert extracted <= _ids(d.search(ENTITIES, member))
    assert d.check()


@pytest.mark.kbconform(id="pool-06", rule="project-pool.md#p10", guide="the-project-pool-profile", level="L1")
def test_an_unknown_session_is_no_identity_and_unknown_names_are_not_found(
    kbconform_run: Run, kbconform_backend: Any
) -> None:
    """P10: sessions never started (a fresh id, a number some session has as its internal id,
    case and space variants of a started one) raise Unauthenticated on every facade, and are
    not started by it; membership operations naming an unknown session or project raise
    NotFound; nothing changes. The same calls with known names land (control)."""
    d = _driver(kbconform_run, kbconform_backend, "pool-06")
    d.call("create_project", "alpha")
    member, shared = d.session_id(), d.session_id()
    d.call("start_session", member, "alpha")
    d.call("start_session", shared, None)
    d.write(member)
    d.write(shared)
    d.extract(member)
    unknown = (d.session_id(), "2", "1", member.upper(), f" {member}", f"{member} ", member[:8])
    for session in unknown:
        d.refuse("write_episode", session, d.text())
        d.refuse("extract_entities", session, d.entities())
        for facade in POOL_READ_FACADES:
            d.refuse_search(facade, session)
        d.refuse("assign_session", session, "alpha")
        d.refuse("remove_session", session)
    fresh = d.session_id()
    d.refuse("start_session", fresh, "no-such-project")
    d.refuse("write_episode", fresh, d.text())  # the failed start started nothing
    d.refuse("assign_session", member, "no-such-project")
    d.refuse("assign_session", member, "Alpha")
    assert d.check()
    d.call("start_session", fresh, "alpha")  # control: the same calls with known names land
    d.write(fresh)
    d.extract(fresh, 2)
    d.call("assign_session", shared, "alpha")
    d.call("remove_session", member)
    assert d.check()


@pytest.mark.kbconform(id="pool-10", rule="project-pool.md#p14", guide="the-project-pool-profile", level="L0")
def test_malformed_calls_are_refused_as_pool_invalid_and_change_nothing(
    kbconform_run: Run, kbconform_backend: Any
) -> None:
    """The call contract (schemas/project-pool.md, facades): an existing project or session
    created again, empty episode text, malformed entities (a field missing, empty or not a
    string, a batch with one bad entity) and search limits outside 1 to 1000 (0, 1001, -1) raise
    KB_POOL_INVALID; nothing changes. Valid calls land (control). (A limit that is no integer
    cannot cross harness-v1; the reference's own tests refuse those in process.)"""
    d = _driver(kbconform_run, kbconform_backend, "pool-10")
    d.call("create_project", "alpha")
    member, shared = d.session_id(), d.session_id()
    d.call("start_session", member, "alpha")
    d.call("start_session", shared, None)
    d.write(member)
    d.write(shared)
    d.extract(member)
    d.refuse("create_project", "alpha")
    d.refuse("start_session", member, None)
    d.refuse("start_session", shared, "alpha")
    d.refuse("write_episode", member, "")
    valid = d.entities()[0]
    for malformed in (
        [{"name": valid["name"], "type": "concept"}],
        [{**valid, "name": ""}],
        [{**valid, "notes": 7}],
        [valid, {**valid, "type": None}],
        ["not an entity"],
    ):
        d.refuse("extract_entities", member, malformed)
    for facade in POOL_READ_FACADES:
        search = getattr(kbconform_backend, facade.replace("-", "_"))
        for limit in (0, MAX_LIMIT + 1, -1):
            with refuses(ContractViolation, f"{facade} with limit {limit!r}") as raised:
                search(member, "billing", limit)
            assert raised[0].code == POOL_INVALID, f"{facade} with limit {limit!r}: {raised[0]}"
        d.search(facade, member, limit=1)  # control: a valid limit is answered
    assert d.check()
    d.write(member)  # control: valid calls land
    d.extract(member, 2)
    assert d.check()


@pytest.mark.kbconform(id="pool-07", rule="project-pool.md#p3", guide="the-project-pool-profile", level="L1")
def test_a_small_projects_searches_are_exact_and_limited_within_its_scope(
    kbconform_run: Run, kbconform_backend: Any
) -> None:
    """P3, P13: in a project of three episodes and three entities, beside a project and a
    shared pool of thirty each whose texts are nearer the query, a search with any limit
    returns that many hits (or the whole scope), all in scope, and an episode's or entity's own
    text finds it first."""
    d = _driver(kbconform_run, kbconform_backend, "pool-07")
    query = "what was said about the release plan and the deploy keys"
    d.call("create_project", "small")
    d.call("create_project", "big")
    one, two, big, shared = (d.session_id() for _ in range(4))
    for session, project in ((one, "small"), (two, "small"), (big, "big"), (shared, None)):
        d.call("start_session", session, project)
    own = [d.write(one, f"the mountain weather in week {n}") for n in range(2)] + [d.write(two, "lunch")]
    # three texts that differ in more than their unique tokens: under a hashing embedding two
    # tokens may land alike, and two entities would then be one point that no search tells apart
    huts = ("the mountain hut", "the river cabin", "the forest lodge")
    named = [d.extract(one, 1, what)[0] for what in huts]
    for session in (big, shared):
        for _ in range(30):
            d.write(session, query)
        d.extract(session, 30, query)
    scopes = {EPISODES: len(own), ENTITIES: len(named)}
    for facade, size in scopes.items():
        for limit in sorted({1, 2, size, size + 1, MAX_LIMIT}):
            d.search(facade, one, query, limit)
            d.search(facade, two, query, limit)
    for episode in own:
        assert [hit.id for hit in d.search(EPISODES, one, d.policy.stored[episode], 1)] == [episode]
    for entity in named:
        assert [hit.id for hit in d.search(ENTITIES, two, d.policy.stored[entity], 1)] == [entity]
    assert d.check()


@dataclass(frozen=True, slots=True)
class Step:
    """One step of a program: ``op`` on the session and project the indices pick (modulo)."""

    op: str
    session: int
    project: int = 0
    n: int = 1


STEPS = st.builds(
    Step,
    op=st.sampled_from(["assign", "remove", "write", "extract", "start"]),
    session=st.integers(0, 20),
    project=st.integers(0, 5),
    n=st.integers(1, 3),
)


@st.composite
def _names(draw: st.DrawFn) -> tuple[list[str], list[str], list[int]]:
    """Project names, session names, and the project (or none: -1) each session starts in. The
    first two of each are a pair that collides under a common mistake (sessions: both started)."""
    projects = draw(with_twins(PROJECT_FAMILIES, 2, 3))
    sessions = draw(with_twins(SESSION_FAMILIES, 4, 8))
    places = draw(
        st.lists(st.integers(-1, len(projects) - 1), min_size=len(sessions), max_size=len(sessions))
    )
    return projects, sessions, places


@pytest.mark.kbconform(
    id="pool-08", rule="project-pool.md#scope-the-rules", guide="the-project-pool-profile", level="L3"
)
def test_random_programs_of_moves_and_writes_leave_every_search_as_the_model_says(
    kbconform_run: Run, kbconform_open: Any
) -> None:
    """P1-P7, P13, P15, P16, P18: after a random program of sessions started, added to and removed
    from projects, episodes written and entities extracted, over ids that collide under common
    mistakes and names at the stores' boundaries (long look-alikes, quotes, ``_`` and ``%``), with
    one text and one entity name written under two scopes, every search of every session equals
    the model. Each program ends with a session
    alone in a project no one has written in, and a session in a project and one in none
    writing, so scopes that are empty beside stored episodes and scopes that are neither empty
    nor everything are compared (the guard below is the control)."""
    informative = [0]

    @kbconform_run.given(names=_names(), program=st.lists(STEPS, min_size=1, max_size=25))
    def check(names: tuple[list[str], list[str], list[int]], program: list[Step]) -> None:
        projects, sessions, places = names
        backend = kbconform_open()
        try:
            d = _driver(kbconform_run, backend, "pool-08")
            for project in projects:
                d.call("create_project", project)
            started = sessions[: max(2, len(sessions) // 2)]
            for session, place in zip(started, places, strict=False):
                d.call("start_session", session, None if place < 0 else projects[place])
            waiting = sessions[len(started) :]
            # Names at the stores' boundaries (P15), and one entity batch, two entities of one
            # name, extracted in two of their projects (two memories are two memories).
            said = d.entities(1)
            for project, session in zip(EDGE_PROJECTS, EDGE_SESSIONS, strict=True):
                d.call("create_project", project)
                d.call("start_session", session, project)
                d.write(session)
            for session in EDGE_SESSIONS[:2]:
                d.call("extract_entities", session, [said[0], dict(said[0])])
            for step in program:
                session = started[step.session % len(started)]
                if step.op == "assign":
                    d.call("assign_session", session, projects[step.project % len(projects)])
                elif step.op == "remove":
                    d.call("remove_session", session)
                elif step.op == "write":
                    d.write(session)
                elif step.op == "extract":
                    d.extract(session, step.n)
                elif waiting:
                    placed = None if step.project >= len(projects) else projects[step.project]
                    d.call("start_session", waiting[0], placed)
                    started.append(waiting.pop(0))
            # Then a session alone in a project no one has written in: its searches find
            # nothing, whatever the program wrote elsewhere (P3; an unguarded filter over the
            # project's writers reads every episode here, which a draw may never reach).
            fresh = next(f"fresh-{n}" for n in range(len(projects) + 1) if f"fresh-{n}" not in projects)
            d.call("create_project", fresh)
            d.call("start_session", d.session_id(), fresh)
            # The program ends with one session in a project and one in none, each writing: the
            # last comparison always has a scope that is neither empty nor everything.
            d.call("assign_session", started[0], projects[0])
            d.call("remove_session", started[1])
            d.write(started[0])
            d.write(started[1])
            # One text said in both: two episodes, each in its own session's pool.
            text = d.text()
            d.call("write_episode", started[0], text)
            d.call("write_episode", started[1], text)
            informative[0] += d.check()
        finally:
            kbconform_run.close(backend)

    check()
    assert informative[0] > 0, "no example compared a scope that is neither empty nor everything"


#: Callers that are no identity: None, values that are not strings, strings that are no session.
NO_IDENTITY: tuple[object, ...] = (None, 0, 1, "", "never started", "A ", "001", ["1"])
#: A caller: a session (an index into those started), or no identity (a negative index into
#: NO_IDENTITY).
CALLERS = st.integers(0, 30) | st.integers(1, len(NO_IDENTITY)).map(lambda n: -n)
#: A session named in a membership operation: a started one (two picks in three), or a name of
#: SESSION_NAMES, which may be started or not.
NAMED = st.integers(0, 3 * len(SESSION_NAMES) - 1)
#: A project: an existing one (one pick in two), or a name of PROJECT_NAMES, existing or not.
PROJECTS = st.integers(0, 2 * len(PROJECT_NAMES) - 1)
FAULTS = st.none() | st.integers(0, 2)


class PoolMachine(DriverMachine[PoolDriver]):
    """Membership changes interleaved with writes, extractions and searches of many sessions,
    every search of every session compared with the model after every step
    (:class:`DriverMachine` holds the invariant and binds the machine to a run)."""

    @initialize(
        names=_names(),
        written=st.lists(st.tuples(st.integers(0, 2), st.integers(0, 2)), min_size=8, max_size=8),
        seed=st.integers(0, 2**32 - 1),
    )
    def open_backend(
        self, names: tuple[list[str], list[str], list[int]], written: list[tuple[int, int]], seed: int
    ) -> None:
        """A backend with a few projects and sessions; each session has written a few episodes
        and extracted a few entities, or none (a project whose sessions wrote nothing exists);
        then each caller that is no identity is refused a write and an extraction."""
        projects, sessions, places = names
        self.driver = d = PoolDriver(self.fresh_backend(), random.Random(seed))
        for project in projects:
            d.call("create_project", project)
        for session, place, (episodes, extracted) in zip(sessions, places, written, strict=False):
            d.call("start_session", session, None if place < 0 else projects[place])
            for _ in range(episodes):
                d.write(session)
            if extracted:
                d.extract(session, extracted)
        # every program starts with a write and an extraction by each caller that is no identity
        # refused (P10): a backend that starts a session it never saw on its first write, or
        # stores the write of a session id that only looks like a started one, shows at once
        for caller in NO_IDENTITY:
            d.refuse("write_episode", caller, d.text())
            d.refuse("extract_entities", caller, d.entities(1))

    def _session(self, pick: int) -> str:
        sessions = list(self.d.policy.sessions)
        return sessions[pick % len(sessions)]

    def _caller(self, pick: int) -> object:
        return self._session(pick) if pick >= 0 else NO_IDENTITY[-pick - 1]

    def _known(self, caller: object) -> bool:
        return isinstance(caller, str) and caller in self.d.policy.sessions

    # -- membership ------------------------------------------------------------------------------

    @rule(project=st.sampled_from(PROJECT_NAMES))
    def create_project(self, project: str) -> None:
        """A new project, or KB_POOL_INVALID for a name that exists."""
        self.d.attempt("create_project", project)

    @rule(session=st.none() | st.sampled_from(SESSION_NAMES), project=st.none() | PROJECTS)
    def start_session(self, session: str | None, project: int | None) -> None:
        """A new session (None: a fresh UUID) in a project, in none, or in an unknown one
        (NotFound), or KB_POOL_INVALID for one that exists (never in an unknown project too:
        two faults at once)."""
        name = self.d.session_id() if session is None else session
        placed = None if project is None else self._project(project)
        if name in self.d.policy.sessions and placed not in self.d.policy.projects:
            placed = None
        self.d.attempt("start_session", name, placed)

    @rule(session=NAMED, project=PROJECTS)
    def assign_session(self, session: int, project: int) -> None:
        """A session (or a name that may be none: NotFound) into a project (or a name that may be
        none: NotFound)."""
        self.d.attempt("assign_session", self._named(session), self._project(project))

    @rule(session=st.integers(0, 30), project=st.none() | st.integers(0, 5))
    def move(self, session: int, project: int | None) -> None:
        """A started session into an existing project, or out of its project (None)."""
        if project is None:
            self.d.call("remove_session", self._session(session))
        else:
            self.d.call("assign_session", self._session(session), self._project(project))

    @rule(session=NAMED)
    def remove_session(self, session: int) -> None:
        """A session (or a name that may be none: NotFound) out of its project."""
        self.d.attempt("remove_session", self._named(session))

    def _named(self, pick: int) -> str:
        known = 2 * len(SESSION_NAMES)
        return self._session(pick) if pick < known else SESSION_NAMES[pick - known]

    def _project(self, pick: int) -> str:
        projects = sorted(self.d.policy.projects)
        return (
            projects[pick % len(projects)]
            if pick < len(PROJECT_NAMES)
            else PROJECT_NAMES[pick % len(PROJECT_NAMES)]
        )

    # -- writes ----------------------------------------------------------------------------------

    @rule(caller=CALLERS, empty=st.booleans(), fault=FAULTS)
    def write_episode(self, caller: int, empty: bool, fault: int | None) -> None:
        """An episode of a session or of no identity (Unauthenticated); empty text of a session
        (KB_POOL_INVALID); with the store failing from some store call on."""
        session = self._caller(caller)
        text = "" if empty and self._known(session) else self.d.text()
        allowed = self.d.policy.write_episode(session, text) is None
        with self._armed(fault) as armed:
            outcome = self.d.attempt("write_episode", session, text, may_fail=armed)
        self._failed_if_first(outcome, armed and fault == 0 and allowed)

    @rule(caller=CALLERS, n=st.integers(1, 3), malformed=st.booleans(), fault=FAULTS)
    def extract_entities(self, caller: int, n: int, malformed: bool, fault: int | None) -> None:
        """Entities of a session (tagged with its project now) or of no identity; a batch with a
        malformed entity (KB_POOL_INVALID) stores nothing."""
        session = self._caller(caller)
        batch: list[Any] = self.d.entities(n)
        if malformed and self._known(session):
            batch[-1] = {**batch[-1], "type": ""}
        allowed = self.d.policy.extract_entities(session, batch) is None
        with self._armed(fault) as armed:
            outcome = self.d.attempt("extract_entities", session, batch, may_fail=armed)
        self._failed_if_first(outcome, armed and fault == 0 and allowed)

    @staticmethod
    def _failed_if_first(outcome: object, must: bool) -> None:
        """A write the model allows whose first store call failed must have failed."""
        if must:
            assert isinstance(outcome, BackendUnavailable), (
                f"a write whose every store call failed returned {outcome!r}"
            )

    # -- searches --------------------------------------------------------------------------------

    @rule(caller=CALLERS, facade=st.sampled_from(POOL_READ_FACADES), limit=st.integers(1, 4), fault=FAULTS)
    def search(self, caller: int, facade: str, limit: int, fault: int | None) -> None:
        """A search with a small limit: that many hits of the scope (P13); no identity:
        Unauthenticated; with the store failing, BackendUnavailable, never a result, unless the
        scope needs no store call (a session in no project asking for entities)."""
        session = self._caller(caller)
        with self._armed(fault) as armed:
            outcome = self.d.attempt_search(facade, session, limit=limit, may_fail=armed)
        known = self._known(session)
        storeless = facade == ENTITIES and known and self.d.policy.project_of(str(session)) is None
        if armed and fault == 0 and known and not storeless:
            assert isinstance(outcome, BackendUnavailable), (
                f"{facade} as {session!r} with every store call failing returned {outcome!r}"
            )


@pytest.mark.kbconform(
    id="pool-09", rule="project-pool.md#scope-the-rules", guide="the-project-pool-profile", level="L4"
)
def test_interleaved_membership_changes_writes_and_searches_match_the_model(kbconform_run: Run) -> None:
    """P1-P16: every step of every program (projects and sessions created, sessions added and
    removed, episodes written and entities extracted by sessions and by no identity, malformed
    calls, searches with small limits, store faults from any store call of a call) and, after
    each, every search of every session equals the policy model; the model compared scopes that
    are neither empty nor everything (control)."""
    machine = PoolMachine.bound(kbconform_run, "ProjectPool")
    kbconform_run.run_machine(machine)
    assert machine.compared[0] > 0, "no step compared a scope that is neither empty nor everything"


@pytest.mark.kbconform(id="pool-11", rule="project-pool.md#p13", guide="the-project-pool-profile", level="L2")
def test_a_project_with_more_sessions_than_a_page_searches_exactly_its_pool(
    kbconform_run: Run, kbconform_open: Any
) -> None:
    """P13 across the backend's pages (schemas/pages.md): for each size, a fresh backend where
    project alpha holds that many sessions, each with an episode; beta's two sessions and two
    sessions in no project write episodes too. alpha's first and last sessions search exactly
    alpha's episodes (a membership read a page at a time must read every page, each within
    alpha), beta's and the shared pool's sessions exactly theirs."""
    for size in kbconform_run.page_sizes():
        backend = kbconform_open()
        d = _driver(kbconform_run, backend, f"pool-11 {size}")
        d.call("create_project", "alpha")
        d.call("create_project", "beta")
        alpha = [d.session_id() for _ in range(size)]
        for session in alpha:
            d.call("start_session", session, "alpha")
            d.write(session)
        others = [(d.session_id(), project) for project in ("beta", "beta", None, None)]
        for session, project in others:
            d.call("start_session", session, project)
            d.write(session)
        limit = min(MAX_LIMIT, len(d.policy.stored) + 1)
        for session in (alpha[0], alpha[-1], others[0][0], others[2][0]):
            hits = d.search(EPISODES, session, limit=limit)
            assert hits, f"{session} found none of its pool's episodes"
        kbconform_run.close(backend)


#: The most store calls of one write or membership change pool-12 fails it at (every one, when
#: it makes no more; else the first ones and some spread to the last): a pool call is small.
POOL_ATTEMPTS = 12


def _atomic_world(d: PoolDriver) -> dict[str, str]:
    """Projects alpha and beta; session a in alpha, b in beta, c in none, each with an episode,
    a and b with an entity each."""
    d.call("create_project", "alpha")
    d.call("create_project", "beta")
    sessions = {"a": d.session_id(), "b": d.session_id(), "c": d.session_id()}
    for name, project in (("a", "alpha"), ("b", "beta"), ("c", None)):
        d.call("start_session", sessions[name], project)
        d.write(sessions[name])
    d.extract(sessions["a"])
    d.extract(sessions["b"])
    return sessions


#: The calls of :data:`CHANGES` that must make a store call: an episode or an entity lives in
#: the store, membership may live in the process.
WRITES = ("write_episode", "extract_entities")
#: Each write and membership change pool-12 faults, as a call on :func:`_atomic_world`.
CHANGES: dict[str, Any] = {
    "create_project": lambda d, s: ("create_project", "gamma"),
    "start_session": lambda d, s: ("start_session", d.session_id(), "alpha"),
    "assign_session (a move)": lambda d, s: ("assign_session", s["a"], "beta"),
    "assign_session (from no project)": lambda d, s: ("assign_session", s["c"], "alpha"),
    "remove_session": lambda d, s: ("remove_session", s["a"]),
    "write_episode": lambda d, s: ("write_episode", s["a"], d.text()),
    "extract_entities": lambda d, s: ("extract_entities", s["b"], d.entities(3)),
}


def _opened(run: Run, open_backend: Any, label: str, fault: Fault) -> tuple[PoolDriver, str, tuple[Any, ...]]:
    """A fresh backend whose store fails as ``fault`` says, seeded with :func:`_atomic_world`
    (the same for every attempt of ``label``), and the call of :data:`CHANGES` to make on it."""
    d = PoolDriver(open_backend(BackendOptions(store_fails=fault.switch)), run.rng(f"pool-12 {label}"))
    operation, *args = CHANGES[label](d, _atomic_world(d))
    return d, operation, tuple(args)


def _after(d: PoolDriver, operation: str, args: tuple[Any, ...]) -> None:
    """Every search of every session equals the model, and of a session the call would have
    started (one it left half started is found)."""
    d.check()
    if operation == "start_session":
        for facade in POOL_READ_FACADES:
            d.attempt_search(facade, args[0])


@pytest.mark.kbconform(
    id="pool-12",
    rule="project-pool.md#p17",
    guide="the-project-pool-profile",
    level="L3",
    requires="fault-injection",
)
def test_a_write_or_membership_change_whose_store_fails_changes_nothing(
    kbconform_run: Run, kbconform_open: Any
) -> None:
    """P17: each write and membership change (a project created, a session started, moved,
    added, removed, an episode written, three entities extracted) made once unfaulted, counting
    its store calls, then on a fresh backend for each of those calls with the store failing
    there, from that call on (lasting) or at it only (transient): the call raises
    BackendUnavailable and changes nothing, or lands whole (a failing call it could do
    without); afterwards every search of every session, and of a session the call would have
    started, equals the model, and the same call with the store back lands. A call whose first
    store call fails for good fails. The kit never assumes how many store calls a call makes:
    its last one (a commit) fails too, and a membership change that makes none (membership kept
    in the process) has nothing to fault. Control: some faulted call failed."""
    failed = 0
    for label in CHANGES:
        failed += every_fault(
            label,
            partial(_opened, kbconform_run, kbconform_open, label),
            kbconform_run.close,
            attempts=POOL_ATTEMPTS,
            must_call=label in WRITES,
            after=_after,
        )
    assert failed, "control: no faulted call failed"
