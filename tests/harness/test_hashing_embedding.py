"""Every copy of the hashing embedding gives the vectors of
``schemas/vectors/embedding/hashing-256.json``: the reference's (numpy, float32), the library
harnesses' (``harnesses/hashing_embedding.py``, standard library only: they run in virtualenvs of
their own) and Neo's (``harnesses/neo/embedding.mjs``, run with node when it is on PATH). No other
copy hides in a harness."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from kbconform_reference.embedding import HashingEmbedding
from tests.harness.installs import load_script

ROOT = Path(__file__).resolve().parents[2]
HARNESSES = ROOT / "harnesses"
VECTORS = json.loads(
    (ROOT / "schemas" / "vectors" / "embedding" / "hashing-256.json").read_text(encoding="utf-8")
)
DIMENSIONS: int = VECTORS["dimensions"]
CASES = [pytest.param(case, id=case["description"]) for case in VECTORS["cases"]]
#: float32 rounding of a pure-Python float64 vector, and of the numpy one, stays well inside it.
TOLERANCE = 1e-6


def _differences(expected: dict[str, float], got: list[float]) -> list[str]:
    """Each bucket where ``got`` is not the expected (sparse) vector, to within TOLERANCE."""
    assert len(got) == DIMENSIONS
    return [
        f"bucket {i}: expected {expected.get(str(i), 0.0)}, got {value}"
        for i, value in enumerate(got)
        if abs(value - expected.get(str(i), 0.0)) > TOLERANCE
    ]


def test_the_vectors_are_unit_vectors_and_differ_from_one_another() -> None:
    """The vectors can catch a broken copy: each is L2-normalized, texts that differ only in case
    share a vector, and the others are distinct."""
    vectors = {case["text"]: case["vector"] for case in VECTORS["cases"]}
    for vector in vectors.values():
        assert abs(sum(v * v for v in vector.values()) - 1.0) < 1e-5
    assert vectors["TENANT"] == vectors["tenant"]
    distinct = {json.dumps(v, sort_keys=True) for t, v in vectors.items() if t != "TENANT"}
    assert len(distinct) == len(vectors) - 1 - 1  # the two texts without tokens share bucket 0


@pytest.mark.parametrize("case", CASES)
def test_the_reference_embedding_gives_the_vector(case: dict[str, Any]) -> None:
    """kbconform_reference.embedding.HashingEmbedding, the copy the others follow."""
    (row,) = HashingEmbedding(DIMENSIONS)([case["text"]])
    assert _differences(case["vector"], [float(v) for v in row]) == []


@pytest.mark.parametrize("case", CASES)
def test_the_library_harnesses_embedding_gives_the_vector(case: dict[str, Any]) -> None:
    """harnesses/hashing_embedding.py, which the mem0 and LangGraph harnesses embed with."""
    module = load_script(HARNESSES / "hashing_embedding.py")
    assert _differences(case["vector"], module.embed(case["text"], DIMENSIONS)) == []


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not on PATH: no JavaScript to run")
def test_neos_embedding_gives_every_vector() -> None:
    """harnesses/neo/embedding.mjs, run by node over every text of the vectors."""
    script = (
        "import {HashingEmbedding} from './harnesses/neo/embedding.mjs';"
        "const texts = JSON.parse(process.argv[1]);"
        f"const e = new HashingEmbedding({DIMENSIONS});"
        "process.stdout.write(JSON.stringify(texts.map(t => e.embed(t))));"
    )
    texts = [case["text"] for case in VECTORS["cases"]]
    done = subprocess.run(
        ["node", "--input-type=module", "-e", script, json.dumps(texts)],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    rows = json.loads(done.stdout)
    found = {
        case["description"]: _differences(case["vector"], row)
        for case, row in zip(VECTORS["cases"], rows, strict=True)
    }
    assert found == {case["description"]: [] for case in VECTORS["cases"]}


def test_no_harness_keeps_a_copy_of_its_own() -> None:
    """The mem0 and LangGraph harnesses import the shared copy; BLAKE2b appears in no other harness
    file than the two copies tested here (control: it does appear in those)."""
    hashing = {
        str(path.relative_to(HARNESSES))
        for path in HARNESSES.rglob("*")
        if path.suffix in (".py", ".mjs")
        and "node_modules" not in path.parts
        and ".venv" not in path.parts
        and "blake2b" in path.read_text(encoding="utf-8")
    }
    assert hashing == {"hashing_embedding.py", "neo/embedding.mjs"}
    for name in ("mem0", "langgraph"):
        source = (HARNESSES / name / "harness.py").read_text(encoding="utf-8")
        assert "from hashing_embedding import" in source, name
