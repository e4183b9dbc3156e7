"""The harness runtime (``kbconform/_harness_runtime``): kbharness.py and kbharness.mjs answer
the same requests alike, for a harness holding only its operations: ids echoed (``2.0`` as 2,
a bool as null), errors as data, backend handles kept, the operations of other profiles and
unknown ones refused, missing params named from the schema, the harness's own exceptions
answered KB_HARNESS_INTERNAL, and ``shutdown`` answered, then the end."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

RUNTIME = Path(__file__).resolve().parents[2] / "kbconform" / "_harness_runtime"

PYTHON_HARNESS = f"""
import sys
sys.path.insert(0, {str(RUNTIME)!r})
import kbharness
kbharness.claim_stdout()
print("a library printing: never on stdout")


class Tiny:
    manifest = {{"isolationProfile": "memory-scope", "concurrency": "threads"}}

    def open(self, params, handle):
        return {{"handle": handle}}

    def close(self, backend):
        pass

    def addMemory(self, backend, params):
        return {{"id": backend["handle"]}}

    def getMemory(self, backend, params):
        raise kbharness.HarnessError("KB_NOT_FOUND", "no memory " + params["id"])

    def listMemories(self, backend, params):
        raise TypeError("boom")

    together = __import__("threading").Barrier(2, timeout=20)

    def searchMemories(self, backend, params):
        self.together.wait()  # answers only while another search is in flight
        return {{"hits": []}}


kbharness.serve(Tiny(), name="tiny")
"""

NODE_HARNESS = f"""
import * as kbharness from {json.dumps((RUNTIME / "kbharness.mjs").as_uri())};
kbharness.claimStdout();
console.log('a library printing: never on stdout');
await kbharness.serve({{
    manifest: {{isolationProfile: 'memory-scope', concurrency: 'threads'}},
    open(params, handle) {{ return {{handle}}; }},
    close(backend) {{}},
    addMemory(backend, params) {{ return {{id: backend.handle}}; }},
    getMemory(backend, params) {{
        throw new kbharness.HarnessError('KB_NOT_FOUND', 'no memory ' + params.id);
    }},
    listMemories(backend, params) {{ throw new TypeError('boom'); }},
    waiting: [],
    searchMemories(backend, params) {{
        // answers only while another search is in flight
        return new Promise((resolve, reject) => {{
            this.waiting.push(resolve);
            if (this.waiting.length === 2) this.waiting.splice(0).forEach(go => go({{hits: []}}));
            setTimeout(() => reject(new Error('no other search came')), 20000);
        }});
    }},
}}, {{name: 'tiny'}});
"""

REQUESTS = [
    {"id": 1, "op": "hello", "params": {"protocol": "harness-v1"}},
    {"id": 2.0, "op": "open", "params": {"spoofMode": "overwrite", "revisionMap": None, "faults": False}},
    {"id": 3, "op": "addMemory", "params": {"backend": "b1", "scope": {}, "text": "t", "metadata": None}},
    {"id": 4, "op": "getMemory", "params": {"backend": "b1", "scope": {}, "id": "x"}},
    {"id": 5, "op": "listMemories", "params": {"backend": "b1", "scope": {}}},
    {"id": 6, "op": "query", "params": {"backend": "b1"}},
    {"id": 7, "op": "frobnicate", "params": {}},
    {"id": True, "op": "hello", "params": {"protocol": "harness-v1"}},
    {"id": 8, "op": "fault", "params": {"backend": "b1", "plan": None}},
    {"id": 9, "op": "addMemory", "params": {"backend": "b2", "scope": {}, "text": "t", "metadata": None}},
    {"id": 10, "op": "addMemory", "params": {"backend": "b1"}},
    {"id": 11, "op": "close", "params": {"backend": "b1"}},
    {"id": 12, "op": "getMemory", "params": {"backend": "b1", "scope": {}, "id": "x"}},
    {"id": 13, "op": "shutdown", "params": {}},
    {"id": 14, "op": "hello", "params": {"protocol": "harness-v1"}},
]

INVALID = "KB_HARNESS_REQUEST_INVALID"
EXPECTED = [
    {
        "id": 1,
        "result": {
            "protocol": "harness-v1",
            "manifest": {"isolationProfile": "memory-scope", "concurrency": "threads"},
        },
    },
    {"id": 2, "result": {"backend": "b1"}},
    {"id": 3, "result": {"id": "b1"}},
    {"id": 4, "error": {"code": "KB_NOT_FOUND", "message": "no memory x"}},
    {"id": 5, "error": {"code": "KB_HARNESS_INTERNAL", "message": "TypeError: boom"}},
    {
        "id": 6,
        "error": {
            "code": INVALID,
            "message": "query is not an operation of the memory-scope profile "
            "(the manifest's isolationProfile)",
        },
    },
    {"id": 7, "error": {"code": INVALID}},
    {"id": None, "error": {"code": INVALID, "message": "the request's id is not an integer >= 0"}},
    {
        "id": 8,
        "error": {
            "code": INVALID,
            "message": "fault: the backend was opened without faults (fault-injection is not offered)",
        },
    },
    {"id": 9, "error": {"code": INVALID}},
    {"id": 10, "error": {"code": INVALID, "message": "addMemory: params lack scope, text, metadata"}},
    {"id": 11, "result": {}},
    {"id": 12, "error": {"code": INVALID}},
    {"id": 13, "result": {}},
]


def _served(command: list[str]) -> list[dict[str, Any]]:
    lines = "".join(json.dumps(request) + "\n" for request in REQUESTS)
    done = subprocess.run(command, input=lines, capture_output=True, text=True, timeout=60, check=True)
    assert "never on stdout" in done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def _shown(responses: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The responses, an unknown operation's and an unknown handle's message left out (they quote
    the value in each language's own way)."""
    shown = []
    for response in responses:
        if response.get("error") and response["id"] in (7, 9, 12):
            response = {"id": response["id"], "error": {"code": response["error"]["code"]}}
        shown.append(response)
    return shown


def test_the_python_runtime_answers_every_request_as_the_protocol_says(tmp_path: Path) -> None:
    """kbharness.py: every response as expected, none after shutdown."""
    script = tmp_path / "tiny.py"
    script.write_text(PYTHON_HARNESS, encoding="utf-8")
    assert _shown(_served([sys.executable, str(script)])) == EXPECTED


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not on PATH: no JavaScript to run")
def test_the_javascript_runtime_answers_as_the_python_one(tmp_path: Path) -> None:
    """kbharness.mjs: the same responses as kbharness.py."""
    script = tmp_path / "tiny.mjs"
    script.write_text(NODE_HARNESS, encoding="utf-8")
    assert _shown(_served(["node", str(script)])) == EXPECTED


SEARCH = {
    "op": "searchMemories",
    "params": {"backend": "b1", "scope": {}, "text": "t", "limit": 1, "where": None},
}


def _posted(url: str, request: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """The status and response of ``request`` sent as ``POST /v1/{op}`` to ``url``."""
    sent = urllib.request.Request(
        f"{url}/v1/{request['op']}",
        data=json.dumps(request).encode(),
        method="POST",
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(sent, timeout=30) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as refused:
        return refused.code, json.loads(refused.read())


def _served_over_http(command: list[str]) -> tuple[list[dict[str, Any]], list[int], list[Any]]:
    """The harness started with KBCONFORM_HARNESS_HTTP: the responses and statuses of REQUESTS
    (the unknown operation, which has no path, and those after shutdown left out), and of two
    searches sent at once before the shutdown."""
    env = {**os.environ, "KBCONFORM_HARNESS_HTTP": "127.0.0.1:0"}
    with subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as harness:
        try:
            url = harness.stdout.readline().strip()  # type: ignore[union-attr]
            assert url.startswith("http://127.0.0.1:"), url
            asked = [r for r in REQUESTS if r["op"] != "frobnicate"][:-1]
            answers = [_posted(url, r) for r in asked[:2]]
            with ThreadPoolExecutor(2) as pool:
                searches = list(pool.map(lambda n: _posted(url, {"id": 100 + n, **SEARCH}), range(2)))
            answers += [_posted(url, r) for r in asked[2:]]
            assert harness.wait(timeout=30) == 0
        finally:
            harness.kill()
    return [r for _, r in answers], [status for status, _ in answers], searches


@pytest.mark.parametrize("language", ["python", "javascript"])
def test_either_runtime_serves_http_when_asked_and_callers_at_once_are_answered_at_once(
    language: str, tmp_path: Path
) -> None:
    """With KBCONFORM_HARNESS_HTTP in its environment a harness prints its URL and answers
    ``POST /v1/{op}`` as on stdio (400 for a request it cannot read or carry out), two searches
    at once are answered together (each answers only while the other is in flight: a runtime
    serving one request at a time fails them), and shutdown ends it."""
    if language == "javascript" and shutil.which("node") is None:
        pytest.skip("node is not on PATH: no JavaScript to run")
    script = tmp_path / ("tiny.py" if language == "python" else "tiny.mjs")
    script.write_text(PYTHON_HARNESS if language == "python" else NODE_HARNESS, encoding="utf-8")
    program = sys.executable if language == "python" else "node"
    responses, statuses, searches = _served_over_http([program, str(script)])
    expected = [r for r in EXPECTED if r["id"] != 7]
    assert _shown(responses) == expected
    refused = [r.get("error", {}).get("code") == INVALID for r in expected]
    assert statuses == [400 if no else 200 for no in refused]
    assert searches == [
        (200, {"id": 100, "result": {"hits": []}}),
        (200, {"id": 101, "result": {"hits": []}}),
    ]


def test_a_harness_command_run_over_http_is_told_where_to_listen_and_judged_there() -> None:
    """``run_suites(harness=..., transport="http")`` (``kbconform run --harness CMD --transport
    http``) starts the harness with KBCONFORM_HARNESS_HTTP, reads its URL and runs the suites
    against it: the same statuses as on stdio (control), the report naming the URL, not the
    command."""
    from kbconform import runner

    command = f"{sys.executable} {Path(__file__).with_name('uuid_memory_harness.py')}"
    chosen = ("iso-01[search-memories]", "conc-01[search-memories]")
    over_http = runner.run_suites(harness=command, transport="http", seed=0, select=chosen)
    on_stdio = runner.run_suites(harness=command, seed=0, select=chosen)
    statuses = [{t["id"]: t["status"] for t in o.report["tests"]} for o in (over_http, on_stdio)]
    assert (over_http.problems, on_stdio.problems) == ((), ()), over_http.output[-2000:]
    assert statuses[0] == statuses[1]
    assert statuses[0]["iso-01[search-memories]"] in ("pass", "fail")  # it reached the harness
    assert over_http.report["config"]["harness"].get("url", "").startswith("http://127.0.0.1:")
    assert "command" not in over_http.report["config"]["harness"]
    assert "command" in on_stdio.report["config"]["harness"]


def test_requests_that_overlap_run_with_the_suites_thread_switch_interval_and_one_alone_as_before() -> None:
    """While two requests are answered at once the interpreter switches threads as often as the
    concurrency suite makes it in process (a race in the harness is met as in the kit); with one
    left, and once none is, it is back to what it was (control)."""
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location("kbharness_under_test", RUNTIME / "kbharness.py")
    assert spec is not None
    assert spec.loader is not None
    kbharness = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(kbharness)
    before = sys.getswitchinterval()
    overlap = kbharness.Overlapping()
    with overlap:
        assert sys.getswitchinterval() == before  # one request alone
        with overlap:
            assert sys.getswitchinterval() == pytest.approx(kbharness.OVERLAP_SWITCH_INTERVAL)
        assert sys.getswitchinterval() == before
    assert sys.getswitchinterval() == before
