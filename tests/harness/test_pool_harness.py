"""harness-v1 carries the project-pool profile: a project-pool adapter served on stdio and on HTTP
answers every operation and error as in process.

The adapter is the correct in-memory project-pool adapter of the plugin's tests
(``tests/plugin/pool_adapter.py``), served by ``kbconform serve tests.plugin.pool_adapter:make``
from the repository root.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from kbconform.adapter import BackendOptions, FaultPlan, FaultSwitch, Manifest, check_backend
from kbconform.errors import BackendUnavailable, ContractViolation, NotFound, Unauthenticated
from kbconform.harness import HarnessAdapter, HarnessBroken
from kbconform.harness._wire import problems
from kbconform.profiles.project_pool._wire import session_to_wire
from kbconform.profiles.project_pool.protocol import POOL_INVALID, ProjectPoolBackend
from kbconform.profiles.tenant_namespace.protocol import Backend
from tests.harness.conftest import ROOT, loopback
from tests.plugin.pool_adapter import Pool

POOL = "tests.plugin.pool_adapter:make"
SERVED = POOL  # by the served fixture (conftest.py), on stdio and on HTTP
TENANT = "kbconform_reference.adapter:memory"
ENTITY = {"name": "Ada", "type": "person", "notes": "wrote the first program"}


def _story(backend: Any) -> list[object]:
    """Every pool operation, in an order that exercises the scope rules; what each returned."""
    seen: list[object] = []
    backend.create_project("apollo")
    backend.create_project("gemini")
    backend.start_session("s-shared", None)
    backend.start_session("s-apollo", "apollo")
    backend.start_session("s-mover", None)
    seen.append(backend.write_episode("s-shared", "shared words"))
    seen.append(backend.write_episode("s-apollo", "apollo words"))
    seen.append(backend.write_episode("s-mover", "mover words"))
    seen.append(list(backend.extract_entities("s-apollo", [ENTITY, {**ENTITY, "name": "Grace"}])))
    seen.append(list(backend.extract_entities("s-mover", [{**ENTITY, "name": "Linus"}])))
    for session in ("s-shared", "s-apollo", "s-mover"):
        seen.append([(hit.id, hit.text) for hit in backend.search_episodes(session, "words", 10)])
        seen.append([(hit.id, hit.text) for hit in backend.search_entities(session, "Ada", 10)])
    backend.assign_session("s-mover", "apollo")
    seen.append(list(backend.extract_entities("s-mover", [{**ENTITY, "name": "Edsger"}])))
    seen.append([(hit.id, hit.text) for hit in backend.search_episodes("s-apollo", "mover words", 1)])
    seen.append([(hit.text) for hit in backend.search_entities("s-mover", "Ada", 10)])
    backend.assign_session("s-mover", "gemini")
    seen.append([(hit.text) for hit in backend.search_entities("s-mover", "Ada", 10)])
    backend.remove_session("s-mover")
    backend.remove_session("s-shared")  # in no project: stays so
    seen.append([(hit.text) for hit in backend.search_episodes("s-shared", "words", 10)])
    seen.append([(hit.text) for hit in backend.search_episodes("s-apollo", "words", 10)])
    return seen


def test_every_pool_operation_answers_over_the_wire_as_in_process(served: HarnessAdapter) -> None:
    """The same story gives the same results in process and served; the scope rules hold in it."""
    assert served.manifest["isolationProfile"] == "project-pool"
    backend = served.open(BackendOptions())
    check_backend(backend, Manifest.from_mapping(served.manifest))
    in_process = Pool().open(BackendOptions())
    over_the_wire = _story(backend)
    assert over_the_wire == _story(in_process)
    searches = over_the_wire[5:11]
    assert [text for _, text in searches[0]] == ["shared words", "mover words"]  # P1
    assert searches[1] == []  # P2: no entity context in the shared pool
    assert [text for _, text in searches[2]] == ["apollo words"]  # P3, P4
    assert [text for _, text in searches[3]] == ["Ada", "Grace"]
    assert over_the_wire[12] == [(over_the_wire[2], "mover words")]  # P5: its episodes moved in
    assert over_the_wire[13] == ["Ada", "Grace", "Edsger"]  # P7: Linus stays untagged
    assert over_the_wire[14] == []
    assert over_the_wire[15] == ["shared words", "mover words"]  # P6
    assert over_the_wire[16] == ["apollo words"]
    served.close(backend)


def test_pool_errors_cross_the_wire_with_their_codes(served: HarnessAdapter) -> None:
    """Unauthenticated, NotFound, KB_POOL_INVALID and BackendUnavailable (by the fault plan)
    come back as the kit's errors, with the harness's message; a failed call changes nothing."""
    switch = FaultSwitch()
    backend = served.open(BackendOptions(store_fails=switch))
    backend.create_project("apollo")
    backend.start_session("s1", "apollo")
    kept = backend.write_episode("s1", "kept words")
    for nobody in (None, 7, "", "never-started", object()):
        with pytest.raises(Unauthenticated) as refused:
            backend.search_episodes(nobody, "words", 5)
        assert refused.value.code == "KB_UNAUTHENTICATED"
        with pytest.raises(Unauthenticated):
            backend.write_episode(nobody, "words")
    with pytest.raises(Unauthenticated):
        backend.extract_entities(None, [ENTITY])
    with pytest.raises(Unauthenticated):
        backend.search_entities("never-started", "Ada", 5)
    for call, args in [
        (backend.start_session, ("s2", "no-such-project")),
        (backend.assign_session, ("no-such-session", "apollo")),
        (backend.assign_session, ("s1", "no-such-project")),
        (backend.remove_session, ("no-such-session",)),
    ]:
        with pytest.raises(NotFound) as missing:
            call(*args)
        assert missing.value.code == "KB_NOT_FOUND"
        assert "no-such" in str(missing.value)
    for call, args in [
        (backend.create_project, ("apollo",)),
        (backend.start_session, ("s1", None)),
        (backend.write_episode, ("s1", "")),
        (backend.extract_entities, ("s1", [ENTITY, {"name": "Ada"}])),
        (backend.extract_entities, ("s1", ["Ada"])),
        (backend.search_episodes, ("s1", "words", 0)),
    ]:
        with pytest.raises(ContractViolation) as invalid:
            call(*args)
        assert invalid.value.code == POOL_INVALID
    switch.set(FaultPlan(0))
    for failing in (
        lambda: backend.search_episodes("s1", "words", 5),
        lambda: backend.search_entities("s1", "Ada", 5),
        lambda: backend.write_episode("s1", "lost words"),
        lambda: backend.extract_entities("s1", [ENTITY]),
    ):
        with pytest.raises(BackendUnavailable) as down:
            failing()
        assert down.value.code == "KB_BACKEND_UNAVAILABLE"
    assert switch.set(None) == 4, "the harness's switch was not consulted once per store call"
    assert [hit.id for hit in backend.search_episodes("s1", "words", 10)] == [kept]
    assert backend.search_entities("s1", "Ada", 10) == []
    served.close(backend)


def test_a_session_crosses_as_its_json_form_or_as_null() -> None:
    """A str crosses as its plain value (a subclass's too, the empty string too), any other JSON
    value as itself; a value with no JSON form (an object, bytes, NaN) as null."""

    class Sneaky(str):
        def __str__(self) -> str:
            return "someone-else"

    crossed = session_to_wire(Sneaky("s1"))
    assert (crossed, type(crossed)) == ("s1", str)
    assert session_to_wire("") == ""
    as_json = [None, 7, 1.5, True, ["1"], {"id": "s1"}]
    assert [session_to_wire(value) for value in as_json] == as_json
    assert session_to_wire(("1",)) == ["1"]
    assert [session_to_wire(value) for value in (b"s1", object(), float("nan"), {1j})] == [None] * 4


def test_a_session_that_is_not_a_string_is_no_identity_on_the_far_side(served: HarnessAdapter) -> None:
    """The backend sees the value the suite passed: 1 and ["1"] are not the session "1" (the
    control answers), whatever the harness's language makes of them."""
    backend = served.open(BackendOptions())
    backend.start_session("1", None)
    written = backend.write_episode("1", "words")
    assert [hit.id for hit in backend.search_episodes("1", "words", 5)] == [written]
    for look_alike in (1, ["1"], {"1": "1"}, 1.0, True):
        with pytest.raises(Unauthenticated):
            backend.search_episodes(look_alike, "words", 5)
        with pytest.raises(Unauthenticated):
            backend.write_episode(look_alike, "words")
    served.close(backend)


def test_a_membership_name_that_is_not_a_string_is_never_sent() -> None:
    """Membership operations take the operator's names: anything but a str (None for the project
    of startSession: no project) is a TypeError before any request, and nothing changes."""
    adapter, _ = loopback(POOL)
    backend = adapter.open(BackendOptions())
    sent = adapter._ids
    for call, args in [
        (backend.create_project, (None,)),
        (backend.start_session, (7, None)),
        (backend.start_session, ("s1", 7)),
        (backend.assign_session, ("s1", None)),
        (backend.remove_session, (None,)),
    ]:
        with pytest.raises(TypeError, match=r"behind harness-v1 a (session id|project name) is a str"):
            call(*args)
    assert adapter._ids == sent
    backend.start_session("s1", None)  # control: None is no project
    assert backend.write_episode("s1", "words")


def test_the_proxy_passes_check_backend_for_either_profile() -> None:
    """A backend behind harness-v1 has the facades of the profile its manifest declares, and
    not the other's."""
    for spec, own, other in ((POOL, ProjectPoolBackend, Backend), (TENANT, Backend, ProjectPoolBackend)):
        adapter, _ = loopback(spec)
        manifest = Manifest.from_mapping(adapter.manifest)
        backend = adapter.open(BackendOptions())
        check_backend(backend, manifest)
        assert isinstance(backend, own)
        assert not isinstance(backend, other)
        adapter.shutdown()


def test_a_pool_result_of_the_wrong_shape_breaks_the_harness(monkeypatch: pytest.MonkeyPatch) -> None:
    """An episode id that is not a string, a hit without its text: KB_HARNESS_BROKEN naming the
    call, never a result."""
    adapter, transport = loopback(POOL)
    backend = adapter.open(BackendOptions())
    backend.start_session("s1", None)
    served = next(iter(transport.dispatcher.backends.values()))[0]
    monkeypatch.setattr(served, "write_episode", lambda *_: 7)
    with pytest.raises(HarnessBroken, match="not a writeEpisode result"):
        backend.write_episode("s1", "words")


def test_a_pool_hit_without_its_text_breaks_the_harness(monkeypatch: pytest.MonkeyPatch) -> None:
    """A search answered with hits of the tenant shape is not a searchEpisodes result."""
    adapter, transport = loopback(POOL)
    backend = adapter.open(BackendOptions())
    backend.start_session("s1", None)
    served = next(iter(transport.dispatcher.backends.values()))[0]

    class TenantHit:
        id, text, document, metadata = "h1", "words", "words", {}

    monkeypatch.setattr(served, "search_episodes", lambda *_: [TenantHit()])
    assert [(hit.id, hit.text) for hit in backend.search_episodes("s1", "words", 5)] == [("h1", "words")]
    monkeypatch.setattr(
        "kbconform.profiles.project_pool._wire.pool_hit_to_wire",
        lambda hit: {"id": hit.id, "document": hit.document, "metadata": {}},
    )
    with pytest.raises(HarnessBroken, match="not a searchEpisodes result"):
        backend.search_episodes("s1", "words", 5)


def test_each_answer_of_the_example_session_is_a_result_of_its_request() -> None:
    """The project-pool example session (vectors/harness-v1.json, harness-v1.md): every result
    is valid for the operation of the request before it; a tenant-shaped hit is not (control)."""
    groups = json.loads((ROOT / "schemas" / "vectors" / "harness-v1.json").read_text(encoding="utf-8"))
    [example] = [g for g in groups if g["description"].startswith("harness-v1 project-pool example")]
    messages = [test["data"] for test in example["tests"]]
    pairs = list(zip(messages[::2], messages[1::2], strict=True))
    assert len(pairs) == 11
    for request, response in pairs:
        assert response["id"] == request["id"]
        if "result" in response:
            assert problems(f"{request['op']}Result", response["result"]) == [], request["op"]
    tenant_hit = {"hits": [{"id": "ep-1", "document": "words", "metadata": {}}]}
    assert problems("searchEpisodesResult", tenant_hit) != []
