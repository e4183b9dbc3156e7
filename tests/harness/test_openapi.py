"""harness-v1 over HTTP against its OpenAPI document: Schemathesis drives the reference's server.

The document (``schemas/harness-v1.openapi.json``) is generated from the harness-v1 schema
(``kbconform.harness._openapi``), and the shipped file must be what the generator writes today.
After changing the schema or the generator, rewrite it with
``kbconform schema harness-v1 --openapi > schemas/harness-v1.openapi.json`` (or run this module
with ``KBCONFORM_UPDATE_OPENAPI=1``).

Three servers are driven, one per isolation profile, each for the module (``kbconform serve
--http``, in a scratch folder): the reference (memory store), a tenant-namespace adapter, and
the in-memory project-pool and kb-grant adapters of the plugin's tests
(``tests/plugin/pool_adapter.py``, ``tests/plugin/grant_adapter.py``). Schemathesis sends each every
operation but ``shutdown`` valid and invalid bodies (positive and negative generation, its
coverage and fuzzing phases) and checks every answer: no 5xx, a declared status code and content
type, a body the response schema accepts, an invalid body refused with 400, 405 with ``Allow``
for another method. Then its stateful phase follows the document's links: ``open`` -> every
operation on the backend it returned, ``ingest`` -> ``get`` of the chunk it stored,
``createProject`` -> ``startSession`` and ``assignSession`` in that project, ``startSession`` ->
every operation on that session, ``createTenant`` -> ``createKb`` and ``listKbs`` as that tenant,
``createKb`` -> every operation on that knowledge base, as its owner. ``shutdown`` ends the
server it is sent to, so it is tested on a server of its own: invalid shutdowns are refused, a
valid one is answered and the server exits 0.

A valid body of an operation of the other profile, naming a backend handle that ``open`` did not
return (or that ``close`` released), or asking for faults on a backend opened without them, is
refused with 400 ``KB_HARNESS_REQUEST_INVALID`` by design. Schemathesis cannot know which
handles are live, so its "valid data is accepted" check is replaced here by a stricter one that
can: this module follows the handles from the answers and holds each valid body to exactly one
status (400 naming the profile for another profile's operation; 200 on a live backend, 400
naming the handle otherwise). Valid bodies are steered onto live backends three times in four, a
batch to ingest onto a valid record one time in two, a scan onto a small workspace, a
project or session name onto one the server knows one time in two, and (kb-grant) a caller,
grantee, knowledge base, store, model, vector and batch onto ones the server knows one time in
two, so that the backend really runs.

The budget follows the Hypothesis profile (tests/conftest.py): the default one (CI) gives each
operation 25 examples and the stateful phase 25 scenarios of up to 10 calls, on each server.
"""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import hypothesis
import pytest

# 4.32 merges a link's requestBody into the body it generates (4.31 and older replace params
# whole); it needs Python 3.11, and the test extra installs it there only.
pytest.importorskip("schemathesis", minversion="4.32", reason="needs Schemathesis 4.32+ (Python 3.11+)")

import requests
import schemathesis
from schemathesis import Case, GenerationMode, Response

from kbconform import runner
from kbconform._resources import data_dir
from kbconform.adapter import load_adapter
from kbconform.cli import main
from kbconform.harness import Dispatcher
from kbconform.harness._openapi import openapi, render
from kbconform.harness._wire import OPERATIONS, REQUEST_INVALID, serves
from kbconform.profiles.tenant_namespace.data import record

#: Schemathesis drives an HTTP server of each profile here: the slow tier.
pytestmark = pytest.mark.slow

REFERENCE = "kbconform_reference.adapter:memory"
POOL = "tests.plugin.pool_adapter:make"
GRANT = "tests.plugin.grant_adapter:make"
#: The adapter served for each isolation profile.
ADAPTERS = {"tenant-namespace": REFERENCE, "project-pool": POOL, "kb-grant": GRANT}
#: The kb-grant adapter's stores and models (tests/plugin/grant_adapter.py's MANIFEST: dimension 6).
STORES, MODELS = ("north", "south"), ("m-6a", "m-6b")
ROOT = Path(__file__).resolve().parents[2]
DOCUMENT = data_dir("schemas") / "harness-v1.openapi.json"
#: Examples per operation (valid and invalid together), and scenarios of the stateful phase, of
#: at most STEPS calls each: a quarter of the profile's max_examples (25 by default, 500 thorough).
BUDGET = max(10, hypothesis.settings().max_examples // 4)
STEPS = 10
#: The operations on a backend: their params name it (params.backend).
ON_A_BACKEND = tuple(
    op for op in OPERATIONS if "backend" in openapi()["components"]["schemas"][f"{op}Params"]["properties"]
)
#: The operations on a session (params.session), and those naming a project (params.project).
ON_A_SESSION = tuple(
    op for op in OPERATIONS if "session" in openapi()["components"]["schemas"][f"{op}Params"]["properties"]
)
ON_A_PROJECT = tuple(
    op for op in OPERATIONS if "project" in openapi()["components"]["schemas"][f"{op}Params"]["properties"]
)
#: The kb-grant operations taking a caller, and the params naming a knowledge base.
AS_A_TENANT = tuple(
    op for op in OPERATIONS if "caller" in openapi()["components"]["schemas"][f"{op}Params"]["properties"]
)
KB_PARAMS = ("kb", "source")
SETTINGS = hypothesis.settings(
    max_examples=BUDGET,
    stateful_step_count=STEPS,
    deadline=None,
    database=None,
    suppress_health_check=list(hypothesis.HealthCheck),
)

CONFIG = schemathesis.Config.from_dict(
    {
        "generation": {"mode": "all", "max-examples": BUDGET, "database": "none"},
        # Replaced by the stricter, handle-aware Server.expected (see the module docstring).
        "checks": {"positive_data_acceptance": {"enabled": False}},
        # The stateful phase follows the document's links only: links Schemathesis would infer
        # (from operations named like one resource, addMemory and getMemory) are not the
        # document's, and would change the fixed sequence below and the count of links.
        "phases": {"stateful": {"inference": {"algorithms": []}}},
    }
)
WHOLE = schemathesis.openapi.from_dict(openapi(), config=CONFIG)
SCHEMA = WHOLE.exclude(operation_id="shutdown")


def _post(url: str, path: str, body: bytes, headers: dict[str, str] | None = None) -> tuple[int, Any]:
    """One request on a connection of its own, as the kit's client sends it: status and body."""
    host, port = url.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        connection.request("POST", path, body=body, headers=headers or {"Content-Type": "application/json"})
        answer = connection.getresponse()
        return answer.status, json.loads(answer.read())
    finally:
        connection.close()


def _request(url: str, op: str, params: dict[str, Any], request_id: int = 1) -> tuple[int, Any]:
    return _post(url, f"/v1/{op}", json.dumps({"id": request_id, "op": op, "params": params}).encode())


def _is_positive(case: Case[Any]) -> bool:
    return case.meta is not None and case.meta.generation.mode == GenerationMode.POSITIVE


def _message(case: Case[Any]) -> dict[str, Any] | None:
    """The case's body when it is a POST of an object with object params, else None."""
    body: Any = case.body
    if case.method != "POST" or not isinstance(body, dict) or not isinstance(body.get("params"), dict):
        return None
    return body


class Server:
    """An adapter served over HTTP (the reference, the pool adapter for ``profile`` project-pool,
    the grant adapter for kb-grant), and the backends, projects, sessions, tenants and knowledge
    bases it holds, as its answers show."""

    def __init__(self, folder: Path, profile: str = "tenant-namespace") -> None:
        self.folder, self.profile = folder, profile
        command = runner.serve_command(ADAPTERS[profile], http=True)
        path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
        environment = {**os.environ, "PYTHONPATH": path}  # the pool and grant adapters are modules of tests/
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, cwd=folder, env=environment)
        assert self.process.stdout is not None
        self.url = self.process.stdout.readline().decode().strip()
        assert self.url.startswith("http://127.0.0.1:"), self.url
        #: Each live backend's handle, and whether it was opened with faults.
        self.live: dict[str, bool] = {}
        #: The projects created and the sessions started, by backend handle.
        self.projects: dict[str, list[str]] = {}
        self.sessions: dict[str, list[str]] = {}
        #: The tenants created and the knowledge bases made, by backend handle (kb-grant).
        self.tenants: dict[str, list[str]] = {}
        self.kbs: dict[str, list[str]] = {}
        self.workspace = folder / "workspace"
        (self.workspace / "docs").mkdir(parents=True)
        (self.workspace / "docs" / "a.md").write_text("# A\n\nalpha words\n", encoding="utf-8")

    def open(self, faults: bool) -> str:
        status, answer = _request(
            self.url, "open", {"spoofMode": "overwrite", "revisionMap": None, "faults": faults}
        )
        assert status == 200, answer
        handle: str = answer["result"]["backend"]
        self.live[handle] = faults
        return handle

    def steer(self, case: Case[Any], *, handles: bool) -> None:
        """Point a valid body where it does something: with ``handles``, onto a live backend
        three times in four (the stateful phase has the links for that); a batch to ingest, one
        time in two, onto a valid record of the principal's tenant; a scan onto this module's
        small workspace (never a folder of the machine) or a missing one; a project or a session,
        one time in two, onto one the backend knows. Each choice hangs on the body itself, so
        that a replayed example is steered alike."""
        body = _message(case)
        if body is None or not _is_positive(case):
            return
        params, op = body["params"], body["op"]
        draw = zlib.crc32(json.dumps(body, sort_keys=True).encode())
        if handles and op in ON_A_BACKEND:
            while len(self.live) < 3:
                self.open(faults=len(self.live) % 2 == 0)
            if draw % 4:
                params["backend"] = sorted(self.live)[draw % len(self.live)]
        principal = params.get("principal")
        tenant = principal.get("tenantId") if isinstance(principal, dict) else None
        if op == "ingest" and isinstance(tenant, str) and draw % 2:  # a malformed principal may lack one
            params["records"] = [record(f"docs/{draw}.md", "alpha words", tenant=tenant)]
        if op == "scan":
            params["root"] = str(self.workspace if draw % 4 else self.folder / "missing")
            params["config"] = None if draw % 3 else str(self.folder / "no-such.toml")
        projects = self.projects.get(params.get("backend", ""), [])
        if op in ("startSession", "assignSession") and draw % 4 and (projects or op == "startSession"):
            params["project"] = projects[draw % len(projects)] if projects else None
        sessions = self.sessions.get(params.get("backend", ""), [])
        if op in ON_A_SESSION and op != "startSession" and draw % 4 and sessions:
            params["session"] = sessions[draw % len(sessions)]
        if op in AS_A_TENANT and draw % 2:
            self._steer_grant(params, draw)

    def _steer_grant(self, params: dict[str, Any], draw: int) -> None:
        """A kb-grant body onto a tenant, a knowledge base, a store and a model the server knows,
        a vector of the adapter's dimension and a batch of one valid document."""
        tenants = self.tenants.get(params.get("backend", ""), [])
        kbs = self.kbs.get(params.get("backend", ""), [])
        if tenants:
            params["caller"] = tenants[draw % len(tenants)]
            if "grantee" in params:
                params["grantee"] = tenants[(draw // 2) % len(tenants)]
        for key in KB_PARAMS:
            if key in params and kbs:
                params[key] = kbs[draw % len(kbs)]
        if "kbs" in params and kbs:
            params["kbs"] = sorted({kbs[draw % len(kbs)], kbs[(draw // 3) % len(kbs)]})
        if "store" in params:
            params["store"] = STORES[draw % 2]
        if "model" in params:
            params["model"] = MODELS[(draw // 2) % 2]
        if "embedding" in params:
            params["embedding"] = [1.0, (draw % 7) / 7, 0.5, 0.0, 0.0, 0.0]
        if "limit" in params:
            params["limit"] = 1 + draw % 10
        if "documents" in params:
            params["documents"] = [
                {"text": f"words {draw}", "embedding": [0.5, 1.0, (draw % 5) / 5, 0.0, 0.0, 0.0]}
            ]

    def expected(self, case: Case[Any]) -> int | None:
        """The one status a valid body may get (None for the rest: Schemathesis's own checks)."""
        body = _message(case)
        if body is None or not _is_positive(case):
            return None
        op, params = body["op"], body["params"]
        if not serves(self.profile, op):
            return 400
        if op in ON_A_BACKEND and params["backend"] not in self.live:
            return 400
        if op == "fault" and not self.live[params["backend"]]:
            return 400
        return 200

    def observe(self, case: Case[Any], response: Response, expected: int | None) -> None:
        """Hold the answer to the expected status; follow the handles open and close give out."""
        body = _message(case)
        if expected is not None:
            assert response.status_code == expected, (expected, case.body, response.text)
        answer: Any = response.json() if response.status_code in (200, 400) else {}
        if expected == 400 and body is not None:
            assert answer["error"]["code"] == REQUEST_INVALID, answer
            handle = body["params"].get("backend")
            assert answer["error"]["message"] in (
                f"{body['op']} is not an operation of the {self.profile} profile (the manifest's "
                "isolationProfile)",
                f"no backend {handle!r}",
                f"backend {handle!r} was opened without faults",
            )
        if response.status_code == 200 and body is not None and "result" in answer:
            op, params = body["op"], body["params"]
            if op == "open":
                self.live[answer["result"]["backend"]] = params["faults"]
            if op == "close":
                del self.live[params["backend"]]
            if op == "createProject":
                self.projects.setdefault(params["backend"], []).append(params["project"])
            if op == "startSession":
                self.sessions.setdefault(params["backend"], []).append(params["session"])
            if op == "createTenant":
                self.tenants.setdefault(params["backend"], []).append(params["tenant"])
            if op in ("createKb", "copyKb"):
                self.kbs.setdefault(params["backend"], []).append(answer["result"]["id"])

    def stop(self) -> None:
        """Shut the server down, if it runs: it answers, then exits 0."""
        try:
            if self.process.poll() is None:
                assert _request(self.url, "shutdown", {}) == (200, {"id": 1, "result": {}})
                assert self.process.wait(timeout=20) == 0
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()
            assert self.process.stdout is not None
            self.process.stdout.close()


@pytest.fixture(scope="module", params=list(ADAPTERS))
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """An HTTP server for the module, one per isolation profile; at the end it must shut down
    cleanly."""
    served = Server(tmp_path_factory.mktemp("harness-http"), request.param)
    try:
        yield served
    finally:
        served.stop()


def test_the_shipped_document_is_the_generated_one() -> None:
    """schemas/harness-v1.openapi.json is what the generator writes (see the module docstring)."""
    if os.environ.get("KBCONFORM_UPDATE_OPENAPI") == "1":
        DOCUMENT.write_text(render(), encoding="utf-8")
    assert DOCUMENT.read_text(encoding="utf-8") == render(), (
        "schemas/harness-v1.openapi.json is not what kbconform.harness._openapi generates; rewrite it "
        "with: kbconform schema harness-v1 --openapi > schemas/harness-v1.openapi.json"
    )
    assert json.loads(render()) == openapi()


def test_kbconform_schema_harness_v1_openapi_prints_the_document(capsys: pytest.CaptureFixture[str]) -> None:
    """`kbconform schema harness-v1 --openapi` prints the document; another schema has none (exit 2)."""
    assert main(["schema", "harness-v1", "--openapi"]) == 0
    assert capsys.readouterr().out == render()
    assert main(["schema", "parsed-chunk-v1", "--openapi"]) == 2
    assert "schema harness-v1 --openapi" in capsys.readouterr().err


def test_the_document_has_a_post_per_operation_and_links_for_the_stateful_flow() -> None:
    """Each op's body is its request message, its 200 its response message; open links to every
    operation on a backend, ingest to get, createProject to the operations naming a project,
    startSession to those on a session, createTenant to createKb and listKbs, createKb to those on
    a knowledge base; Schemathesis reads every link."""
    document = openapi()
    assert document["openapi"] == "3.1.0"
    WHOLE.validate()  # against the OpenAPI 3.1 schema
    assert list(document["paths"]) == [f"/v1/{op}" for op in OPERATIONS]
    schemas = document["components"]["schemas"]
    for op in OPERATIONS:
        operation = document["paths"][f"/v1/{op}"]["post"]
        assert operation["operationId"] == op
        assert set(operation["responses"]) == {"200", "400"}
        request, response = schemas[f"{op}Request"], schemas[f"{op}Response"]
        assert request["properties"]["op"]["const"] == op
        assert request["properties"]["params"]["$ref"] == f"#/components/schemas/{op}Params"
        assert response["properties"]["result"]["$ref"] == f"#/components/schemas/{op}Result"
        assert response["properties"]["error"]["$ref"] == "#/components/schemas/error"
    assert "#/$defs/" not in json.dumps(document)
    assert set(ON_A_BACKEND) == set(OPERATIONS) - {"hello", "open", "shutdown"}
    assert set(ON_A_PROJECT) == {"createProject", "startSession", "assignSession"}
    links = document["paths"]["/v1/open"]["post"]["responses"]["200"]["links"]
    assert sorted(link["operationId"] for link in links.values()) == sorted(ON_A_BACKEND)
    for link in links.values():
        assert link["requestBody"] == {"params": {"backend": "{$response.body#/result/backend}"}}
    (get,) = document["paths"]["/v1/ingest"]["post"]["responses"]["200"]["links"].values()
    assert get["operationId"] == "get"
    assert get["requestBody"]["params"]["id"] == "{$response.body#/result/ids/0}"
    in_project = document["paths"]["/v1/createProject"]["post"]["responses"]["200"]["links"]
    assert sorted(link["operationId"] for link in in_project.values()) == sorted(
        set(ON_A_PROJECT) - {"createProject"}
    )
    for link in in_project.values():
        assert link["requestBody"]["params"]["project"] == "{$request.body#/params/project}"
    on_session = document["paths"]["/v1/startSession"]["post"]["responses"]["200"]["links"]
    assert sorted(link["operationId"] for link in on_session.values()) == sorted(
        set(ON_A_SESSION) - {"startSession"}
    )
    for link in on_session.values():
        assert link["requestBody"]["params"] == {
            "backend": "{$request.body#/params/backend}",
            "session": "{$request.body#/params/session}",
        }
    as_tenant = document["paths"]["/v1/createTenant"]["post"]["responses"]["200"]["links"]
    assert sorted(link["operationId"] for link in as_tenant.values()) == ["createKb", "listKbs"]
    for link in as_tenant.values():
        assert link["requestBody"]["params"]["caller"] == "{$request.body#/params/tenant}"
    on_kb = document["paths"]["/v1/createKb"]["post"]["responses"]["200"]["links"]
    naming_a_kb = [
        op
        for op in OPERATIONS
        if set(KB_PARAMS) & set(document["components"]["schemas"][f"{op}Params"]["properties"])
    ]
    assert sorted(link["operationId"] for link in on_kb.values()) == sorted(naming_a_kb)
    for link in on_kb.values():
        assert "{$response.body#/result/id}" in link["requestBody"]["params"].values()
        assert link["requestBody"]["params"]["caller"] == "{$request.body#/params/caller}"
    links = len(ON_A_BACKEND) + 1 + len(in_project) + len(on_session) + len(as_tenant) + len(on_kb)
    assert WHOLE.statistic.transitions.total == links


@SCHEMA.parametrize()
def test_every_operation_answers_as_the_document_says(case: Case[Any], server: Server) -> None:
    """Each answer has a declared status, content type and body; a valid body gets its one status."""
    server.steer(case, handles=True)
    expected = server.expected(case)
    response = case.call_and_validate(base_url=server.url)
    server.observe(case, response, expected)


def test_the_stateful_phase_follows_the_links(server: Server, tmp_path: Path) -> None:
    """Schemathesis chains calls along the links; every answer is checked as above. Some call
    on a backend a scenario opened must have been answered with a result (the open link works).
    On a server of its own: the module's server holds what the tests before it left (backend
    handles, projects, sessions), which the steering hashes, so the fixed sequence below would
    depend on which tests ran before it in the same worker."""
    fresh = Server(tmp_path, server.profile)
    try:
        _follow_the_links(fresh)
    finally:
        fresh.stop()


def _follow_the_links(server: Server) -> None:
    opened: set[str] = set()
    results_on_opened: list[str] = []

    class Flow(SCHEMA.as_state_machine()):  # type: ignore[misc]
        expected: int | None = None

        def get_call_kwargs(self, case: Case[Any]) -> dict[str, Any]:
            return {"base_url": server.url}

        def before_call(self, case: Case[Any]) -> None:
            server.steer(case, handles=False)
            self.expected = server.expected(case)

        def after_call(self, response: Response, case: Case[Any]) -> None:
            super().after_call(response, case)
            server.observe(case, response, self.expected)
            body = _message(case)
            answer: Any = response.json() if response.status_code == 200 else {}
            if body is None or "result" not in answer:
                return
            if body["op"] == "open":
                opened.add(answer["result"]["backend"])
            elif body["params"].get("backend") in opened:
                results_on_opened.append(body["op"])

    # One fixed sequence of scenarios: the control below then holds or fails on every run, not
    # on a draw (random scenarios reached no result on an opened kb-grant backend about 1 in 8).
    # Six times the budget: each profile's operations are a few of the many open links to (55
    # since store-tenancy's joined), and twice the budget no longer reached a result on an
    # opened kb-grant backend.
    Flow.run(settings=hypothesis.settings(SETTINGS, derandomize=True, max_examples=6 * BUDGET))
    assert opened, "no scenario opened a backend"
    assert results_on_opened, "no call on a backend a scenario opened was answered with a result"


def _follow(link: dict[str, Any], request: dict[str, Any]) -> dict[str, Any]:
    """The params a link fills from the request it starts at (``{$request.body#/params/x}``)."""
    prefix = "{$request.body#/params/"
    filled = link["requestBody"]["params"].items()
    assert all(value.startswith(prefix) and value.endswith("}") for _, value in filled), link
    return {key: request["params"][value[len(prefix) : -1]] for key, value in filled}


def test_the_project_pool_links_carry_a_project_and_a_session_that_work(tmp_path: Path) -> None:
    """Followed by hand on the pool adapter: createProject's links start a session in the
    project it made; startSession's reach that session on every operation on a session, each
    answered with a result (the session is the one started, on its backend)."""
    served = Server(tmp_path, "project-pool")
    try:
        paths = openapi()["paths"]
        backend = served.open(faults=False)
        made = {"backend": backend, "project": "apollo"}
        assert _request(served.url, "createProject", made)[1] == {"id": 1, "result": {}}
        created = {"id": 1, "op": "createProject", "params": made}
        links = paths["/v1/createProject"]["post"]["responses"]["200"]["links"]
        start = {**_follow(links["startSessionInTheProject"], created), "session": "s1"}
        assert start == {"backend": backend, "project": "apollo", "session": "s1"}
        assert _request(served.url, "startSession", start)[1] == {"id": 1, "result": {}}
        started = {"id": 1, "op": "startSession", "params": start}
        rest = {
            "writeEpisode": {"text": "words"},
            "extractEntities": {"entities": [{"name": "Ada", "type": "person", "notes": "first"}]},
            "searchEpisodes": {"text": "words", "limit": 5},
            "searchEntities": {"text": "Ada", "limit": 5},
            "assignSession": {"project": "apollo"},
            "removeSession": {},
        }
        links = paths["/v1/startSession"]["post"]["responses"]["200"]["links"]
        assert sorted(link["operationId"] for link in links.values()) == sorted(rest)
        for link in links.values():
            op = link["operationId"]
            status, answer = _request(served.url, op, {**_follow(link, started), **rest[op]})
            assert (status, "result" in answer) == (200, True), (op, answer)
    finally:
        served.stop()


def _fill(link: dict[str, Any], request: dict[str, Any], response: dict[str, Any]) -> dict[str, Any]:
    """The params a link fills from the request it starts at and its answer
    (``{$request.body#/params/x}``, ``{$response.body#/result/x}``)."""
    sources = {"{$request.body#/params/": request["params"], "{$response.body#/result/": response["result"]}
    filled: dict[str, Any] = {}
    for key, value in link["requestBody"]["params"].items():
        [(prefix, source)] = [
            (prefix, source) for prefix, source in sources.items() if value.startswith(prefix)
        ]
        filled[key] = source[value[len(prefix) : -1]]
    return filled


def test_the_kb_grant_links_carry_a_tenant_and_a_kb_that_work(tmp_path: Path) -> None:
    """Followed by hand on the grant adapter: createTenant's links call createKb and listKbs as
    the tenant it made; createKb's reach the knowledge base it made, as its owner, on every
    operation on a knowledge base, each answered with a result."""
    served = Server(tmp_path, "kb-grant")
    try:
        paths = openapi()["paths"]
        backend = served.open(faults=False)
        for tenant in ("acme", "beta"):
            made = {"id": 1, "op": "createTenant", "params": {"backend": backend, "tenant": tenant}}
            assert _request(served.url, "createTenant", made["params"]) == (200, {"id": 1, "result": {}})
        links = paths["/v1/createTenant"]["post"]["responses"]["200"]["links"]
        listed = _fill(links["listKbsAsTheTenant"], made, {"result": {}})
        assert _request(served.url, "listKbs", listed) == (200, {"id": 1, "result": {"kbs": []}})
        create = {
            **_fill(links["createKbAsTheTenant"], made, {"result": {}}),
            "store": "north",
            "model": "m-6a",
        }
        assert create["caller"] == "beta"
        status, created = _request(served.url, "createKb", create)
        assert status == 200, created
        rest = {
            "shareKb": {"grantee": "acme"},
            "revokeKb": {"grantee": "acme"},
            "ingestDocuments": {
                "documents": [{"text": "words", "embedding": [1.0, 0.0, 0.0, 0.0, 0.0, 0.0]}]
            },
            "getKb": {},
            "copyKb": {"store": "south"},
            "moveKb": {"store": "south"},
            "deleteKb": {},
        }
        links = paths["/v1/createKb"]["post"]["responses"]["200"]["links"]
        assert sorted(link["operationId"] for link in links.values()) == sorted(rest)
        request = {"id": 1, "op": "createKb", "params": create}
        for op in rest:  # in this order: delete last
            [link] = [link for link in links.values() if link["operationId"] == op]
            status, answer = _request(served.url, op, {**_fill(link, request, created), **rest[op]})
            assert (status, "result" in answer) == (200, True), (op, answer)
    finally:
        served.stop()


def test_the_http_layer_answers_what_the_document_cannot_describe(server: Server) -> None:
    """Another path, a bad Content-Length, JSON nested past Python's limit, an id written 7.0:
    each gets its answer (404, 400, 400, the id echoed as 7), and the server keeps serving."""
    hello = {"id": 7.0, "op": "hello", "params": {"protocol": "harness-v1"}}
    assert _post(server.url, "/hello", json.dumps(hello).encode())[0] == 404
    assert _post(server.url, "/v1/nope", b"not json")[0] == 404
    status, answer = _post(server.url, "/v1/hello", b"{}", {"Content-Length": "-1"})
    assert (status, answer["error"]["code"]) == (400, REQUEST_INVALID)
    deep = b'{"id": 1, "op": "hello", "params": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    status, answer = _post(server.url, "/v1/hello", deep)
    assert (status, answer["id"], answer["error"]["code"]) == (400, None, REQUEST_INVALID)
    status, answer = _post(server.url, "/v1/hello", json.dumps(hello).encode())
    assert (status, answer["id"]) == (200, 7)
    assert json.dumps(answer["id"]) == "7"


def test_a_key_error_of_the_backend_is_its_failure_not_an_unknown_handle(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Only the handle lookup answers "no backend" (KB_HARNESS_REQUEST_INVALID): a KeyError the
    backend raises is an internal failure of the backend, as any other exception."""
    adapter, manifest = load_adapter(REFERENCE)
    dispatcher = Dispatcher(adapter, manifest)
    open_params = {"spoofMode": "overwrite", "revisionMap": None, "faults": False}
    handle = dispatcher.answer({"id": 1, "op": "open", "params": open_params})["result"]["backend"]
    backend = dispatcher.backends[handle][0]

    def broken(*_: object) -> int:
        raise KeyError("tenantId")

    monkeypatch.setattr(backend, "count", broken)
    principal: dict[str, Any] = {
        "tenantId": "acme",
        "agentIdentity": None,
        "role": "member",
        "readableNamespaces": [],
    }
    answer = dispatcher.answer(
        {"id": 2, "op": "count", "params": {"backend": handle, "principal": principal}}
    )
    assert answer["error"]["code"] == "KB_HARNESS_INTERNAL", answer
    unknown = dispatcher.answer(
        {"id": 3, "op": "count", "params": {"backend": "b99", "principal": principal}}
    )
    assert unknown["error"] == {"code": REQUEST_INVALID, "message": "no backend 'b99'"}
    faultless = dispatcher.answer({"id": 4, "op": "fault", "params": {"backend": handle, "plan": None}})
    assert faultless["error"] == {
        "code": REQUEST_INVALID,
        "message": f"backend {handle!r} was opened without faults",
    }
    dispatcher.answer({"id": 5, "op": "shutdown", "params": {}})


def test_shutdown_refuses_invalid_bodies_then_answers_and_the_server_exits_0(tmp_path: Path) -> None:
    """On a server of its own: invalid shutdowns are refused (400) and the server stays up; a
    valid one is answered (200, {}) on a connection the client keeps open, and the server
    exits 0 all the same."""
    served = Server(tmp_path)
    try:
        operation = WHOLE["/v1/shutdown"]["POST"]

        @hypothesis.given(case=operation.as_strategy(generation_mode=GenerationMode.NEGATIVE))
        @SETTINGS
        def refused(case: Case[Any]) -> None:
            response = case.call_and_validate(base_url=served.url)
            assert response.status_code == 400, (case.body, response.text)
            assert served.process.poll() is None

        refused()
        with requests.Session() as kept_alive:
            case = operation.Case(body={"id": 7, "op": "shutdown", "params": {}})
            response = case.call_and_validate(base_url=served.url, session=kept_alive)
            assert (response.status_code, response.json()) == (200, {"id": 7, "result": {}})
            assert served.process.wait(timeout=20) == 0
    finally:
        served.stop()
