"""What the concurrency suite (conc-01, conc-02) adds to a run, per profile, in one process.

    python benchmarks/concurrency.py [--seed N] [--json PATH] [--rounds N]

For each profile's reference adapter, in process, for each declared read facade: seeds the
profile's world on a fresh backend, then times what conc-01 and conc-02 do (every reader at
once, then every reader and two callers that are no identity, ``ROUNDS`` rounds each) against
what the shared suite's iso-01 and iso-02 do on the same world (every reader once, each caller
that is no identity once), interleaved. Prints, per profile, the seconds the concurrency tests
take and their ratio to the sequential isolation tests' seconds.
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
from kbconform.conformance import Run, World, concurrent_callers, concurrently, isolation_for
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


def measure(profile: str, seed: int, rounds: int) -> dict[str, Any]:
    adapter, manifest = load_adapter(ADAPTERS[profile])
    run = Run(adapter, manifest, seed)
    isolation = isolation_for(manifest)
    concurrent = sequential = 0.0
    problems = 0
    try:
        for facade in manifest.read_facades:
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
        "problems": problems,
    }


def main() -> None:
    from kbconform.conformance import ROUNDS

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--json", default=None)
    parser.add_argument("--profile", action="append", choices=sorted(ADAPTERS))
    args = parser.parse_args()
    results = [measure(profile, args.seed, args.rounds) for profile in args.profile or ADAPTERS]
    for row in results:
        print(
            f"{row['profile']:>17}: concurrency {row['concurrency_seconds']:.2f} s, "
            f"sequential iso-01/iso-02 {row['isolation_seconds']:.2f} s, ratio {row['ratio']}x, "
            f"problems {row['problems']}"
        )
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
