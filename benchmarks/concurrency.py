"""What the concurrency suite (conc-01 to conc-03) adds to a run, per profile, in one process.

    python benchmarks/concurrency.py [--seed N] [--json PATH] [--rounds N] [--adapter M:F]

For each profile's reference adapter, in process, for each declared read facade: seeds the
profile's world on a fresh backend, then times what conc-01 and conc-02 do (every reader at
once, then every reader and two callers that are no identity, ``ROUNDS`` rounds each) against
what the shared suite's iso-01 and iso-02 do on the same world (every reader once, each caller
that is no identity once), interleaved. Prints, per profile, the seconds the concurrency tests
take and their ratio to the sequential isolation tests' seconds; and what conc-03 does (the
writers at once beside a reader and two callers with no identity, ``WRITE_ROUNDS`` rounds, then
every reader's reading judged), on a world of its own, and its ratio to conc-01 and conc-02's.
``--adapter`` measures that adapter in place of its profile's reference (Chroma embedded:
``kbconform_reference.adapter:chroma_embedded``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import time
from pathlib import Path
from typing import Any

from kbconform.adapter import load_adapter
from kbconform.conformance import (
    Run,
    World,
    Writing,
    concurrent_callers,
    concurrently,
    isolation_for,
    judge_writes,
    writes_at_once,
)
from kbconform.errors import KbconformError

ADAPTERS = {
    "tenant-namespace": "kbconform_reference.adapter:memory",
    "project-pool": "kbconform_reference.pool.adapter:qdrant_local",
    "kb-grant": "kbconform_reference.grant.adapter:multi_store",
    "memory-scope": "kbconform_reference.memory.adapter:qdrant_local",
}


def _sequential(world: World, backend: Any, facade: str) -> None:
    """What iso-01 and iso-02 call: every reader once, every caller that is no identity once."""
    for reader in world.readers:
        world.read(backend, facade, reader)
    for identity in world.no_identities().values():
        with contextlib.suppress(KbconformError):
            world.read_once(backend, facade, identity)


def _writes(world: World, backend: Any, facade: str, seed: int, deadline: float) -> int:
    """What conc-03 does on a seeded world: its problems."""
    assert isinstance(world, Writing)
    writers = world.writers()
    readers = [r for r in world.readers if r not in writers][:1]
    before = {r.label: world.expected(facade, r) for r in world.readers}
    nobody = dict(list(world.no_identities().items())[:2])
    found = writes_at_once(
        world, backend, facade, readers, nobody, rng=random.Random(seed), reach="threads", deadline=deadline
    )
    return len(found.storm.problems) + len(judge_writes(world, backend, facade, found, before))


def measure(profile: str, seed: int, rounds: int, path: str | None = None) -> dict[str, Any]:
    adapter, manifest = load_adapter(path or ADAPTERS[profile])
    run = Run(adapter, manifest, seed)
    isolation = isolation_for(manifest)
    concurrent = sequential = writes = 0.0
    problems = 0
    try:
        for facade in manifest.read_facades:
            backend = run.open()
            world = isolation.seed(backend, random.Random(f"{seed}:{facade}:writes"))
            start = time.perf_counter()
            problems += _writes(world, backend, facade, seed, run.call_timeout)
            writes += time.perf_counter() - start
            run.close(backend)
            for anonymous in (0, 2):
                backend = run.open()
                world = isolation.seed(backend, random.Random(f"{seed}:{facade}:{anonymous}"))
                start = time.perf_counter()
                _sequential(world, backend, facade)
                sequential += time.perf_counter() - start
                start = time.perf_counter()
                found = concurrently(
                    world,
                    backend,
                    facade,
                    concurrent_callers(world, facade, anonymous),
                    reach="threads",
                    deadline=run.call_timeout,
                    rounds=rounds,
                )
                concurrent += time.perf_counter() - start
                problems += len(found.problems)
                run.close(backend)
    finally:
        run.shutdown()
    return {
        "profile": profile,
        "concurrency_seconds": round(concurrent, 3),
        "isolation_seconds": round(sequential, 3),
        "ratio": round(concurrent / sequential, 2) if sequential else None,
        "writes_seconds": round(writes, 3),
        "writes_ratio": round(writes / concurrent, 3) if concurrent else None,
        "problems": problems,
    }


def main() -> None:
    from kbconform.conformance import ROUNDS

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--json", default=None)
    parser.add_argument("--profile", action="append", choices=sorted(ADAPTERS))
    parser.add_argument(
        "--adapter", default=None, help="measure this adapter in place of its profile's reference"
    )
    args = parser.parse_args()
    if args.adapter:
        results = [measure(load_adapter(args.adapter)[1].profile, args.seed, args.rounds, args.adapter)]
    else:
        results = [measure(profile, args.seed, args.rounds) for profile in args.profile or ADAPTERS]
    for row in results:
        print(
            f"{row['profile']:>17}: concurrency {row['concurrency_seconds']:.2f} s, "
            f"sequential iso-01/iso-02 {row['isolation_seconds']:.2f} s, ratio {row['ratio']}x; "
            f"conc-03 {row['writes_seconds']:.2f} s ({row['writes_ratio']} of conc-01/02); "
            f"problems {row['problems']}"
        )
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
