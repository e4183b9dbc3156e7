"""What a harness-v1 request over HTTP costs: a kept connection against one per request, in one process.

    python benchmarks/http_connections.py [--requests 200] [--rounds 5] [--json PATH]

``kbconform serve`` (the in-memory reference) answers ``hello`` requests three ways, interleaved
round by round (medians of the wall time per request):

* kept: the kit's transport (:class:`kbconform.harness.HttpTransport`), which sends request
  after request on one open connection;
* fresh: a new connection per request, closed by the client after its answer (the kit's way
  before connections were kept);
* kept_nagle: a kept connection to a server that answers with Nagle's algorithm on (an answer's
  headers and body are two writes, so the body waits for the client's delayed acknowledgement
  of the headers): the cost ``kbconform serve`` avoids by setting TCP_NODELAY.

``fresh_ratio`` is fresh / kept and ``nagle_ratio`` kept_nagle / kept.
"""

from __future__ import annotations

import argparse
import http.client
import json
import statistics
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from _bench import report

from kbconform.adapter import load_adapter
from kbconform.harness import Dispatcher, HttpTransport, serve_http
from kbconform.harness._server import _Handler

ADAPTER = "kbconform_reference.adapter:memory"


def _serve(nagle: bool) -> tuple[str, Callable[[], None]]:
    """A ``kbconform serve``-like server of the reference in a thread: its URL and its stop."""
    dispatcher = Dispatcher(*load_adapter(ADAPTER))
    announced: list[str] = []
    ready = threading.Event()
    original = _Handler.disable_nagle_algorithm

    def announce(url: str) -> None:
        announced.append(url)
        ready.set()

    if nagle:
        _Handler.disable_nagle_algorithm = False
    thread = threading.Thread(target=serve_http, args=(dispatcher, "127.0.0.1", 0, announce), daemon=True)
    thread.start()
    ready.wait(30)
    url = announced[0]

    def stop() -> None:
        HttpTransport(url).exchange("shutdown", {"id": 0, "op": "shutdown", "params": {}}, 30)
        thread.join(30)
        _Handler.disable_nagle_algorithm = original

    return url, stop


def _hello(number: int) -> dict[str, object]:
    return {"id": number, "op": "hello", "params": {"protocol": "harness-v1"}}


def _kept(url: str, requests: int) -> float:
    transport = HttpTransport(url)
    started = time.perf_counter()
    for number in range(requests):
        transport.exchange("hello", _hello(number), 30)
    spent = time.perf_counter() - started
    transport.stop()
    return spent / requests


def _fresh(url: str, requests: int) -> float:
    host, port = url.removeprefix("http://").split(":")
    started = time.perf_counter()
    for number in range(requests):
        connection = http.client.HTTPConnection(host, int(port), timeout=30)
        connection.request("POST", "/v1/hello", body=json.dumps(_hello(number)))
        connection.getresponse().read()
        connection.close()
    return (time.perf_counter() - started) / requests


def main(argv: list[str]) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    url, stop = _serve(nagle=False)
    times: dict[str, list[float]] = {"kept": [], "fresh": [], "kept_nagle": []}
    try:
        for _ in range(args.rounds):
            times["kept"].append(_kept(url, args.requests))
            times["fresh"].append(_fresh(url, args.requests))
    finally:
        stop()
    nagle_url, nagle_stop = _serve(nagle=True)
    try:  # a few requests: each costs the delayed acknowledgement
        for _ in range(args.rounds):
            times["kept_nagle"].append(_kept(nagle_url, max(1, args.requests // 20)))
    finally:
        nagle_stop()
    figures = {f"{name}_ms": round(statistics.median(values) * 1000, 3) for name, values in times.items()}
    figures["fresh_ratio"] = round(figures["fresh_ms"] / max(figures["kept_ms"], 1e-3), 2)
    figures["nagle_ratio"] = round(figures["kept_nagle_ms"] / max(figures["kept_ms"], 1e-3), 2)
    return report(
        figures,
        args.json,
        f"a harness-v1 request over HTTP ({ADAPTER}, {args.requests} requests x {args.rounds} rounds):",
    )


if __name__ == "__main__":
    main(sys.argv[1:])
