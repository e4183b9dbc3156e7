"""Writes at once: principals write into their own scopes while other principals read and
callers that are no identity write, all on one backend handle, and each write is judged by the
policy model: it lands in its writer's scope and nowhere else (``schemas/concurrency.md``).

A world offers writes (:class:`Writing`, beside :class:`~kbconform.conformance.World`): who
writes, one write as a caller of a new item whose text starts with a mark of its own, the model's
record of a write that landed, and the read facade that shows a whole scope. The storm is the
reads' (:func:`~kbconform.conformance._concurrency.storm`); the writes are recorded in the model
after it, then every reading taken during it and every reader's reading after it are judged.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from kbconform.conformance._concurrency import (
    CRASHED,
    ConcurrentCaller,
    Reach,
    Storm,
    _judge,
    storm,
    unguarded,
)
from kbconform.conformance._judging import Reader, Reading, World
from kbconform.errors import KbconformError

#: How many rounds each caller makes: each writer writes once a round (every seed kills the
#: built-in write races with far fewer; ``benchmarks/bench_concurrency.py`` measures the cost).
WRITE_ROUNDS = 4


@runtime_checkable
class Writing(World, Protocol):
    """A world whose principals write, each into a scope of its own."""

    def writers(self) -> tuple[Reader, ...]:
        """Principals among the readers that write at once, each into its own scope (two at least)."""
        ...

    def write(self, backend: Any, facade: str, identity: object, mark: str) -> object:
        """One write as ``identity`` of one new item into its own scope that ``facade`` shows,
        its text starting with ``mark``; the backend's answer (what it raises, raised)."""
        ...

    def wrote(self, facade: str, writer: Reader, mark: str, answer: object) -> list[str]:
        """The model records ``writer``'s write of ``mark`` for ``facade`` that landed
        (``answer``: the backend's); problems with the answer (its ids)."""
        ...


@dataclass
class Written:
    """What a storm of writes left: the problems found, the writes that landed, by writer, and
    what each reader read during it."""

    storm: Storm
    landed: list[tuple[Reader, str, object]] = field(default_factory=list)
    readings: list[tuple[Reader, Reading]] = field(default_factory=list)
    #: Each caller's marks: whose each written text is.
    marks: dict[str, str] = field(default_factory=dict)


def marks(rng: random.Random, count: int) -> list[str]:
    """``count`` unique tokens, each the start of one written text."""
    made: set[str] = set()
    while len(made) < count:
        made.add(f"kbw{rng.getrandbits(48):012x}")
    return sorted(made)


def writes_at_once(
    world: Writing,
    backend: Any,
    facade: str,
    readers: Sequence[Reader],
    nobody: Mapping[str, object],
    *,
    rng: random.Random,
    reach: Reach,
    deadline: float,
    rounds: int = WRITE_ROUNDS,
) -> Written:
    """Each writer of ``world`` writes a new item each round, each of ``readers`` reads through
    ``facade`` and each caller of ``nobody`` (no identity) writes, all at once on
    ``backend``; a writer's write must land, a write by no identity must be refused with
    Unauthenticated (carrying no stored text)."""
    target, writers = unguarded(backend), world.writers()
    result = Written(Storm(reach, rounds))
    anonymous = [
        ConcurrentCaller(f"no identity ({label}) writing", who, None) for label, who in nobody.items()
    ]
    labels = [f"{w.label} writing" for w in writers] + [f"{r.label} reading" for r in readers]
    labels += [c.label for c in anonymous]
    written = iter(marks(rng, len(labels) * rounds))
    planned = [[next(written) for _ in range(rounds)] for _ in labels]
    result.marks = {
        mark: label.removesuffix(" writing")
        for label, row in zip(labels, planned, strict=True)
        for mark in row
    }

    def act(index: int, number: int) -> None:
        label, mark = labels[index], planned[index][number]
        if index >= len(writers) + len(readers):
            caller = anonymous[index - len(writers) - len(readers)]
            write = lambda: world.write(target, facade, caller.identity, mark)  # noqa: E731
            _judge(world, result.storm, caller, write, effect="written")
            return
        try:
            if index < len(writers):
                answer = world.write(target, facade, writers[index].identity, mark)
                with result.storm.lock:
                    result.landed.append((writers[index], mark, answer))
            else:
                reader = readers[index - len(writers)]
                reading = world.read(target, facade, reader)
                with result.storm.lock:
                    result.readings.append((reader, reading))
        except KbconformError as error:
            told, what = world.carried(error), "write" if index < len(writers) else "read"
            said = f", carrying stored text {told}" if told else ""
            result.storm.found(label, f"its {what} was refused{said}: {error!r}")
        except Exception as error:  # any other failure of a call is the backend's, and a finding
            result.storm.found(label, f"failed: {error!r}", CRASHED)

    storm(result.storm, labels, act, deadline=deadline)
    return result


def judge_writes(
    world: Writing, backend: Any, facade: str, written: Written, before: Mapping[str, Reading]
) -> list[str]:
    """The problems of a storm of writes (``before``: each reader's expected reading before
    it): the model records each write that landed; a reading taken during the storm shows no
    item the reader may not read once every write landed (it may lack one: a read with a limit
    is cut by the new items; a count is between the two); and after it every reader reads
    exactly what the model says (each write in its writer's scope, and in no other's unless the
    model shares it)."""
    problems = []
    whose = written.marks
    for writer, mark, answer in written.landed:
        problems += [
            f"{writer.label}'s write of {mark}: {p}" for p in world.wrote(facade, writer, mark, answer)
        ]

    def named(reading: Reading, ids: Sequence[str]) -> str:
        texts = reading.items or {}
        return ", ".join(f"{i} ({_writer(texts.get(i), whose)})" for i in ids)

    after = {reader.label: world.expected(facade, reader) for reader in world.readers}
    for reader, reading in written.readings:
        least, most = before[reader.label].number, after[reader.label].number
        if reading.items is None and not least <= reading.number <= most:
            problems.append(
                f"{reader.label}, reading at once, counts {reading.number}; {least} to {most} expected"
            )
        extra = sorted(set(reading.items or {}) - set(after[reader.label].items or {}))
        if extra:
            problems.append(
                f"{reader.label}, reading at once, shows {named(reading, extra)}, which it may not read"
            )
    for reader in world.readers:  # one caller at a time, through the run's per-call guard
        reading = world.read(backend, facade, reader)
        got, wanted = reading.items or {}, after[reader.label].items or {}
        extra = sorted(set(got) - set(wanted))
        if extra:
            problems.append(f"{reader.label} then shows {named(reading, extra)}, which it may not read")
        problems += [
            f"{reader.label} then {p}" for p in after[reader.label].differences(reading) if "shows [" not in p
        ]
    return list(dict.fromkeys(problems))


def _writer(text: str | None, whose: Mapping[str, str]) -> str:
    """Who wrote a stored ``text``, by its mark: a writer of the storm, or the seeded world."""
    mark = text.split()[0] if text else ""
    return f"written by {whose[mark]}" if mark in whose else "seeded"
