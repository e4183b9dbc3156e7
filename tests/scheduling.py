"""The order the project's tests start in, so that the test workers end together.

``python -m pytest`` runs on three pytest-xdist workers with ``--dist worksteal``
(pyproject.toml): xdist gives each worker a contiguous block of the collection, each runs its
block in order, and a worker whose queue runs out takes the second half of another's remaining
queue. The blocks of a shuffled collection put the longest tests wherever the shuffle did: the
longest could start three quarters into the run. Here the blocks are built
longest-processing-time first: each test weighs what it last took (``tests/durations.json``),
the heaviest goes to the lightest block, the next heaviest to the lightest block then, and so
on, each block in descending weight; the short tests end each block,
which is where stealing takes from, so it evens out what the weights got wrong.

Tests of a module that share a module-scoped fixture stay together (one unit, their summed
weight), so the fixture is set up once per worker as before; so do the tests that need one
harness's install (marked ``installs``), wherever they are, so that one worker installs while
the other works instead of waiting on the install's lock (tests/harness/installs.py). The order
within the short tests is pytest-randomly's. The ordering is the same on every worker (xdist
requires it): it depends on the collection and the table alone.

Refresh the table from a whole run's durations (the table holds every test that took
``LISTED`` seconds or more)::

    python -m pytest --durations=0 | tee run.log
    python -m tests.scheduling run.log
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Hashable, Sequence
from pathlib import Path
from typing import Any, TypeVar

TABLE = Path(__file__).with_name("durations.json")
REFRESH = "python -m pytest --durations=0 | tee run.log; python -m tests.scheduling run.log"
#: A test that took at least this long (seconds, on the run measured) is listed by name.
LISTED = 2.0
#: The weight of a test the table does not list: a slow-tier test is assumed just under the
#: listing threshold, any other test a quick one.
UNLISTED_SLOW = LISTED / 2
UNLISTED = 0.1
#: Fixture scopes whose tests move together.
SHARED_SCOPES = frozenset({"class", "module", "package"})

T = TypeVar("T")


def read_table(path: Path = TABLE) -> dict[str, float]:
    """The measured seconds of each listed test, by node id."""
    data = json.loads(path.read_text(encoding="utf-8"))
    return {str(node): float(seconds) for node, seconds in data["seconds"].items()}


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)s (?:setup|call|teardown)\s+(\S.*?)\s*$")


def durations_from_log(lines: Sequence[str]) -> dict[str, float]:
    """Each test's setup, call and teardown summed, from pytest's ``--durations=0`` lines."""
    seconds: dict[str, float] = {}
    for line in lines:
        found = _DURATION.match(line)
        if found:
            node = found.group(2)
            seconds[node] = seconds.get(node, 0.0) + float(found.group(1))
    return seconds


def table_from(seconds: dict[str, float]) -> dict[str, Any]:
    """The table's JSON: every test of at least ``LISTED`` seconds, sorted by node id."""
    listed = {node: round(value, 1) for node, value in sorted(seconds.items()) if value >= LISTED}
    return {
        "about": (
            "Seconds each test took on the last measured run (setup, call and teardown), tests of "
            f"{LISTED} s or more: tests/scheduling.py starts the longest first. Refresh: {REFRESH}"
        ),
        "seconds": listed,
    }


def worksteal_blocks(count: int, workers: int) -> list[int]:
    """The sizes of the contiguous blocks xdist's worksteal scheduler first sends each worker:
    the first idle worker gets ``len(pending) // workers``, the next its share of the rest."""
    sizes = []
    left = count
    for remaining in range(workers, 0, -1):
        sizes.append(left // remaining)
        left -= sizes[-1]
    return sizes


def arrange(units: Sequence[tuple[Sequence[T], float]], sizes: Sequence[int]) -> list[list[T]]:
    """Units (their items, their weight) dealt into blocks of exactly ``sizes`` items: the
    heaviest unit first, each to the least loaded block with room for it, each block in
    descending weight (equal weights keep their given order)."""
    order = sorted(range(len(units)), key=lambda index: -units[index][1])
    chosen: list[list[int]] = [[] for _ in sizes]
    load = [0.0] * len(sizes)
    room = list(sizes)
    for index in order:
        items, weight = units[index]
        fits = [block for block in range(len(sizes)) if room[block] >= len(items)]
        # A unit bigger than every room left goes where the most room is; the worksteal split
        # then moves its tail to the next block, which costs that block's balance, not its tests.
        block = (
            min(fits, key=lambda b: (load[b], b)) if fits else max(range(len(sizes)), key=room.__getitem__)
        )
        chosen[block].append(index)
        load[block] += weight
        room[block] -= len(items)
    return [[item for index in block for item in units[index][0]] for block in chosen]


def units_of(
    items: Sequence[T], keys: Sequence[Hashable], weights: Sequence[float]
) -> list[tuple[list[T], float]]:
    """Items grouped by key (first appearance order, items in their order), each unit's weight
    the sum of its items'."""
    grouped: dict[Hashable, tuple[list[T], list[float]]] = {}
    for item, key, weight in zip(items, keys, weights, strict=True):
        members, unit_weights = grouped.setdefault(key, ([], []))
        members.append(item)
        unit_weights.append(weight)
    return [(members, sum(unit_weights)) for members, unit_weights in grouped.values()]


def _shares_setup(item: Any) -> bool:
    """Whether the test uses a fixture set up once for several tests of its module."""
    info = getattr(item, "_fixtureinfo", None)
    definitions = info.name2fixturedefs.values() if info is not None else ()
    return any(definition.scope in SHARED_SCOPES for chain in definitions for definition in chain)


def unit_of(item: Any) -> str:
    """The unit a test moves in: the harness install it needs (``@pytest.mark.installs(NAME)``:
    the tests needing one install run on one worker, so no worker waits idle for another's
    install to finish), else its module if it shares a module's fixture, else itself."""
    installs = item.get_closest_marker("installs")
    if installs is not None:
        return f"installs:{installs.args[0]}"
    return item.nodeid.split("::")[0] if _shares_setup(item) else item.nodeid


def order(items: list[Any], workers: int, table: dict[str, float]) -> None:
    """Reorders ``items`` in place into ``workers`` longest-first worksteal blocks."""
    weights = [
        table.get(item.nodeid, UNLISTED_SLOW if item.get_closest_marker("slow") else UNLISTED)
        for item in items
    ]
    keys = [unit_of(item) for item in items]
    blocks = arrange(units_of(items, keys, weights), worksteal_blocks(len(items), workers))
    items[:] = [item for block in blocks for item in block]


def main(arguments: Sequence[str]) -> int:
    """``python -m tests.scheduling LOG``: rewrites the table from a ``--durations=0`` log."""
    if len(arguments) != 1:
        print(f"usage: python -m tests.scheduling LOG (a log of: {REFRESH.split(';')[0]})", file=sys.stderr)
        return 2
    seconds = durations_from_log(Path(arguments[0]).read_text(encoding="utf-8").splitlines())
    if not seconds:
        print(f"tests.scheduling: {arguments[0]} holds no --durations=0 lines", file=sys.stderr)
        return 1
    TABLE.write_text(json.dumps(table_from(seconds), indent=1) + "\n", encoding="utf-8")
    print(f"tests.scheduling: {len(table_from(seconds)['seconds'])} tests written to {TABLE}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
