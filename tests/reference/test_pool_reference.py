"""The project-pool reference (Qdrant local mode, membership in SQLite), rule by rule.

Each test names the rule of ``schemas/project-pool.md`` it checks, with a positive and a
negative control on the same path. The suites hold the reference to the contract through the
adapter; these tests pin the reference's own mechanics: internal ids in payloads and filters,
the switch consulted before every store call, and the empty ``should`` that is never sent.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from kbconform.adapter import MAX_LIMIT, BackendOptions, FaultPlan, FaultSwitch
from kbconform.adapter._manifest import Manifest, check_backend
from kbconform.errors import (
    BackendUnavailable,
    ContractViolation,
    NotFound,
    Unauthenticated,
)
from kbconform.profiles.project_pool.protocol import POOL_INVALID, ProjectPoolBackend
from kbconform_reference.pool import PoolHit, ProjectPool
from kbconform_reference.pool.adapter import qdrant_local
from kbconform_reference.pool.qdrant import ENTITIES, EPISODES, any_of, unchecked_any_of

SEARCHES = ("search_episodes", "search_entities")


@pytest.fixture
def pool() -> Iterator[ProjectPool]:
    backend = ProjectPool()
    yield backend
    backend.close()


def entity(name: str, kind: str = "topic", notes: str = "noted") -> dict[str, str]:
    return {"name": name, "type": kind, "notes": notes}


def texts(hits: list[PoolHit]) -> set[str]:
    return {hit.text for hit in hits}


def episodes(pool: ProjectPool, session: str) -> set[str]:
    """The texts of every episode ``session`` searches (limit far above the scope)."""
    return texts(pool.search_episodes(session, "memory", MAX_LIMIT))


def entities(pool: ProjectPool, session: str) -> set[str]:
    return texts(pool.search_entities(session, "memory", MAX_LIMIT))


def payloads(pool: ProjectPool, collection: str) -> list[dict[str, Any]]:
    points, _ = pool.vectors.client.scroll(collection, limit=10_000, with_payload=True)
    return [dict(point.payload or {}) for point in points]


@pytest.fixture
def world(pool: ProjectPool) -> ProjectPool:
    """Two projects (alpha with a1, a2; beta with b1) and two sessions in no project (s1, s2),
    each with one episode; alpha and beta with one entity each, s1 with one tagged none."""
    pool.create_project("alpha")
    pool.create_project("beta")
    members: list[tuple[str, str | None]] = [
        ("a1", "alpha"),
        ("a2", "alpha"),
        ("b1", "beta"),
        ("s1", None),
        ("s2", None),
    ]
    for session, project in members:
        pool.start_session(session, project)
        pool.write_episode(session, f"memory of {session}")
    pool.extract_entities("a1", [entity("alpha thing")])
    pool.extract_entities("b1", [entity("beta thing")])
    pool.extract_entities("s1", [entity("shared thing")])
    return pool


# -- scope: P1 to P4 ------------------------------------------------------------------------------


def test_a_session_in_no_project_searches_the_shared_pool_its_own_included(world: ProjectPool) -> None:
    """P1: s1 and s2 read each other's episodes and their own; no project's."""
    assert episodes(world, "s1") == episodes(world, "s2") == {"memory of s1", "memory of s2"}


def test_a_session_in_no_project_gets_no_entity_context(world: ProjectPool) -> None:
    """P2: nothing, though entities tagged none and tagged with projects are stored (control)."""
    assert entities(world, "s1") == entities(world, "s2") == set()
    assert len(payloads(world, ENTITIES)) == 3


def test_a_project_session_searches_its_projects_episodes_and_entities(world: ProjectPool) -> None:
    """P3: every session now in alpha, and the entities tagged alpha."""
    assert episodes(world, "a1") == episodes(world, "a2") == {"memory of a1", "memory of a2"}
    assert entities(world, "a2") == {"alpha thing"}
    assert entities(world, "b1") == {"beta thing"}


def test_projects_and_the_shared_pool_are_isolated_both_ways(world: ProjectPool) -> None:
    """P4: beta sees only beta, alpha only alpha, the shared pool no project."""
    assert episodes(world, "b1") == {"memory of b1"}
    assert not {"memory of b1", "memory of s1"} & episodes(world, "a1")
    assert not {"memory of a1", "memory of b1"} & episodes(world, "s1")


# -- moves: P5 to P7 ------------------------------------------------------------------------------


def test_assigning_a_session_brings_its_history_into_the_project_on_its_next_call(world: ProjectPool) -> None:
    """P5: s1's episode leaves the shared pool and joins alpha; s1 searches alpha at once."""
    world.assign_session("s1", "alpha")
    assert episodes(world, "s1") == episodes(world, "a1") == {"memory of a1", "memory of a2", "memory of s1"}
    assert episodes(world, "s2") == {"memory of s2"}
    assert entities(world, "s1") == {"alpha thing"}


def test_moving_a_session_between_projects_takes_its_history_out_of_the_former_one(
    world: ProjectPool,
) -> None:
    """P5: a2 moves to beta; alpha keeps a1 only, beta gains a2's episode."""
    world.assign_session("a2", "beta")
    assert episodes(world, "a1") == {"memory of a1"}
    assert episodes(world, "b1") == episodes(world, "a2") == {"memory of a2", "memory of b1"}


def test_assigning_a_session_to_its_own_project_changes_nothing(world: ProjectPool) -> None:
    """P5: a no-op move keeps one membership (control: the scope is as before)."""
    world.assign_session("a1", "alpha")
    assert episodes(world, "a1") == {"memory of a1", "memory of a2"}


def test_removing_a_session_returns_it_and_its_history_to_the_shared_pool_at_once(
    world: ProjectPool,
) -> None:
    """P6: a2 and its episode are back in the shared pool; alpha no longer sees them."""
    world.remove_session("a2")
    assert episodes(world, "a1") == {"memory of a1"}
    assert episodes(world, "a2") == episodes(world, "s1") == {"memory of a2", "memory of s1", "memory of s2"}
    assert entities(world, "a2") == set()


def test_removing_a_session_in_no_project_leaves_it_there(world: ProjectPool) -> None:
    """P6: s1 stays in the shared pool."""
    world.remove_session("s1")
    assert episodes(world, "s1") == {"memory of s1", "memory of s2"}


def test_entity_tags_never_change_when_a_session_moves(world: ProjectPool) -> None:
    """P7: a1's entity stays alpha's after a1 moves to beta; entities extracted after the move
    are beta's, and after a removal no one's."""
    world.assign_session("a1", "beta")
    world.extract_entities("a1", [entity("moved thing")])
    assert entities(world, "a2") == {"alpha thing"}
    assert entities(world, "b1") == {"beta thing", "moved thing"}
    world.remove_session("a1")
    world.extract_entities("a1", [entity("orphan thing")])
    seen = set().union(*(entities(world, s) for s in ("a1", "a2", "b1", "s1", "s2")))
    assert "orphan thing" not in seen
    assert {"alpha thing", "beta thing", "moved thing"} <= seen


# -- identity: P8 to P11 --------------------------------------------------------------------------


def test_payloads_and_filters_hold_internal_integer_ids_only(
    pool: ProjectPool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """P8: sessionId and projectId are the membership database's integers, counted from 0."""
    sent: list[Any] = []
    query = pool.vectors.client.query_points

    def spy(*args: Any, **kwargs: Any) -> Any:
        sent.append(kwargs.get("query_filter"))
        return query(*args, **kwargs)

    monkeypatch.setattr(pool.vectors.client, "query_points", spy)
    pool.create_project("zero")
    pool.start_session("7f3c2a4e-uuid", "zero")
    pool.write_episode("7f3c2a4e-uuid", "memory")
    pool.extract_entities("7f3c2a4e-uuid", [entity("thing")])
    assert [p["sessionId"] for p in payloads(pool, EPISODES)] == [0]
    assert [p["projectId"] for p in payloads(pool, ENTITIES)] == [0]
    pool.search_episodes("7f3c2a4e-uuid", "memory", 5)
    pool.search_entities("7f3c2a4e-uuid", "memory", 5)
    conditions = [c for where in sent for c in (where.should or []) + (where.must or [])]
    values = [v for c in conditions for v in getattr(c.match, "any", None) or [c.match.value]]
    assert values == [0, 0]
    assert all(type(v) is int for v in values)


def test_external_ids_that_look_like_internal_ids_change_nothing(pool: ProjectPool) -> None:
    """P8: sessions named "1" and "0" (the internal ids of others) read their own pools."""
    pool.create_project("p")
    for session, project in (("x", "p"), ("y", None), ("1", None), ("0", "p")):
        pool.start_session(session, project)
        pool.write_episode(session, f"memory of {session}")
    assert episodes(pool, "1") == {"memory of y", "memory of 1"}
    assert episodes(pool, "0") == {"memory of x", "memory of 0"}
    with pytest.raises(Unauthenticated):
        pool.search_episodes("2", "memory", 5)  # internal id 2 exists ("1"), external "2" does not


def test_a_session_started_in_a_project_is_in_it_from_its_first_call(world: ProjectPool) -> None:
    """P9: a fresh session's first call (a search) already reads alpha only; its first
    extraction is tagged alpha; its first episode is alpha's."""
    world.start_session("fresh", "alpha")
    assert episodes(world, "fresh") == {"memory of a1", "memory of a2"}
    world.start_session("fresh-2", "alpha")
    world.extract_entities("fresh-2", [entity("first thing")])
    world.write_episode("fresh-2", "memory of fresh-2")
    assert entities(world, "a1") == {"alpha thing", "first thing"}
    assert "memory of fresh-2" in episodes(world, "a1")
    assert "memory of fresh-2" not in episodes(world, "s1")


def test_a_fresh_project_searches_nothing_never_everything(pool: ProjectPool) -> None:
    """P9 and the empty-should trap: a session alone in a new project, before it writes, finds
    nothing, though the store holds the shared pool's episodes (control)."""
    pool.start_session("s", None)
    pool.write_episode("s", "memory of s")
    pool.create_project("new")
    pool.start_session("n", "new")
    assert pool.search_episodes("n", "memory", 10) == []
    assert pool.search_entities("n", "memory", 10) == []
    assert episodes(pool, "s") == {"memory of s"}


@pytest.mark.parametrize(
    ("facade", "args"),
    [
        ("write_episode", ("memory",)),
        ("extract_entities", ([entity("thing")],)),
        ("search_episodes", ("memory", 5)),
        ("search_entities", ("memory", 5)),
    ],
)
def test_an_unknown_session_is_no_identity_and_changes_nothing(
    world: ProjectPool, facade: str, args: tuple[Any, ...]
) -> None:
    """P10: never a new session, never a search without a filter (control: a known one works)."""
    before = (payloads(world, EPISODES), payloads(world, ENTITIES), world.membership.shared_sessions())
    with pytest.raises(Unauthenticated):
        getattr(world, facade)("stranger", *args)
    assert (
        payloads(world, EPISODES),
        payloads(world, ENTITIES),
        world.membership.shared_sessions(),
    ) == before
    getattr(world, facade)("s1", *args)
    world.start_session("stranger", None)  # still never started


def test_membership_operations_naming_unknown_sessions_or_projects_raise_not_found(
    world: ProjectPool,
) -> None:
    """P10: NotFound (a name that is not a non-empty string names nothing), and the membership
    is as before."""
    calls: list[Callable[[], None]] = [
        lambda: world.assign_session("stranger", "alpha"),
        lambda: world.assign_session("s1", "nowhere"),
        lambda: world.remove_session("stranger"),
        lambda: world.start_session("newcomer", "nowhere"),
        lambda: world.start_session("newcomer", 3),
        lambda: world.assign_session("s1", None),
        lambda: world.assign_session(None, "alpha"),
        lambda: world.remove_session(""),
    ]
    for call in calls:
        with pytest.raises(NotFound):
            call()
    assert world.membership.shared_sessions() == [3, 4]
    assert world.membership.session("newcomer") is None
    assert episodes(world, "s1") == {"memory of s1", "memory of s2"}


@pytest.mark.parametrize("facade", ["write_episode", "extract_entities", *SEARCHES])
@pytest.mark.parametrize("caller", [None, 0, b"s1", "", ["s1"]], ids=repr)
def test_no_identity_is_refused_on_every_facade(world: ProjectPool, facade: str, caller: Any) -> None:
    """P11: None, not a str, empty: Unauthenticated."""
    args: dict[str, tuple[Any, ...]] = {
        "write_episode": ("memory",),
        "extract_entities": ([entity("thing")],),
        "search_episodes": ("memory", 5),
        "search_entities": ("memory", 5),
    }
    with pytest.raises(Unauthenticated):
        getattr(world, facade)(caller, *args[facade])


# -- faults: P12 ----------------------------------------------------------------------------------


def test_the_switch_is_consulted_before_every_store_call() -> None:
    """A search consults it twice for membership and once for Qdrant; an entity search in no
    project once (membership), and makes no Qdrant call."""
    switch = FaultSwitch()
    pool = ProjectPool(store_fails=switch)
    try:
        pool.create_project("p")
        pool.start_session("a", "p")
        pool.start_session("s", None)
        assert switch.set(None) == 3
        pool.write_episode("a", "memory")
        assert switch.set(None) == 2
        pool.search_episodes("a", "memory", 5)
        assert switch.set(None) == 3
        pool.search_entities("a", "memory", 5)
        assert switch.set(None) == 2
        pool.search_entities("s", "memory", 5)
        assert switch.set(None) == 1
    finally:
        pool.close()


@pytest.mark.parametrize("facade", SEARCHES)
@pytest.mark.parametrize("session", ["a", "s"], ids=["in a project", "in no project"])
def test_a_store_failure_fails_every_search_closed(facade: str, session: str) -> None:
    """P12: BackendUnavailable at whichever of its store calls the fault opens, never [] (control:
    the same search answers while the switch is off)."""
    switch = FaultSwitch()
    pool = ProjectPool(store_fails=switch)
    try:
        pool.create_project("p")
        pool.start_session("a", "p")
        pool.start_session("s", None)
        pool.write_episode(session, "memory")
        pool.extract_entities(session, [entity("thing")])
        switch.set(None)
        assert getattr(pool, facade)(session, "memory", 5) or (facade, session) == ("search_entities", "s")
        consulted = switch.set(None)
        assert consulted >= 1
        for passing in range(consulted):
            switch.set(FaultPlan(passing))
            with pytest.raises(BackendUnavailable):
                getattr(pool, facade)(session, "memory", 5)
    finally:
        pool.close()


@pytest.mark.parametrize("passing", [0, 1])
def test_a_failed_write_changes_nothing(passing: int) -> None:
    """A write that raises BackendUnavailable stored nothing, wherever the fault opens."""
    switch = FaultSwitch()
    pool = ProjectPool(store_fails=switch)
    try:
        pool.create_project("p")
        pool.start_session("a", "p")
        switch.set(FaultPlan(passing))
        with pytest.raises(BackendUnavailable):
            pool.write_episode("a", "memory")
        with pytest.raises(BackendUnavailable):
            pool.extract_entities("a", [entity("one"), entity("two")])
        memberships: list[Callable[[], None]] = [
            lambda: pool.create_project("q"),
            lambda: pool.start_session("b", "p"),
            lambda: pool.remove_session("a"),
        ]
        for membership in memberships:
            switch.set(FaultPlan(0))
            with pytest.raises(BackendUnavailable):
                membership()
        switch.set(None)
        assert payloads(pool, EPISODES) == payloads(pool, ENTITIES) == []
        assert pool.membership.project("q") is None
        assert pool.membership.session("b") is None
        assert pool.membership.project_sessions(0) == [0]
    finally:
        pool.close()


# -- results: P13 ---------------------------------------------------------------------------------


def test_a_search_returns_exactly_the_scope_or_limit_hits_of_it_nearest_first(pool: ProjectPool) -> None:
    """P13: limit at or above the scope's size gives the scope; below, limit hits in scope, the
    nearest first (control: the other project's closer episode never appears)."""
    pool.create_project("p")
    pool.create_project("q")
    pool.start_session("a", "p")
    pool.start_session("b", "p")
    pool.start_session("other", "q")
    written = {pool.write_episode("a" if n % 2 else "b", f"note {n} about apples") for n in range(12)}
    pool.write_episode("other", "apples apples apples")
    assert {hit.id for hit in pool.search_episodes("a", "apples", 12)} == written
    assert {hit.id for hit in pool.search_episodes("a", "apples", MAX_LIMIT)} == written
    top = pool.search_episodes("a", "apples note 3", 3)
    assert len(top) == 3
    assert {hit.id for hit in top} <= written
    assert top[0].text == "note 3 about apples"
    scores = [hit.score or 0.0 for hit in top]
    assert scores == sorted(scores, reverse=True)


# -- malformed calls ------------------------------------------------------------------------------


def _refused(call: Any) -> ContractViolation:
    with pytest.raises(ContractViolation) as refused:
        call()
    assert refused.value.code == POOL_INVALID
    return refused.value


def test_duplicates_and_malformed_membership_calls_are_pool_invalid(world: ProjectPool) -> None:
    """An existing project or session, or a name that is not a non-empty string; nothing changes."""
    _refused(lambda: world.create_project("alpha"))
    _refused(lambda: world.create_project(""))
    _refused(lambda: world.start_session("a1", None))
    _refused(lambda: world.start_session("a1", "beta"))
    _refused(lambda: world.start_session("", None))
    assert world.membership.session("x") is None
    assert episodes(world, "a1") == {"memory of a1", "memory of a2"}
    assert world.membership.project("alpha") == 0


@pytest.mark.parametrize("limit", [0, -1, MAX_LIMIT + 1, True, 2.0, "3", None])
@pytest.mark.parametrize("facade", SEARCHES)
def test_a_limit_that_is_not_an_integer_from_1_to_1000_is_pool_invalid(
    world: ProjectPool, facade: str, limit: Any
) -> None:
    """bool is not an int here; the control: 1 and 1000 answer."""
    _refused(lambda: getattr(world, facade)("a1", "memory", limit))
    getattr(world, facade)("a1", "memory", 1)
    getattr(world, facade)("a1", "memory", MAX_LIMIT)


@pytest.mark.parametrize(
    "bad",
    [
        {"name": "x", "type": "t"},
        {"name": "", "type": "t", "notes": "n"},
        {"name": "x", "type": "t", "notes": 3},
        "name",
    ],
    ids=repr,
)
def test_a_malformed_entity_stores_nothing_of_its_batch(world: ProjectPool, bad: Any) -> None:
    """KB_POOL_INVALID before any store call: the good entity beside it is not stored either."""
    before = payloads(world, ENTITIES)
    _refused(lambda: world.extract_entities("a1", [entity("good"), bad]))
    _refused(lambda: world.write_episode("a1", ""))
    assert payloads(world, ENTITIES) == before
    assert "good" not in entities(world, "a1")


def test_an_entity_claiming_a_project_is_stored_with_the_callers_project_only(world: ProjectPool) -> None:
    """Keys beside name, type and notes are dropped: a claimed projectId is never stored."""
    world.extract_entities("s1", [{**entity("claimed"), "projectId": 0}])
    assert "claimed" not in entities(world, "a1")
    assert {"name", "type", "notes", "projectId"} == set(payloads(world, ENTITIES)[-1])
    assert [p["projectId"] for p in payloads(world, ENTITIES) if p["name"] == "claimed"] == [None]


def test_ids_are_unique_non_empty_strings_in_call_order(pool: ProjectPool) -> None:
    pool.start_session("s", None)
    episode = pool.write_episode("s", "memory")
    ids = pool.extract_entities("s", [entity("one"), entity("two")])
    assert len({episode, *ids}) == 3
    assert all(isinstance(i, str) and i for i in (episode, *ids))
    assert pool.extract_entities("s", []) == []


# -- the empty-should trap ------------------------------------------------------------------------


def test_an_empty_should_matches_every_point_so_any_of_refuses_to_build_one(pool: ProjectPool) -> None:
    """The trap, shown on Qdrant itself (control), and the guard."""
    pool.start_session("s", None)
    pool.write_episode("s", "memory")
    vector = pool.embedder(["memory"])[0].tolist()
    assert len(pool.vectors.search(EPISODES, vector, unchecked_any_of("sessionId", []), 10)) == 1
    assert pool.vectors.search(EPISODES, vector, any_of("sessionId", [99]), 10) == []
    with pytest.raises(ValueError, match="empty 'should'"):
        any_of("sessionId", [])


def test_no_search_ever_sends_an_empty_should(world: ProjectPool, monkeypatch: pytest.MonkeyPatch) -> None:
    """Through moves, removals and a fresh project, every filter sent names at least one id."""
    sent: list[Any] = []
    query = world.vectors.client.query_points

    def spy(*args: Any, **kwargs: Any) -> Any:
        sent.append(kwargs.get("query_filter"))
        return query(*args, **kwargs)

    monkeypatch.setattr(world.vectors.client, "query_points", spy)
    world.create_project("empty")
    world.start_session("lonely", "empty")
    steps: list[Callable[[], None]] = [
        lambda: None,
        lambda: world.assign_session("b1", "alpha"),
        lambda: world.remove_session("a1"),
        lambda: world.remove_session("a2"),
        lambda: world.assign_session("s1", "empty"),
    ]
    for step in steps:
        step()
        for session in ("a1", "a2", "b1", "s1", "s2", "lonely"):
            world.search_episodes(session, "memory", 10)
            world.search_entities(session, "memory", 10)
    assert sent
    for where in sent:
        assert where is not None
        assert where.should != []
        assert where.must or where.should
        assert all(getattr(c.match, "any", None) != [] for c in where.must or [])


# -- the adapter ----------------------------------------------------------------------------------


def test_the_adapter_declares_a_valid_project_pool_manifest_and_opens_independent_backends() -> None:
    adapter = qdrant_local()
    try:
        manifest = Manifest.from_mapping(adapter.manifest)
        assert manifest.profile == "project-pool"
        assert manifest.supports("fault-injection")
        first, second = adapter.open(BackendOptions()), adapter.open(BackendOptions())
        check_backend(first, manifest)
        assert isinstance(first, ProjectPoolBackend)
        first.create_project("p")
        first.start_session("s", "p")
        first.write_episode("s", "memory")
        second.create_project("p")  # the same name is free in another backend
        second.start_session("s", "p")
        assert second.search_episodes("s", "memory", 10) == []
        adapter.close(first)
        adapter.close(first)  # closing twice is harmless
    finally:
        adapter.shutdown()
