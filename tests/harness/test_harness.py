"""harness-v1 from the kit's side: a Python adapter served on stdio and on HTTP answers every
facade as it does in process; a harness serves only its profile's operations; a harness that
breaks the protocol fails the call, naming it."""

from __future__ import annotations

import contextlib
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kbconform import runner
from kbconform.adapter import BackendOptions, FaultPlan, FaultSwitch, RevisionMap, load_adapter
from kbconform.errors import BackendUnavailable, Forbidden, NotFound, Unauthenticated
from kbconform.harness import Dispatcher, HarnessAdapter, HarnessBroken, StdioTransport
from kbconform.harness._client import _BoundedLog
from kbconform.harness._wire import REQUEST_INVALID
from kbconform.identity import Principal
from kbconform.profiles.tenant_namespace._wire import principal_from_wire, principal_to_wire
from kbconform.profiles.tenant_namespace.data import record
from kbconform.profiles.tenant_namespace.world import not_principals

HERE = Path(__file__).parent
BROKEN = HERE / "broken_harness.py"
REFERENCE = "kbconform_reference.adapter:memory"
GRANT = "tests.plugin.grant_adapter:make"
POOL = "tests.plugin.pool_adapter:make"
SERVED = REFERENCE  # by the served fixture (conftest.py), on stdio and on HTTP
ACME = Principal("acme", "agent-a")
BETA = Principal("beta", "agent-b")
OPERATOR = Principal("kb-ops", "ops", role="operator")


def test_not_implemented_crosses_harness_v1_as_its_own_code() -> None:
    """A served facade raising NotImplementedError answers KB_NOT_IMPLEMENTED, which the kit's
    side raises as NotImplementedError again, with the message; any other non-kit exception
    stays KB_HARNESS_INTERNAL (control), and a kit error keeps its code."""
    from kbconform.harness._wire import INTERNAL, NOT_IMPLEMENTED, error_from_wire, error_to_wire

    wire = error_to_wire(NotImplementedError("count: to do"))
    assert wire == {"code": NOT_IMPLEMENTED, "message": "count: to do"}
    assert error_to_wire(NotImplementedError())["message"] == "NotImplementedError"
    back = error_from_wire("count", {}, wire)
    assert type(back) is NotImplementedError
    assert str(back) == "count: to do"
    assert error_to_wire(ValueError("no"))["code"] == INTERNAL
    assert error_to_wire(NotFound("x"))["code"] == "KB_NOT_FOUND"


def test_a_served_adapter_answers_every_facade_and_error_as_in_process(served: HarnessAdapter) -> None:
    assert served.manifest["adapter"]["name"] == "kbconform-reference"
    switch = FaultSwitch()
    revisions = RevisionMap({("app", "a1b2c3d", "d4e5f6a"): ["docs/b.md"]})
    backend = served.open(BackendOptions(resolver=revisions, store_fails=switch))
    written = [record(f"docs/{name}.md", f"{name} words", tenant="acme") for name in ("a", "b")]
    ids = list(backend.ingest(ACME, written).ids)
    assert backend.get(ACME, ids[0]).document == "a words"
    assert {hit.id for hit in backend.list(ACME, 10, 0)} == set(ids)
    assert backend.count(ACME) == 2
    assert backend.count(BETA) == 0
    assert [hit.id for hit in backend.query(ACME, "a words", 1, None)] == [ids[0]]
    assert {hit.id for hit in backend.ask(ACME, "words", 5).sources} == set(ids)
    with pytest.raises(NotFound) as foreign:
        backend.get(BETA, ids[0])
    assert foreign.value.code == "KB_NOT_FOUND"
    assert ids[0] in str(foreign.value)
    with pytest.raises(Unauthenticated):
        backend.list(None, 10, 0)
    with pytest.raises(Unauthenticated):  # a look-alike crosses the wire as no identity
        backend.list(object(), 10, 0)
    with pytest.raises(Forbidden):
        backend.export(ACME)
    exported = backend.export(OPERATOR)
    assert sorted(r["id"] for r in exported) == sorted(ids)
    switch.set(FaultPlan(0))
    with pytest.raises(BackendUnavailable):
        backend.list(ACME, 10, 0)
    assert switch.set(None) >= 1, "the harness's switch was never consulted"
    signal = {"repoSlug": "app", "baseRevision": "a1b2c3d", "headRevision": "d4e5f6a"}
    assert list(backend.apply_deletion_signal(ACME, signal).deleted_ids) == [ids[1]]
    assert revisions.calls == [("app", "a1b2c3d", "d4e5f6a")]
    restored = served.open(BackendOptions())
    assert restored.restore(OPERATOR, exported) == 2
    assert {hit.id for hit in restored.list(ACME, 10, 0)} == set(ids)
    served.close(backend)
    served.close(restored)


#: What each of the suites' non-principals crosses harness-v1 as: the identity it claims, as
#: data, or null where the wire cannot tell the claim from a valid principal.
CLAIMED = {
    "None": None,
    "a tenant id string": "acme",
    "a dict that looks like a principal": {"tenant_id": "acme", "role": "operator"},
    "an object with a principal's attributes": None,
    "a Principal subclass that reads every tenant": None,
    "a Principal changed in place to an invalid tenant id": {
        "tenantId": "*",
        "agentIdentity": "agent-acme",
        "role": "operator",
        "readableNamespaces": [],
    },
    "a Principal changed in place to read a mutable set": None,
}


@pytest.mark.parametrize("label", sorted(CLAIMED))
def test_a_non_principal_crosses_as_the_identity_it_claims_and_is_refused(
    label: str, served: HarnessAdapter
) -> None:
    """A malformed principal reaches the backend as data, which refuses it as no identity; a
    real Principal crosses as its fields and reads its scope (control)."""
    assert principal_to_wire(not_principals()[label]) == CLAIMED[label]
    assert not isinstance(principal_from_wire(CLAIMED[label]), Principal)
    backend = served.open(BackendOptions())
    backend.ingest(ACME, [record("docs/a.md", "a words", tenant="acme")])
    with pytest.raises(Unauthenticated):
        backend.list(not_principals()[label], 10, 0)
    assert principal_from_wire(principal_to_wire(ACME)) == ACME
    assert len(backend.list(ACME, 10, 0)) == 1
    served.close(backend)


def _ask(dispatcher: Dispatcher, op: str, params: dict[str, Any]) -> dict[str, Any]:
    return dispatcher.answer({"id": 3, "op": op, "params": params})


@pytest.mark.parametrize(
    ("spec", "op", "params"),
    [
        (GRANT, "query", {"principal": None, "text": "x", "nResults": 5, "where": None}),
        (GRANT, "ingest", {"principal": None, "records": []}),
        (GRANT, "writeEpisode", {"session": "s1", "text": "words"}),
        (REFERENCE, "searchKbs", {"caller": "acme", "kbs": ["kb-1"], "embedding": [1.0, 0.0], "limit": 5}),
        (REFERENCE, "createTenant", {"tenant": "acme"}),
        (REFERENCE, "createProject", {"project": "apollo"}),
        (REFERENCE, "searchEpisodes", {"session": "s1", "text": "words", "limit": 5}),
        (POOL, "ingestDocuments", {"caller": "acme", "kb": "kb-1", "documents": []}),
        (POOL, "listKbs", {"caller": None}),
        (POOL, "ingest", {"principal": None, "records": []}),
        (POOL, "count", {"principal": None}),
        (
            POOL,
            "scan",
            {"root": "/w", "config": None, "tenantId": "a", "repoSlug": "r", "rootKind": "bare-repo"},
        ),
    ],
)
def test_a_harness_answers_another_profiles_operations_as_requests_it_cannot_carry_out(
    spec: str, op: str, params: dict[str, Any]
) -> None:
    """KB_HARNESS_REQUEST_INVALID naming the profile, whatever backend the request names; the
    profile's own operations are answered (control)."""
    adapter, manifest = load_adapter(spec)
    dispatcher = Dispatcher(adapter, manifest)
    opened = _ask(dispatcher, "open", {"spoofMode": "overwrite", "revisionMap": None, "faults": False})
    handle = opened["result"]["backend"]
    for backend in (handle, "b99"):
        answer = _ask(dispatcher, op, {"backend": backend, **params})
        assert answer["error"] == {
            "code": REQUEST_INVALID,
            "message": f"{op} is not an operation of the {manifest.profile} profile (the manifest's "
            "isolationProfile)",
        }
    own = {
        "kb-grant": ("listKbs", {"caller": None}),
        "project-pool": ("searchEpisodes", {"session": None, "text": "words", "limit": 5}),
        "tenant-namespace": ("count", {"principal": None}),
    }[manifest.profile]
    answer = _ask(dispatcher, own[0], {"backend": handle, **own[1]})
    assert answer["error"]["code"] == "KB_UNAUTHENTICATED"
    _ask(dispatcher, "shutdown", {})


@pytest.mark.parametrize(
    ("mode", "says"),
    [
        ("crash", "the harness exited with code 3"),
        ("hang", "got no answer within its deadline of 2 s"),
        ("wrong-id", "when request 2 was in flight"),
        ("not-json", "not JSON"),
        ("wrong-shape", "not a open result"),
    ],
)
def test_a_harness_that_breaks_the_protocol_fails_the_call_naming_it(
    mode: str, says: str, tmp_path: Path
) -> None:
    """The call fails with KB_HARNESS_BROKEN naming it and what went wrong (with the harness's
    log), and the deadline it overran when it hung (a run then takes the backend as broken);
    the harness is stopped, and every later call fails too. A sound hello first (control)."""
    transport = StdioTransport([sys.executable, str(BROKEN), mode], tmp_path / "harness.log")
    adapter = HarnessAdapter(transport, timeout=2)
    assert adapter.manifest["adapter"]["name"] == "broken harness"
    with pytest.raises(HarnessBroken) as broken:
        adapter.open(BackendOptions())
    text = str(broken.value)
    assert text.startswith("KB_HARNESS_BROKEN: harness open (request 2): ")
    assert says in text
    assert broken.value.deadline == (2 if mode == "hang" else None)
    assert f"broken harness: {mode} on open" in text + transport.log_tail()
    assert transport.process.poll() is not None, "the broken harness was left running"
    with pytest.raises(HarnessBroken, match="harness close"):
        adapter.request("close", {"backend": "b1"})


def test_a_run_against_a_broken_harness_is_never_a_pass(tmp_path: Path) -> None:
    """The selected test fails with the call named; a sound harness passes it (control)."""
    broken = runner.run_suites(
        harness=f"{sys.executable} {BROKEN} hang", call_timeout=2, select=["leak-01[list]"], seed=1
    )
    assert broken.verdict == "fail"
    [test] = broken.report["tests"]
    assert test["status"] in ("fail", "error")
    assert "broken harness: hang on open" in broken.harness_log
    sound = runner.run_suites(REFERENCE, select=["leak-01[list]"], seed=1)
    assert sound.verdict == "pass", sound.output


def test_the_harness_log_is_kept_beside_the_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kbconform.cli import main

    monkeypatch.chdir(tmp_path)
    report = tmp_path / "report.json"
    code = main(
        ["run", "--harness", f"{sys.executable} {BROKEN} crash", "--level", "L0", "--report", str(report)]
    )
    assert code == 1
    log = Path(f"{report}.harness.log").read_text(encoding="utf-8")
    assert "broken harness: crash on open" in log
    quiet = tmp_path / "quiet.json"  # a served adapter that writes nothing on stderr: the log is there too
    assert (
        main(
            [
                "run",
                "--adapter",
                "kbconform_reference.adapter:memory",
                "--only",
                "contract-01",
                "--report",
                str(quiet),
            ]
        )
        == 0
    )
    assert Path(f"{quiet}.harness.log").exists()


@given(
    st.lists(
        st.binary(max_size=300) | st.text(alphabet="ae\u00e9\u20ac\U0001d11e\n").map(str.encode), max_size=30
    ),
    st.sampled_from([16, 64, 1000]),
    st.integers(1, 500),
)
def test_the_log_tail_each_answer_reads_is_the_end_of_the_kept_log(
    chunks: list[bytes], limit: int, last: int
) -> None:
    """The tail a call's answer carries, decoded from the last bytes only, is the last
    characters of the whole log as kept (its head, what was cut, its tail), split characters and
    bytes that are not UTF-8 included."""
    kept = _BoundedLog(limit)
    for chunk in chunks:
        kept.write(chunk)
    assert kept.text(last) == kept.text()[-last:]


def test_one_request_at_a_time(tmp_path: Path) -> None:
    """A request sent while another is unanswered (its caller abandoned it at the deadline)
    breaks the harness instead of reading the earlier request's answer."""
    transport = StdioTransport([sys.executable, str(BROKEN), "hang"], tmp_path / "log")
    adapter = HarnessAdapter(transport, timeout=30)
    stuck = threading.Thread(target=lambda: _swallow(adapter.open, BackendOptions()), daemon=True)
    stuck.start()
    stuck.join(1)
    with pytest.raises(HarnessBroken, match="while an earlier request was still unanswered"):
        adapter.request("close", {"backend": "b1"})
    stuck.join(10)
    assert not stuck.is_alive()


def _swallow(call: Any, *args: Any) -> None:
    with contextlib.suppress(HarnessBroken):
        call(*args)
