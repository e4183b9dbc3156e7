"""A harness that breaks harness-v1 in one way (the first argument), after a sound ``hello``.

crash: exits on the second request. hang: never answers it. wrong-id: answers it with another
id. not-json: answers it with a line that is not JSON. wrong-shape: answers ``open`` with a
result of another operation. Each writes a line to stderr first (its log).
"""

from __future__ import annotations

import json
import sys
import threading

MANIFEST = {
    "manifestVersion": "1",
    "adapter": {"name": "broken harness", "version": "0"},
    "backend": {"name": "nothing", "version": "0"},
    "readFacades": ["query", "get", "list"],
    "isolationModel": "other",
    "spoofModes": ["overwrite"],
    "sharedNamespace": None,
    "idProfile": None,
    "features": {
        "client-where": "no",
        "revision-boundary": "no",
        "fault-injection": "no",
        "escalation": "no",
        "workspace-scan": "no",
    },
}


def main() -> None:
    mode = sys.argv[1]
    for number, line in enumerate(sys.stdin):
        request = json.loads(line)
        if number == 0:
            answer = {"id": request["id"], "result": {"protocol": "harness-v1", "manifest": MANIFEST}}
            print(json.dumps(answer), flush=True)
            continue
        print(f"broken harness: {mode} on {request['op']}", file=sys.stderr, flush=True)
        if mode == "crash":
            sys.exit(3)
        if mode == "hang":
            threading.Event().wait()
        if mode == "wrong-id":
            print(json.dumps({"id": request["id"] + 7, "result": {"backend": "b1"}}), flush=True)
        if mode == "not-json":
            print("starting up...", flush=True)
        if mode == "wrong-shape":
            print(json.dumps({"id": request["id"], "result": {"hits": []}}), flush=True)


if __name__ == "__main__":
    main()
