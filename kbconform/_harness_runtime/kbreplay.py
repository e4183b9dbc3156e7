"""Replay a failing test's harness-v1 requests with the harness alone: no kbconform needed.

    python3 replay.py HARNESS_COMMAND [ARG ...]     # e.g. python3 replay.py ./harness

Beside this script, ``requests.jsonl`` holds the requests the test sent (one harness-v1 request a
line, ``hello`` first) and ``expected.jsonl`` the responses the harness gave when the test failed,
with ``failure.json`` (the test and what the contract expected). The script starts the harness,
sends each request on its stdin, reads each answer from its stdout (30 s each at most) and shows
it beside the recorded one. The ids the harness assigns (an ``open``'s backend handle, a created
object's ``id``) are mapped from the recorded ones by their order of creation, so a request
reaches the object it reached when recorded. Exit 0 when the last answer is as recorded (the
failure reproduces), 1 when it is not, 2 when the harness cannot run.

Written by ``kbconform replay --standalone DIR``; standard library only (Python 3.10+).
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DEADLINE = 30.0
#: Stamped by the backend's clock: never compared.
VOLATILE = {"ingestedAt"}


def comparable(value: Any) -> Any:
    """``value`` without clock stamps, floats to 6 significant digits, records by id."""
    if isinstance(value, dict):
        kept = {k: comparable(v) for k, v in value.items() if k not in VOLATILE}
        if isinstance(kept.get("records"), list) and all(
            isinstance(r, dict) and "id" in r for r in kept["records"]
        ):
            kept["records"] = sorted(kept["records"], key=lambda r: json.dumps(r["id"], sort_keys=True))
        return kept
    if isinstance(value, list):
        return [comparable(v) for v in value]
    if isinstance(value, float):
        return float(f"{value:.6g}")
    return value


def renamed(value: Any, ids: dict[str, str]) -> Any:
    if isinstance(value, str):
        return ids.get(value, value)
    if isinstance(value, dict):
        return {k: renamed(v, ids) for k, v in value.items()}
    if isinstance(value, list):
        return [renamed(v, ids) for v in value]
    return value


def strings(value: Any) -> set[str]:
    if isinstance(value, str):
        return {value}
    if isinstance(value, dict):
        return {s for v in value.values() for s in strings(v)}
    if isinstance(value, list):
        return {s for v in value for s in strings(v)}
    return set()


def created(params: Any, response: Any) -> str | None:
    result = response.get("result") if isinstance(response, dict) else None
    if isinstance(result, dict) and len(result) == 1:
        made = result.get("backend", result.get("id"))
        if isinstance(made, str) and made not in strings(params):
            return made
    return None


def shown(value: Any) -> str:
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= 300 else text[:300] + "..."


def same(recorded: Any, now: dict[str, Any]) -> bool:
    if recorded is None:
        return True  # the recorded call broke: nothing to compare
    if "error" in recorded or "error" in now:
        return bool(recorded.get("error", {}).get("code") == now.get("error", {}).get("code"))
    return bool(comparable(recorded.get("result")) == comparable(now.get("result")))


def read(path: str) -> list[Any]:
    lines = (HERE / path).read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def main(command: list[str]) -> int:
    if not command:
        print(__doc__, file=sys.stderr)
        return 2
    requests, expected = read("requests.jsonl"), read("expected.jsonl")
    failure = json.loads((HERE / "failure.json").read_text(encoding="utf-8"))
    try:
        harness = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, encoding="utf-8"
        )
    except OSError as error:
        print(f"the harness cannot start: {error}", file=sys.stderr)
        return 2
    answers: queue.Queue[str | None] = queue.Queue()
    assert harness.stdout is not None
    assert harness.stdin is not None
    stdout = harness.stdout

    def pump() -> None:
        for line in stdout:
            answers.put(line)
        answers.put(None)  # the harness exited

    threading.Thread(target=pump, daemon=True).start()
    ids: dict[str, str] = {}
    last_same = False
    try:
        for number, (request, recorded) in enumerate(zip(requests, expected, strict=True), start=1):
            params = request.get("params", {})
            sent = {**request, "params": renamed(params, ids)}
            harness.stdin.write(json.dumps(sent) + "\n")
            harness.stdin.flush()
            try:
                answer = answers.get(timeout=DEADLINE)
            except queue.Empty:
                answer = f"no answer within {DEADLINE:.0f} s"
            if answer is None or not answer.startswith("{"):
                print(f"{number:>4} {request['op']}: {answer or 'the harness exited'}", file=sys.stderr)
                return 2
            now = json.loads(answer)
            if request["op"] == "open" and "error" in now and "result" in (recorded or {"result": 0}):
                print(f"{number:>4} open: the backend did not open: {shown(now['error'])}", file=sys.stderr)
                return 2
            then = created(params, recorded)
            if then is not None and then not in ids and created(sent["params"], now) is not None:
                ids[then] = str(created(sent["params"], now))
            if request["op"] == "hello":
                continue
            last_same = same(renamed(recorded, ids), now)
            print(f"{number:>4} {request['op']} {shown(sent['params'])}")
            print(f"       now:      {shown(now.get('error', now.get('result')))}")
            if not last_same:
                print(f"       recorded: {shown(recorded.get('error', recorded.get('result')))}")
    finally:
        harness.stdin.close()
        try:
            harness.wait(timeout=10)
        except subprocess.TimeoutExpired:
            harness.kill()
    print(f"test {failure.get('test')}: {failure.get('message') or 'no message recorded'}")
    print("reproduced: the last answer is as recorded" if last_same else "not reproduced")
    return 0 if last_same else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
