"""harness-v1 carries the kb-grant profile: a kb-grant adapter served on stdio and on HTTP answers
every facade and error as in process, its fault plans (stores, hang) included; a caller that is
not a string is no identity on the far side.

The adapter is the correct in-memory kb-grant adapter of the plugin's tests
(``tests/plugin/grant_adapter.py``: stores north and south of two engines, models of dimension
6), served by ``kbconform serve tests.plugin.grant_adapter:make`` from the repository root.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import pytest

from kbconform.adapter import BackendOptions, FaultPlan, FaultSwitch, Manifest, check_backend
from kbconform.errors import (
    BackendUnavailable,
    ContractViolation,
    Forbidden,
    KbconformError,
    NotFound,
    Unauthenticated,
)
from kbconform.harness import HarnessAdapter, HarnessBroken
from kbconform.harness._wire import problems
from kbconform.profiles.kb_grant._wire import (
    documents_or_null,
    integer_or_null,
    text_or_null,
    texts_or_null,
    vector_or_null,
)
from kbconform.profiles.kb_grant.protocol import GRANT_INVALID, MODEL_MISMATCH, KbGrantBackend
from tests.harness.conftest import ROOT, loopback
from tests.plugin.grant_adapter import DEADLINE, Grants

GRANT = "tests.plugin.grant_adapter:make"
SERVED = GRANT  # by the served fixture (conftest.py), on stdio and on HTTP
TENANT = "kbconform_reference.adapter:memory"
#: Vectors of the two models' dimension, 6.
X, Y, Z = [1.0, 0.0, 0.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0, 0.0, 0.0], [0.6, 0.8, 0.0, 0.0, 0.0, 0.0]


def _seen(value: Any) -> Any:
    """A facade's answer as plain data: hits and knowledge bases as tuples of their fields."""
    if isinstance(value, (list, tuple)):
        return [_seen(item) for item in value]
    if hasattr(value, "score"):
        return ("hit", value.id, value.kb, value.text, value.score)
    if hasattr(value, "documents"):
        return ("kb", value.id, value.owner, value.store, value.model, value.documents)
    return value


def _outcome(call: Callable[[], Any]) -> Any:
    """What a call gave: its answer as data, or its error as (kbconform class, code, contract)."""
    try:
        return _seen(call())
    except KbconformError as error:
        kind = next(
            c
            for c in (ContractViolation, Unauthenticated, Forbidden, NotFound, BackendUnavailable)
            if isinstance(error, c)
        )
        return (kind.__name__, error.code, getattr(error, "contract", None))


def _world(backend: Any) -> tuple[str, str, str, str]:
    """Tenants acme and beta and carol; acme's knowledge bases on north (m-6a), south (m-6a)
    and north (m-6b)."""
    for tenant in ("acme", "beta", "carol"):
        backend.create_tenant(tenant)
    one = backend.create_kb("acme", "north", "m-6a")
    two = backend.create_kb("acme", "south", "m-6a")
    other = backend.create_kb("acme", "north", "m-6b")
    beta = backend.create_kb("beta", "south", "m-6a")
    return one, two, other, beta


def _story(backend: Any) -> list[object]:
    """Every kb-grant facade, in an order that exercises grants, the merge, copy and move."""
    one, two, other, beta = _world(backend)
    seen: list[object] = [one, two, other, beta]
    seen.append(
        _seen(backend.ingest("acme", one, [{"text": "x", "embedding": X}, {"text": "z", "embedding": Z}]))
    )
    seen.append(_seen(backend.ingest("acme", two, [{"text": "y", "embedding": Y, "extra": "dropped"}])))
    seen.append(_seen(backend.ingest("acme", other, [{"text": "other", "embedding": X}])))
    seen.append(_seen(backend.ingest("beta", beta, [{"text": "beta", "embedding": X}])))
    seen.append(_seen(backend.search("acme", [one, two], X, 10)))
    seen.append(_seen(backend.search("acme", (two, one), [1, 0.9, 0, 0, 0, 0], 2)))
    backend.share_kb("acme", one, "beta")
    backend.share_kb("acme", one, "beta")  # again: no change
    seen.append(_seen(backend.search("beta", [one, beta], Y, 10)))
    seen.append(sorted(_seen(backend.list_kbs("beta"))))
    seen.append(_seen(backend.get_kb("beta", one)))
    copy = backend.copy_kb("beta", one, "south")
    seen.append(copy)
    seen.append(_seen(backend.get_kb("beta", copy)))
    backend.revoke_kb("acme", one, "beta")
    backend.revoke_kb("acme", one, "carol")  # no grant: no change
    seen.append(sorted(_seen(backend.list_kbs("beta"))))
    backend.move_kb("acme", one, "south")
    backend.move_kb("acme", one, "south")  # to its own store: no change
    seen.append(_seen(backend.get_kb("acme", one)))
    seen.append(_seen(backend.search("acme", [one, two], Z, 3)))
    backend.delete_kb("acme", two)
    seen.append(sorted(_seen(backend.list_kbs("acme"))))
    seen.append(_seen(backend.list_kbs("carol")))
    return seen


def test_every_grant_facade_answers_over_the_wire_as_in_process(served: HarnessAdapter) -> None:
    """The same story gives the same results in process and served, scores to the last bit; the
    grant rules hold in it (control: the story is not trivially equal)."""
    assert served.manifest["isolationProfile"] == "kb-grant"
    backend = served.open(BackendOptions())
    check_backend(backend, Manifest.from_mapping(served.manifest))
    assert isinstance(backend, KbGrantBackend)
    over_the_wire = _story(backend)
    assert over_the_wire == _story(Grants().open(BackendOptions()))
    one, two, _, beta = over_the_wire[:4]
    x, z = over_the_wire[4]  # type: ignore[misc]
    (y,) = over_the_wire[5]  # type: ignore[misc]
    merged = over_the_wire[8]
    assert [hit[1:4] for hit in merged] == [(x, one, "x"), (z, one, "z"), (y, two, "y")]  # type: ignore[attr-defined]
    assert [hit[4] for hit in merged] == pytest.approx([1.0, 0.8, 0.5], abs=1e-12)  # type: ignore[attr-defined]
    assert [hit[1] for hit in over_the_wire[9]] == [z, x]  # type: ignore[attr-defined]
    assert [hit[3] for hit in over_the_wire[10]] == ["z", "x", "beta"]  # type: ignore[index]
    assert over_the_wire[11] == sorted(
        [("kb", one, "acme", "north", "m-6a", 2), ("kb", beta, "beta", "south", "m-6a", 1)]
    )
    copy = over_the_wire[13]
    assert over_the_wire[14] == ("kb", copy, "beta", "south", "m-6a", 2)
    assert [view[1] for view in over_the_wire[15]] == sorted([beta, copy])  # type: ignore[index]
    assert over_the_wire[16] == ("kb", one, "acme", "south", "m-6a", 2)
    assert [view[1] for view in over_the_wire[18]] == sorted([one, over_the_wire[2]])  # type: ignore[index]
    assert over_the_wire[19] == []
    served.close(backend)


#: Calls that fail, each (facade, args) on the world of _world (``{one}``: its knowledge bases).
FAILING: list[tuple[str, tuple[object, ...]]] = [
    *[("list_kbs", (nobody,)) for nobody in (None, 7, "", "nobody", ["acme"], {"acme": 1})],
    ("search", (None, ["{one}"], X, 5)),
    ("search", ("nobody", ["{beta}"], X, True)),  # the caller first, whatever else is wrong
    ("get_kb", (None, "{one}")),
    ("create_kb", ("", "north", "m-6a")),
    ("ingest", (7, "{one}", [{"text": "x", "embedding": X}])),
    ("copy_kb", (1.0, "{one}", "south")),
    ("get_kb", ("beta", "{one}")),  # foreign, not granted
    ("get_kb", ("beta", "kb-999")),  # never existed: the same error
    ("get_kb", ("beta", None)),  # not an id: the shape before the rights
    ("search", ("beta", ["{beta}", "{one}"], X, 5)),  # never a pivot to the readable one
    ("search", ("beta", ["{one}"], X, 0)),  # shape first
    ("delete_kb", ("beta", "{one}")),
    ("copy_kb", ("beta", "{one}", "north")),
    ("share_kb", ("carol", "{one}", "beta")),  # granted to carol below: Forbidden
    ("revoke_kb", ("carol", "{one}", "carol")),
    ("ingest", ("carol", "{one}", [{"text": "x", "embedding": X}])),
    ("move_kb", ("carol", "{one}", "south")),
    ("delete_kb", ("carol", "{one}")),
    ("create_tenant", ("acme",)),
    ("create_tenant", ("",)),
    ("create_tenant", (None,)),
    ("create_kb", ("acme", "s9", "m-6a")),
    ("create_kb", ("acme", "north", "m-9")),
    ("create_kb", ("acme", None, 7)),
    ("share_kb", ("acme", "{one}", "acme")),
    ("share_kb", ("acme", "{one}", "nobody")),
    ("revoke_kb", ("acme", "{one}", None)),
    ("ingest", ("acme", "{one}", [])),
    ("ingest", ("acme", "{one}", None)),
    ("ingest", ("acme", "{one}", [{"text": "", "embedding": X}])),
    ("ingest", ("acme", "{one}", [{"text": "x", "embedding": [1.0, 0.0]}])),
    ("ingest", ("acme", "{one}", [{"text": "x", "embedding": [0.0] * 6}])),
    (
        "ingest",
        (
            "acme",
            "{one}",
            [{"text": "ok", "embedding": X}, {"text": "x", "embedding": [float("nan"), *[0] * 5]}],
        ),
    ),
    ("ingest", ("acme", "{one}", [{"text": "ok", "embedding": X}, "x"])),
    ("search", ("acme", [], X, 5)),
    ("search", ("acme", "{one}", X, 5)),  # a str is not a list of ids
    ("search", ("acme", ["{one}", "{one}"], X, 5)),
    ("search", ("acme", ["{one}", 7], X, 5)),
    ("search", ("acme", ["{one}"], [float("nan"), *[0.0] * 5], 5)),
    ("search", ("acme", ["{one}"], [True, *[False] * 5], 5)),
    ("search", ("acme", ["{one}"], "x", 5)),
    ("search", ("acme", ["{one}"], [1.0, 0.0], 5)),
    ("search", ("acme", ["{one}"], X, True)),
    ("search", ("acme", ["{one}"], X, 5.0)),
    ("search", ("acme", ["{one}"], X, 1001)),
    ("search", ("acme", ["{one}", "{other}"], X, 5)),  # two models
    ("copy_kb", ("acme", "{one}", "s9")),
    ("move_kb", ("acme", "{one}", None)),
]


def _failures(backend: Any, switch: FaultSwitch) -> list[object]:
    """Every failing call on the world, then the store failing (only south, then every store); and
    that nothing changed."""
    one, two, other, beta = _world(backend)
    names = {"{one}": one, "{two}": two, "{other}": other, "{beta}": beta}

    def bound(value: object) -> object:
        if isinstance(value, list):
            return [bound(item) for item in value]
        return names.get(value, value) if isinstance(value, str) else value

    backend.ingest("acme", one, [{"text": "x", "embedding": X}])
    backend.share_kb("acme", one, "carol")
    seen = [_outcome(lambda f=f, a=a: getattr(backend, f)(*[bound(v) for v in a])) for f, a in FAILING]
    switch.set(FaultPlan(0, None, frozenset({"south"})))
    seen.append(_outcome(lambda: backend.search("acme", [one, two], X, 5)))  # all or nothing
    seen.append(_outcome(lambda: backend.search("acme", [one], X, 5)))  # north answers (control)
    seen.append(_outcome(lambda: backend.ingest("acme", two, [{"text": "y", "embedding": Y}])))
    seen.append(_outcome(lambda: backend.move_kb("acme", one, "south")))
    seen.append(_outcome(lambda: backend.copy_kb("acme", one, "south")))
    seen.append(_outcome(lambda: backend.search("beta", [beta, one], X, 5)))  # unreadable: no store asked
    seen.append(switch.set(FaultPlan(1)))
    seen.append(_outcome(lambda: backend.get_kb("acme", one)))  # the one passing consultation
    seen.append(_outcome(lambda: backend.get_kb("acme", one)))
    seen.append(_outcome(lambda: backend.list_kbs("beta")))
    seen.append(_outcome(lambda: backend.delete_kb("acme", other)))
    seen.append(switch.set(None))
    seen.append(sorted(_seen(backend.list_kbs("acme"))))
    seen.append(_seen(backend.search("acme", [one, two], X, 5)))
    return seen


def test_every_grant_error_crosses_the_wire_as_in_process(served: HarnessAdapter) -> None:
    """Unauthenticated, NotFound, Forbidden, KB_GRANT_INVALID and KB_MODEL_MISMATCH (contract
    kb-grant) and BackendUnavailable by a plan naming stores: the same class, code and contract
    for every call as in process, the consultations counted alike, nothing changed."""
    switch = FaultSwitch()
    backend = served.open(BackendOptions(store_fails=switch))
    in_process = FaultSwitch()
    expected = _failures(Grants().open(BackendOptions(store_fails=in_process)), in_process)
    assert _failures(backend, switch) == expected
    count = len(FAILING)
    kinds = [outcome[0] for outcome in expected[:count]]  # type: ignore[index]
    assert kinds[:12] == ["Unauthenticated"] * 12
    assert kinds[12:16] == ["NotFound", "NotFound", "ContractViolation", "NotFound"]
    assert kinds[16:19] == ["ContractViolation", "NotFound", "NotFound"]
    assert kinds[19:24] == ["Forbidden"] * 5
    assert set(kinds[24:]) == {"ContractViolation"}
    assert expected[count - 3] == ("ContractViolation", MODEL_MISMATCH, "kb-grant")
    assert expected[count - 4] == ("ContractViolation", GRANT_INVALID, "kb-grant")
    assert expected[count : count + 6] == [
        ("BackendUnavailable", "KB_BACKEND_UNAVAILABLE", None),
        [("hit", "doc-5", "kb-1", "x", 1.0)],
        *[("BackendUnavailable", "KB_BACKEND_UNAVAILABLE", None)] * 3,
        ("NotFound", "KB_NOT_FOUND", None),
    ]
    assert expected[count + 6] == 4, "the south plan counted its consultations only"
    assert expected[count + 7][0] == "kb"
    assert expected[count + 8][0] == "BackendUnavailable"
    assert expected[count + 11] == 4
    assert [view[1] for view in expected[-2]] == ["kb-1", "kb-2", "kb-3"]  # type: ignore[index]
    served.close(backend)


def test_a_hanging_plan_crosses_the_wire(served: HarnessAdapter) -> None:
    """A plan that hangs blocks the harness's store call that long (a get waits it out, then
    fails); a search fails at its group deadline, long before; the plan without hang fails
    without waiting it (control). Every upper bound is the hang, what a wrong harness waits, not
    a time a correct one must keep on a loaded machine."""
    switch = FaultSwitch()
    backend = served.open(BackendOptions(store_fails=switch))
    one, two, _, _ = _world(backend)
    hang = 4 * DEADLINE
    switch.set(FaultPlan(0, None, frozenset({"south"}), hang))
    started = time.monotonic()
    with pytest.raises(BackendUnavailable):
        backend.get_kb("acme", two)
    assert time.monotonic() - started >= hang
    started = time.monotonic()
    with pytest.raises(BackendUnavailable):
        backend.search("acme", [one, two], X, 5)
    assert DEADLINE <= time.monotonic() - started < hang
    assert backend.search("acme", [one], X, 5) == []
    switch.set(FaultPlan(0, None, frozenset({"south"})))
    started = time.monotonic()
    with pytest.raises(BackendUnavailable):
        backend.get_kb("acme", two)
    assert time.monotonic() - started < hang
    served.close(backend)


def test_a_plan_sends_stores_and_hang_only_when_it_has_them() -> None:
    """{pass, fail} as before for a plan of neither (a harness of another profile reads it as
    ever); stores sorted, hang in seconds when set; the Dispatcher's switch gets the same plan."""
    adapter, transport = loopback(GRANT)
    switch = FaultSwitch()
    backend = adapter.open(BackendOptions(store_fails=switch))
    far = transport.dispatcher.backends[backend.handle][1]
    assert far is not None
    switch.set(FaultPlan(2, 3))
    switch.set(FaultPlan(0, 1, frozenset({"s2", "s1"}), 0.25))
    assert far("s3") is False  # not the plan's store: neither fails nor counts
    started = time.monotonic()
    assert far("s1") is True
    assert time.monotonic() - started >= 0.25
    assert far("s2") is False  # its one failure is spent
    assert switch.set(None) == 2
    plans = [message["params"]["plan"] for message in transport.sent if message["op"] == "fault"]
    assert plans == [
        {"pass": 2, "fail": 3},
        {"pass": 0, "fail": 1, "stores": ["s1", "s2"], "hang": 0.25},
        None,
    ]


def test_a_caller_crosses_as_its_json_form_and_every_other_argument_as_its_kind_or_null() -> None:
    """The caller as a project-pool session crosses; ids, ids lists, vectors, limits and batches
    as themselves when they are of their kind (the invalid ones too: empty, repeated, wrong
    dimension, out of range) and as null when not."""
    adapter, transport = loopback(GRANT)
    backend = adapter.open(BackendOptions())

    class Sneaky(str):
        def __str__(self) -> str:
            return "someone-else"

    for caller in ("acme", Sneaky("acme"), "", None, 7, ["acme"], object(), float("nan")):
        with pytest.raises(Unauthenticated):
            backend.list_kbs(caller)
    sent = [message["params"]["caller"] for message in transport.sent if message["op"] == "listKbs"]
    assert sent == ["acme", "acme", "", None, 7, ["acme"], None, None]
    assert [text_or_null(v) for v in ("kb-1", Sneaky("kb-1"), "", None, 7, b"kb")] == [
        "kb-1",
        "kb-1",
        "",
        None,
        None,
        None,
    ]
    assert type(text_or_null(Sneaky("kb-1"))) is str
    assert [texts_or_null(v) for v in (["a", "a"], ("a",), [], "ab", ["a", 7], None)] == [
        ["a", "a"],
        ["a"],
        [],
        None,
        None,
        None,
    ]
    assert [
        vector_or_null(v) for v in ([1, 0.5], (0.0,), [], [True], [float("inf")], [10**400], "ab", None)
    ] == [[1, 0.5], [0.0], [], None, None, None, None, None]
    assert [integer_or_null(v) for v in (5, 0, -1, 10**6, True, 5.0, "5", None)] == [
        5,
        0,
        -1,
        10**6,
        None,
        None,
        None,
        None,
    ]
    assert documents_or_null([{"text": "x", "embedding": [float("nan")]}, "x", {"a": (1,)}]) == [
        None,
        "x",
        {"a": [1]},
    ]
    assert documents_or_null(None) is None
    assert documents_or_null("x") is None


def test_a_caller_that_is_not_a_string_is_no_identity_on_the_far_side(served: HarnessAdapter) -> None:
    """The backend sees the value the suite passed: 1, ["1"], True are not the tenant "1" (the
    control reads), whatever the harness's language makes of them."""
    backend = served.open(BackendOptions())
    backend.create_tenant("1")
    kb = backend.create_kb("1", "north", "m-6a")
    assert [view.id for view in backend.list_kbs("1")] == [kb]
    for look_alike in (1, ["1"], {"1": "1"}, 1.0, True, None):
        with pytest.raises(Unauthenticated):
            backend.list_kbs(look_alike)
        with pytest.raises(Unauthenticated):
            backend.get_kb(look_alike, kb)
    served.close(backend)


def test_ingest_follows_the_manifests_profile() -> None:
    """On a kb-grant harness ingest(caller, kb, documents) is ingestDocuments, and a
    tenant-namespace ingest(principal, records) is a TypeError before any request; on a
    tenant-namespace harness the reverse (a list where the envelope goes), each with its
    control."""
    adapter, transport = loopback(GRANT)
    backend = adapter.open(BackendOptions())
    backend.create_tenant("acme")
    kb = backend.create_kb("acme", "north", "m-6a")
    sent = len(transport.sent)
    with pytest.raises(TypeError, match="missing 1 required positional argument"):
        backend.ingest("acme", [{"text": "x", "embedding": X}])
    assert len(transport.sent) == sent
    assert backend.ingest("acme", kb, [{"text": "x", "embedding": X}]) == ["doc-2"]
    assert transport.sent[-1]["op"] == "ingestDocuments"
    tenant, transport = loopback(TENANT)
    backend = tenant.open(BackendOptions())
    with pytest.raises(TypeError, match="envelope is a mapping of request-level fields, not list"):
        backend.ingest(None, "kb", [])
    with pytest.raises(Unauthenticated):
        backend.ingest(None, [])
    assert transport.sent[-1]["op"] == "ingest"


@pytest.mark.parametrize(
    ("facade", "wrong", "op"),
    [
        (
            "search",
            lambda *_: [type("H", (), {"id": "d", "kb": "k", "text": "t", "score": 1.5})()],
            "searchKbs",
        ),
        (
            "search",
            lambda *_: [type("H", (), {"id": "d", "kb": "k", "text": "t", "score": -0.1})()],
            "searchKbs",
        ),
        ("create_kb", lambda *_: 7, "createKb"),
        (
            "list_kbs",
            lambda *_: [
                type("V", (), {"id": "k", "owner": "o", "store": "s", "model": "m", "documents": -1})()
            ],
            "listKbs",
        ),
    ],
)
def test_a_grant_result_of_the_wrong_shape_breaks_the_harness(
    monkeypatch: pytest.MonkeyPatch, facade: str, wrong: Callable[..., Any], op: str
) -> None:
    """A score outside [0, 1] (beyond the contract's 1e-4), a knowledge base id that is not a
    string, a negative count:
    KB_HARNESS_BROKEN naming the call, never a result (control: the right shape answers)."""
    adapter, transport = loopback(GRANT)
    backend = adapter.open(BackendOptions())
    backend.create_tenant("acme")
    kb = backend.create_kb("acme", "north", "m-6a")
    call = {
        "search": lambda: backend.search("acme", [kb], X, 5),
        "create_kb": lambda: backend.create_kb("acme", "north", "m-6a"),
        "list_kbs": lambda: backend.list_kbs("acme"),
    }[facade]
    assert call() is not None
    far = transport.dispatcher.backends[backend.handle][0]
    monkeypatch.setattr(far, facade, wrong)
    with pytest.raises(HarnessBroken, match=f"not a {op} result"):
        call()


def test_a_score_crosses_within_the_contracts_tolerance_of_0_to_1(monkeypatch: pytest.MonkeyPatch) -> None:
    """A score an ulp above 1 or 1e-4 below 0 (rounding, float32 vectors: the contract allows
    1e-4) is a searchKbs result, and the suites judge it; one further out is not."""
    adapter, transport = loopback(GRANT)
    backend = adapter.open(BackendOptions())
    far = transport.dispatcher.backends[backend.handle][0]
    for score in (1.0000000000000002, 1.0001, -0.0001, 0.0):
        hit = type("H", (), {"id": "d", "kb": "k", "text": "t", "score": score})()
        monkeypatch.setattr(far, "search", lambda *_, hit=hit: [hit])
        assert [found.score for found in backend.search("acme", ["k"], X, 5)] == [score]
    assert problems("searchKbsResult", {"hits": [{"id": "d", "kb": "k", "text": "t", "score": 1.00011}]})
    assert problems("searchKbsResult", {"hits": [{"id": "d", "kb": "k", "text": "t", "score": -0.00011}]})


def test_each_answer_of_the_kb_grant_example_session_is_a_result_of_its_request() -> None:
    """The kb-grant example session (vectors/harness-v1.json, harness-v1.md): every result is
    valid for the operation of the request before it; a pool-shaped hit is not (control)."""
    groups = json.loads((ROOT / "schemas" / "vectors" / "harness-v1.json").read_text(encoding="utf-8"))
    [example] = [g for g in groups if g["description"].startswith("harness-v1 kb-grant example")]
    messages = [test["data"] for test in example["tests"]]
    pairs = list(zip(messages[::2], messages[1::2], strict=True))
    ops = {request["op"] for request, _ in pairs}
    assert {"createTenant", "createKb", "shareKb", "ingestDocuments", "searchKbs", "getKb", "fault"} <= ops
    for request, response in pairs:
        assert response["id"] == request["id"]
        assert problems("request", request) == [], request
        if "result" in response:
            assert problems(f"{request['op']}Result", response["result"]) == [], request["op"]
    assert problems("searchKbsResult", {"hits": [{"id": "d", "text": "words"}]}) != []
