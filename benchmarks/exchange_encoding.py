"""What the kit's side of a harness-v1 exchange costs: a request encoded once (sent and recorded
as that line) and the response's transcript kept as the bytes it was read from, against the
encoding as it was (the request encoded again by the transport and again for the transcript,
the response encoded again in canonical form for the transcript), in one process.

    python benchmarks/exchange_encoding.py [--rounds 5] [--records 40] [--json PATH]

A program of the in-memory reference (ingest, then get, list, query and count for two
principals) is answered once by a dispatcher in this process; each side then replays its
exchanges through :class:`~kbconform.harness.HarnessAdapter` over a transport that hands back
the recorded answers, so only the kit's own work is timed. Rounds are interleaved; the figure is
the ratio of the median CPU seconds.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from _bench import report

from kbconform.adapter import BackendOptions, load_adapter
from kbconform.conformance import record
from kbconform.harness import HarnessAdapter
from kbconform.harness._server import Dispatcher
from kbconform.harness._transcript import Transcript, _canonical
from kbconform.harness._wire import dumps, read_response
from kbconform.identity import Principal


class Recording:
    """A transport to a dispatcher in this process that keeps every answer's bytes."""

    description = "recording"
    broken = False

    def __init__(self, dispatcher: Dispatcher) -> None:
        self.dispatcher = dispatcher
        self.answers: list[bytes] = []

    def exchange(
        self, call: str, message: Mapping[str, Any], timeout: float, line: bytes | None = None
    ) -> Mapping[str, Any]:
        raw = dumps(self.dispatcher.answer(json.loads(dumps(message))))
        self.answers.append(raw)
        return read_response(call, raw, message["id"], "")

    def log_tail(self) -> str:
        return ""

    def stop(self) -> None:
        """Nothing runs."""

    def abandon(self) -> None:
        self.broken = True


class Replaying(Recording):
    """The recorded answers again, in order; ``encode``: the request is encoded here again (as
    the transports did before they took the caller's line)."""

    def __init__(self, answers: list[bytes], encode: bool) -> None:
        self.answers, self.encode, self.next = answers, encode, 0

    def exchange(
        self, call: str, message: Mapping[str, Any], timeout: float, line: bytes | None = None
    ) -> Mapping[str, Any]:
        sent = dumps(message) if self.encode or line is None else line
        assert sent
        raw, self.next = self.answers[self.next], self.next + 1
        return read_response(call, raw, message["id"], "")


class EncodingTranscript(Transcript):
    """The transcript as it recorded before: the request and the canonical response encoded at
    every exchange."""

    def record(
        self,
        request: Mapping[str, Any],
        response: Mapping[str, Any] | None,
        broke: str = "",
        sent: bytes | None = None,
    ) -> None:
        json.dumps(request, ensure_ascii=False, separators=(",", ":"))
        if response is not None:
            _canonical(response)
        super().record(request, response, broke, sent)


def program(adapter: Any, records: int) -> None:
    """The reads and writes replayed: an ingest, then every read facade for two principals."""
    acme = Principal("acme", "agent-a", frozenset(), "member")
    beta = Principal("beta", "agent-b", frozenset(), "member")
    backend = adapter.open(BackendOptions())
    for principal in (acme, beta):
        tenant = principal.tenant_id
        result = backend.ingest(
            principal,
            [record(f"docs/{i}.md", f"text {i} of {tenant}", tenant=tenant) for i in range(records)],
        )
        for chunk_id in result.ids:
            backend.get(principal, chunk_id)
        for _ in range(5):
            backend.list(principal, 100, 0)
            backend.query(principal, "text of", 10, None)
            backend.count(principal)
    adapter.close(backend)


def replay(answers: list[bytes], records: int, before: bool) -> tuple[float, int]:
    transport = Replaying(answers, encode=before)
    adapter = HarnessAdapter(transport, 60)
    if before:
        adapter.transcript = EncodingTranscript()
    started = time.process_time()
    program(adapter, records)
    return time.process_time() - started, transport.next


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--records", type=int, default=200)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    served, manifest = load_adapter("kbconform_reference.adapter:memory")
    recording = Recording(Dispatcher(served, manifest))
    program(HarnessAdapter(recording, 60), args.records)
    answers = recording.answers
    now, before = [], []
    for _ in range(args.rounds):
        before.append(replay(answers, args.records, before=True)[0])
        seconds, exchanges = replay(answers, args.records, before=False)
        now.append(seconds)
    size = sum(len(a) for a in answers)
    return report(
        {
            "exchanges": exchanges,
            "response_bytes": size,
            "before_cpu_s": round(statistics.median(before), 4),
            "now_cpu_s": round(statistics.median(now), 4),
            "now_over_before": round(statistics.median(now) / statistics.median(before), 3),
        },
        args.json,
        "kit-side CPU of harness-v1 exchanges (median of interleaved rounds)",
    )


if __name__ == "__main__":
    main()
