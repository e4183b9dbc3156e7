"""Chroma's Python server behind harnesses/chroma_server: its configuration files in Chroma's
shape, every departure its README lists held by a probe that shows the server's own answer (and
the README listing exactly those), and the standalone reproductions in advisories/chroma/ still
reproducing on the installed release. tests/harness/test_library_harnesses.py re-runs its
recorded verdict and replays each cause's transcript.

The probes and reproductions start the server from the harness's virtualenv
(``harnesses/chroma_server/install``, about 2 minutes the first time): the slow tier.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from kbconform.profiles.store_tenancy.protocol import PLAN
from tests.harness.installs import run_install

ROOT = Path(__file__).resolve().parents[2]
FOLDER = ROOT / "harnesses" / "chroma_server"
ADVISORIES = ROOT / "advisories" / "chroma"
OPEN = {"spoofMode": None, "revisionMap": None, "faults": False}
ALICE = PLAN["users"]["alice"]["token"]
ACME = {"tenant": "kbst-acme", "database": "main"}

Answer = dict[str, Any]
Probe = tuple[list[tuple[str, dict[str, Any]]], Callable[[Answer], bool]]


def _install() -> None:
    run_install(FOLDER / "install", 900)


def _session(probes: dict[str, list[tuple[str, dict[str, Any]]]]) -> dict[str, Answer]:
    """The harness's last answer to each probe's requests, all in one session on backend b1 (one
    server start), each probe after a provisionStore of its own (which empties the databases)."""
    _install()
    plan = {"plan": json.loads(json.dumps(PLAN))}
    steps: list[tuple[str | None, str, dict[str, Any]]] = []
    for what, requests in probes.items():
        steps += [(None, "provisionStore", plan), *((what, op, params) for op, params in requests)]
    lines = [
        {"id": 1, "op": "hello", "params": {"protocol": "harness-v1"}},
        {"id": 2, "op": "open", "params": OPEN},
        *(
            {"id": n, "op": op, "params": {"backend": "b1", **params}}
            for n, (_, op, params) in enumerate(steps, 3)
        ),
        {"id": len(steps) + 3, "op": "shutdown", "params": {}},
    ]
    done = subprocess.run(
        [str(FOLDER / "harness")],
        input="".join(json.dumps(line) + "\n" for line in lines),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    answers = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    assert len(answers) == len(lines), f"{done.stdout}\n{done.stderr[-3000:]}"
    provisioned = [a for (what, _, _), a in zip(steps, answers[2:-1], strict=True) if what is None]
    assert all("result" in a for a in provisioned), provisioned
    return {what: a for (what, _, _), a in zip(steps, answers[2:-1], strict=True) if what is not None}


def _error(answer: Answer, code: str, *words: str) -> bool:
    error = answer.get("error") or {}
    return error.get("code") == code and all(word in error.get("message", "") for word in words)


def _create(name: str, metadata: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
    return ("createCollection", {"credential": ALICE, **ACME, "name": name, "metadata": metadata or {}})


def _list(credential: object = ALICE) -> tuple[str, dict[str, Any]]:
    return ("listCollections", {"credential": credential, **ACME, "limit": None, "offset": 0})


#: Each departure README.md lists (a phrase of its item) and the probe showing it is as listed:
#: the server's own answer, or the harness's where the departure says no request is made.
DEPARTURES: dict[str, Probe] = {
    "An operator user is added": (
        [_create("notes"), ("provisionStore", {"plan": json.loads(json.dumps(PLAN))}), _list()],
        lambda a: a.get("result") == {"collections": []},
    ),
    "`createCollection`'s empty metadata": (
        [_create("notes", {})],
        lambda a: set(a.get("result", {})) == {"id"},
    ),
    "A value that is not a string": (
        [_list(7)],
        lambda a: _error(a, "KB_UNAUTHENTICATED", "HTTP 403", "AuthError"),
    ),
    "A token an HTTP client cannot put in a header": (
        [_list(ALICE + "\n")],
        lambda a: _error(a, "KB_UNAUTHENTICATED", "cannot be sent"),
    ),
}
#: What crosses as sent, answered by the server in its own words (no departure).
PASSED: dict[str, Probe] = {
    "a collection's metadata crosses as sent and comes back": (
        [
            _create("notes", {"topic": "a"}),
            ("getCollection", {"credential": ALICE, **ACME, "name": "notes"}),
        ],
        lambda a: a["result"]["collection"]["metadata"] == {"topic": "a"},
    ),
    "a name Chroma refuses is refused by Chroma": (
        [_create("x")],
        lambda a: _error(a, "KB_STORE_INVALID", "HTTP 400", "Expected a name containing 3-512 characters"),
    ),
}


def _listed() -> list[str]:
    text = (FOLDER / "README.md").read_text(encoding="utf-8")
    section = text.split("## Departures", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^- (.+)$", section, re.MULTILINE)


def test_the_readme_lists_exactly_the_departures_held_here() -> None:
    """Every departure the README lists is held by a probe here, and every probe's is listed."""
    listed = _listed()
    assert len(listed) == len(DEPARTURES), f"README lists {listed}; held here: {list(DEPARTURES)}"
    for phrase in DEPARTURES:
        assert any(phrase in item for item in listed), f"no departure {phrase!r} in {listed}"


def test_the_configuration_files_are_in_chromas_shape() -> None:
    """The credentials file has Chroma's token provider's shape (users with id, role, tenant,
    databases, tokens) and the authorization file SimpleRBAC's (roles_mapping of actions, users
    with a role), for names YAML would read otherwise (a number, `yes`, a colon)."""
    sys.path.insert(0, str(FOLDER))
    try:
        import chroma_server as server  # a module of the harness's folder, standard library only
    finally:
        sys.path.remove(str(FOLDER))
    users = [
        server.User("alice", "tok: a", "kbst-acme", ("main", "archive"), "kbst-alice"),
        server.User("007", "yes", "*", ("*",), "kbst-007"),
    ]
    creds = yaml.safe_load(server.credentials_yaml(users))
    assert creds == {
        "users": [
            {
                "id": "alice",
                "role": "kbst-alice",
                "tenant": "kbst-acme",
                "databases": ["main", "archive"],
                "tokens": ["tok: a"],
            },
            {"id": "007", "role": "kbst-007", "tenant": "*", "databases": ["*"], "tokens": ["yes"]},
        ]
    }
    authz = yaml.safe_load(server.authz_yaml(users, {"kbst-alice": ["collection:add"], "kbst-007": []}))
    assert authz == {
        "roles_mapping": {"kbst-alice": {"actions": ["collection:add"]}, "kbst-007": {"actions": []}},
        "users": [{"id": "alice", "role": "kbst-alice"}, {"id": "007", "role": "kbst-007"}],
    }


@pytest.fixture(scope="module")
def answers() -> dict[str, Answer]:
    """Every probe's last answer, from one harness session."""
    return _session({what: requests for what, (requests, _) in {**DEPARTURES, **PASSED}.items()})


@pytest.mark.slow
@pytest.mark.installs("chroma_server")
@pytest.mark.parametrize("what", [*DEPARTURES, *PASSED])
def test_each_departure_and_pass_through_shows_the_servers_answer(
    what: str, answers: dict[str, Answer]
) -> None:
    """The probe's requests through the harness are answered as the README says."""
    shows = {**DEPARTURES, **PASSED}[what][1]
    assert shows(answers[what]), f"{what}: {answers[what]}"


def _reproduce(script: str) -> tuple[int, dict[str, Any]]:
    """Runs advisories/chroma/SCRIPT with this interpreter (the server in the harness's venv)."""
    _install()
    done = subprocess.run(
        [sys.executable, str(ADVISORIES / script), "--json"]
        if script.startswith("repro_cross")
        else [sys.executable, str(ADVISORIES / script)],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode in (0, 1), f"{script} could not run:\n{done.stdout}\n{done.stderr[-3000:]}"
    return done.returncode, json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow
@pytest.mark.installs("chroma_server")
def test_the_cross_tenant_reproduction_still_reproduces_on_the_pinned_release() -> None:
    """On chromadb 1.5.9, bob (tenant_b) reads and writes alice's collection (tenant_a) by its id
    under his own path and on v1, and by naming her tenant; no token and an unknown one are
    refused, and alice's own call runs (the controls)."""
    status, summary = _reproduce("repro_cross_tenant.py")
    assert summary["chroma_version"] == "1.5.9"
    reached = set(summary["cross_tenant_reached"])
    for api in ("v2-own-path", "v1"):
        assert {
            f"{api}:{action}" for action in ("get", "count", "query", "add", "update", "delete")
        } <= reached
    assert {"v2-victim-path:list", "v2-victim-path:get-by-name"} <= reached
    assert "v2-own-path:get-by-id" not in reached  # the one route that checks the path
    assert summary["controls"] == {"no-token": 403, "unknown-token": 403, "alice-own-count": 200}
    assert "bob-add-v2-own-path" in summary["alice_reads_after"]["ids"]
    assert status == 0


@pytest.mark.slow
@pytest.mark.installs("chroma_server")
def test_the_rust_server_takes_no_authentication() -> None:
    """``chroma run`` answers with no token while the Python server's authentication settings are
    set (the kit has no credential to judge on it), and reads a collection by its id under another
    tenant's path."""
    status, summary = _reproduce("repro_rust_no_auth.py")
    assert summary["list_without_token"] == 200
    assert summary["create_tenant_without_token"] == 200
    assert summary["get_by_id_under_another_tenant"] == 200
    assert summary["documents_under_another_tenant"] == ["alice secret"]
    assert summary["by_id_route_under_another_tenant"] == 404  # the route that checks the path
    assert status == 0


@pytest.mark.slow
@pytest.mark.installs("chroma_server")
def test_the_v1_route_gives_every_test_the_v2_verdicts_status() -> None:
    """Judged through the v1 API (``KBCONFORM_CHROMA_ROUTE=v1``), the server gives every test the
    status verdict.json records for v2 with the same seed, and the manifest names the route."""
    from kbconform import runner
    from tests.harness.installs import load_script

    recorded = json.loads((FOLDER / "verdict.json").read_text(encoding="utf-8"))
    _install()
    outcome = runner.run_suites(
        harness=f"env KBCONFORM_CHROMA_ROUTE=v1 {FOLDER / 'harness'}", seed=recorded["seed"], shrink=False
    )
    assert outcome.problems == (), "\n".join(outcome.problems) + outcome.output[-4000:]
    assert outcome.report is not None
    assert outcome.report["manifest"]["config"]["route"] == "v1"
    recorder = load_script(ROOT / "harnesses" / "record_verdict.py")
    changed = recorder.changes(recorded, recorder.verdict_of(outcome.report, "chroma_server"))
    assert not changed, "\n".join(changed)
