"""Records per second of kbconform's accept path against python-jsonschema and raw jsonschema-rs.

All three run in one process on the same records, so the ratios hold on a noisy machine.
Goals: kbconform >= 30x python-jsonschema, and >= 0.5x raw jsonschema-rs.

    python benchmarks/validation.py [--records 10000] [--repeat 5] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import jsonschema
import jsonschema_rs

import kbconform
from kbconform.contract import load, registry, schema_names, uri

SCHEMA = "parsed-chunk-v1"


def make_records(count: int, seed: int = 7) -> list[dict[str, Any]]:
    """Valid parsed chunks of varied shape and size."""
    rng = random.Random(seed)
    kinds = ["module-context", "class-properties", "method", "doc-section", "skill-section"]
    records = []
    for index in range(count):
        record: dict[str, Any] = {
            "schemaVersion": "1.0.0",
            "tenantId": f"tenant-{index % 97}",
            "repoSlug": f"org-{index % 13}/repo-{index % 7}",
            "rootKind": rng.choice(["neo-workspace", "bare-repo", "external-source"]),
            "sourcePath": f"src/module_{index % 211}/file_{index}.py",
            "content": " ".join(
                rng.choice(["alpha", "beta", "gamma", "delta"]) for _ in range(rng.randint(5, 80))
            ),
            "hashInputs": ["content", "name", "kind"][: rng.randint(1, 3)],
            "parserId": "python-ast",
            "parserVersion": "1.4.2",
            "kind": rng.choice(kinds),
            "name": f"Symbol{index}",
        }
        if index % 3 == 0:
            record.update(
                line_start=index % 500 + 1, line_end=index % 500 + 20, className=f"Class{index % 9}"
            )
        if index % 5 == 0:
            record["customMeta"] = {"tags": ["a", "b"], "depth": index % 4}
        records.append(record)
    return records


def rate(check: Callable[[Any], bool], records: Sequence[Any], repeat: int) -> float:
    """Best records/s over ``repeat`` passes; every record must be accepted."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        accepted = sum(1 for record in records if check(record))
        best = min(best, time.perf_counter() - start)
        assert accepted == len(records), f"only {accepted} of {len(records)} accepted"
    return len(records) / best


def main(argv: Sequence[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", type=Path, help="write the figures and ratios here")
    arguments = parser.parse_args(argv)
    records = make_records(arguments.records)

    python_validator = jsonschema.Draft202012Validator(load(SCHEMA), registry=registry())
    raw = jsonschema_rs.validator_for(
        dict(load(SCHEMA)),
        registry=jsonschema_rs.Registry([(uri(name), dict(load(name))) for name in schema_names()]),
    )
    kbconform.is_valid(records[0], SCHEMA)  # compile once, outside the timing
    figures = {
        "kbconform_records_per_s": rate(lambda r: kbconform.is_valid(r, SCHEMA), records, arguments.repeat),
        "jsonschema_rs_records_per_s": rate(raw.is_valid, records, arguments.repeat),
        "python_jsonschema_records_per_s": rate(
            python_validator.is_valid, records[: max(1, len(records) // 10)], max(1, arguments.repeat // 2)
        ),
    }
    figures["ratio_vs_python_jsonschema"] = (
        figures["kbconform_records_per_s"] / figures["python_jsonschema_records_per_s"]
    )
    figures["ratio_vs_jsonschema_rs"] = (
        figures["kbconform_records_per_s"] / figures["jsonschema_rs_records_per_s"]
    )

    print(f"{'validator':<28}{'records/s':>14}")
    for name, key in [
        ("kbconform accept path", "kbconform_records_per_s"),
        ("jsonschema-rs (raw)", "jsonschema_rs_records_per_s"),
        ("python-jsonschema (cached)", "python_jsonschema_records_per_s"),
    ]:
        print(f"{name:<28}{figures[key]:>14,.0f}")
    print(f"kbconform / python-jsonschema: {figures['ratio_vs_python_jsonschema']:.1f}x (goal >= 30x)")
    print(f"kbconform / jsonschema-rs:     {figures['ratio_vs_jsonschema_rs']:.2f}x (goal >= 0.5x)")
    if arguments.json:
        arguments.json.write_text(json.dumps({"records": len(records), **figures}, indent=2) + "\n")
    return figures


if __name__ == "__main__":
    main()
