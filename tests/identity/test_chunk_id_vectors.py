"""The chunk-id vectors of both profiles, and Node's own JSON.stringify as a second opinion."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from kbconform._resources import data_dir
from kbconform.errors import ContractViolation
from kbconform.identity import (
    kbconform_v1_id,
    neo_compat_id,
    neo_content_hash,
    neo_ingest_hash,
    neo_stored_id,
)

VECTORS = data_dir("schemas") / "vectors" / "chunk-ids"


def _load(name: str) -> dict[str, Any]:
    return json.loads((VECTORS / name).read_text(encoding="utf-8"))  # type: ignore[no-any-return]


NEO = _load("neo-compat.json")
KB = _load("kbconform-v1.json")


def _neo(case: dict[str, Any]) -> str:
    context = case.get("context", {})
    args = (context.get("tenantId"), context.get("repoSlug"))
    derivation = case["derivation"]
    if derivation == "content-hash":
        return neo_content_hash(case["input"])
    if derivation == "stored-id":
        return neo_stored_id(case["input"], *args)
    if derivation == "ingest-hash":
        return neo_ingest_hash(case["input"], *args)
    return neo_compat_id(case["input"], *args)


def test_each_profile_has_at_least_thirty_vectors() -> None:
    """Both profiles carry enough cases, with refusals for kbconform-v1."""
    assert len(NEO["cases"]) >= 30
    assert len(KB["cases"]) >= 30
    assert any("error" in case for case in KB["cases"])
    assert len({case["expected"] for case in NEO["cases"]}) >= 30  # not one hash repeated


@pytest.mark.parametrize("case", NEO["cases"], ids=lambda case: case["description"])
def test_neo_compat_reproduces_every_vector(case: dict[str, Any]) -> None:
    """Each derivation gives the expected hex digest."""
    assert _neo(case) == case["expected"]


@pytest.mark.parametrize("case", KB["cases"], ids=lambda case: case["description"])
def test_kbconform_v1_reproduces_every_vector(case: dict[str, Any]) -> None:
    """Each id matches; each refusal is refused for the named rule."""
    if "error" in case:
        with pytest.raises(ContractViolation) as caught:
            kbconform_v1_id(case["record"], case["tenantId"], case["repoSlug"])
        assert caught.value.problems[0].keyword == case["error"]
    else:
        assert kbconform_v1_id(case["record"], case["tenantId"], case["repoSlug"]) == case["expected"]


_NODE_SCRIPT = r"""
const crypto = require("crypto");
const fs = require("fs");
const sha = (value) => crypto.createHash("sha256").update(JSON.stringify(value), "utf8").digest("hex");
const D = {tenantId: "neo-shared", repoSlug: "neo"};
const contentHash = (c) => sha({tenantId: c.tenantId ?? D.tenantId, repoSlug: c.repoSlug ?? D.repoSlug,
  type: c.type, name: c.name, description: c.description, content: c.content, extends: c.extends,
  configType: c.configType, params: c.params, returns: c.returns});
const storedId = (c, t, r) => sha({tenantId: t, repoSlug: r, hash: c.hash, type: c.type, name: c.name, source: c.source});
const ingestHash = (rec, t, r) => {
  const values = {tenantId: t, repoSlug: rec.repoSlug ?? r};
  for (const f of rec.hashInputs) { if (f in rec) values[f] = rec[f]; }
  return sha(values);
};
const chunkId = (rec, t, r) => storedId({hash: ingestHash(rec, t, r), type: rec.kind, name: rec.name, source: rec.sourcePath}, t, r);
const vectors = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const out = vectors.cases.map((c) => {
  const t = c.context && c.context.tenantId, r = c.context && c.context.repoSlug;
  switch (c.derivation) {
    case "content-hash": return contentHash(c.input);
    case "stored-id": return storedId(c.input, t, r);
    case "ingest-hash": return ingestHash(c.input, t, r);
    default: return chunkId(c.input, t, r);
  }
});
process.stdout.write(JSON.stringify(out));
"""


@pytest.mark.skipif(
    shutil.which("node") is None, reason="node is not on PATH: no JavaScript to cross-check against"
)
def test_node_computes_the_same_neo_compat_digests(tmp_path: Path) -> None:
    """An independent JavaScript implementation, run by Node, agrees with every vector."""
    script = tmp_path / "neo.js"
    script.write_text(_NODE_SCRIPT, encoding="utf-8")
    result = subprocess.run(
        ["node", str(script), str(VECTORS / "neo-compat.json")],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == [case["expected"] for case in NEO["cases"]]
