"""Records per second of kbconform's public accept path against the validators it stands on.

``kbconform.validate(record, "parsed-chunk-v1")`` (the JSON rule where jsonschema-rs does not
apply it, then the compiled validator) is timed against that same compiled jsonschema-rs
validator's ``is_valid`` and against python-jsonschema, on the same records, in one process.
The timings interleave (each round times every validator once) and the best round counts, so
the ratios hold on a noisy, shared machine.

Goals: ``kbconform.validate`` takes at most 1.2x the time of the compiled validator it wraps
(``ratio_vs_jsonschema_rs`` >= 1 / 1.2), and is >= 30x python-jsonschema.

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

import kbconform
from kbconform.contract import load, registry
from kbconform.contract._validate import _compiled

SCHEMA = "parsed-chunk-v1"
GOAL = 1.2  # at most this many times the compiled validator's time
_BATCH = 2_000  # records per timed pass: long enough to time, short enough to interleave often


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


#: A check and the schema name it takes after the record (None: the record alone).
Check = tuple[Callable[..., Any], "str | None"]


def _pass(check: Check, records: Sequence[Any]) -> float:
    """Seconds for one pass of a check over ``records``: the call and nothing else in the loop.

    ``kbconform.validate`` is looked up on the package at every call, as user code does.
    """
    function, schema = check
    start = time.perf_counter()
    if schema is None:
        for record in records:
            function(record)
    elif function is kbconform.validate:
        for record in records:
            kbconform.validate(record, schema)
    else:
        for record in records:
            function(record, schema)
    return time.perf_counter() - start


def _accepts(check: Check, record: Any) -> bool:
    function, schema = check
    result = function(record) if schema is None else function(record, schema)
    return result is not False  # validate returns None (or raises)


def rates(checks: Sequence[Check], records: Sequence[Any], rounds: int) -> list[float]:
    """Best records/s of each check, timed in interleaved rounds over the same batches.

    Every check must accept every record (checked once, before the timing).
    """
    for check in checks:
        accepted = sum(1 for record in records if _accepts(check, record))
        assert accepted == len(records), f"only {accepted} of {len(records)} accepted"
    batches = [records[start : start + _BATCH] for start in range(0, len(records), _BATCH)]
    best = [float("inf")] * len(checks)
    for _ in range(rounds):
        for index, check in enumerate(checks):
            best[index] = min(best[index], sum(_pass(check, batch) for batch in batches))
    return [len(records) / seconds for seconds in best]


def main(argv: Sequence[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5, help="interleaved rounds (the best counts)")
    parser.add_argument("--json", type=Path, help="write the figures and ratios here")
    arguments = parser.parse_args(argv)
    records = make_records(arguments.records)

    compiled = _compiled(SCHEMA)  # the validator kbconform.validate wraps, compiled once
    python_validator = jsonschema.Draft202012Validator(load(SCHEMA), registry=registry())
    kbconform.validate(records[0], SCHEMA)  # build the accept path once, outside the timing
    kbconform_rate, raw_rate = rates(
        [(kbconform.validate, SCHEMA), (compiled.is_valid, None)], records, max(arguments.repeat * 4, 1)
    )
    (python_rate,) = rates(
        [(python_validator.is_valid, None)],
        records[: max(1, len(records) // 10)],
        max(1, arguments.repeat // 2),
    )
    figures = {
        "kbconform_records_per_s": kbconform_rate,
        "jsonschema_rs_records_per_s": raw_rate,
        "python_jsonschema_records_per_s": python_rate,
        "ratio_vs_python_jsonschema": kbconform_rate / python_rate,
        "ratio_vs_jsonschema_rs": kbconform_rate / raw_rate,
    }

    print(f"{'validator':<36}{'records/s':>14}")
    for name, key in [
        ("kbconform.validate (accept path)", "kbconform_records_per_s"),
        ("jsonschema-rs is_valid (compiled)", "jsonschema_rs_records_per_s"),
        ("python-jsonschema (cached)", "python_jsonschema_records_per_s"),
    ]:
        print(f"{name:<36}{figures[key]:>14,.0f}")
    slowdown = 1 / figures["ratio_vs_jsonschema_rs"]
    versus_python = figures["ratio_vs_python_jsonschema"]
    print(f"kbconform.validate / python-jsonschema speed: {versus_python:.1f}x (goal >= 30x)")
    print(f"kbconform.validate time / compiled validator time: {slowdown:.2f}x (goal <= {GOAL}x)")
    if arguments.json:
        arguments.json.write_text(json.dumps({"records": len(records), **figures}, indent=2) + "\n")
    return figures


if __name__ == "__main__":
    main()
