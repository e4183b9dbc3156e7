"""Golden fixtures: the exact bytes the registry produces over the shipped workspaces.

``schemas/vectors/workspaces/workspaces.json`` lists each fixture: a workspace directory, its
configuration, the identity it claims and its golden file. A golden file is JSON Lines; each
line is the RFC 8785 canonical JSON of ``{"ids": {profile: id}, "record": record}``. The golden
files change only through :func:`update` (``kbconform golden update``).
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import rfc8785

from kbconform._resources import data_dir
from kbconform.identity import PROFILES, chunk_id
from kbconform.workspace._config import Config, read_config
from kbconform.workspace._scan import scan


@dataclass(frozen=True, slots=True)
class Fixture:
    """One workspace fixture from ``workspaces.json``."""

    name: str
    directory: Path
    config: Path | None
    tenant_id: str
    repo_slug: str
    root_kind: str
    golden: Path

    def load_config(self) -> Config:
        return read_config(self.config) if self.config else Config.default()

    def generate(self, config: Config | None = None) -> bytes:
        """The golden bytes, from a fresh scan (with ``config`` instead of the fixture's, if given)."""
        records = scan(
            self.directory,
            config or self.load_config(),
            tenant_id=self.tenant_id,
            repo_slug=self.repo_slug,
            root_kind=self.root_kind,
        )
        return render(records, self.tenant_id, self.repo_slug)


def fixtures(base: Path | None = None) -> tuple[Fixture, ...]:
    """The workspace fixtures shipped with kbconform (or found under ``base``)."""
    base = base or data_dir("schemas") / "vectors" / "workspaces"
    manifest = json.loads((base / "workspaces.json").read_text(encoding="utf-8"))
    return tuple(
        Fixture(
            name=entry["name"],
            directory=base / entry["directory"],
            config=base / entry["config"] if entry["config"] else None,
            tenant_id=entry["tenantId"],
            repo_slug=entry["repoSlug"],
            root_kind=entry["rootKind"],
            golden=base / entry["golden"],
        )
        for entry in manifest["workspaces"]
    )


def render(records: Iterable[dict[str, Any]], tenant_id: str, repo_slug: str) -> bytes:
    """Canonical JSON Lines: each record with its id under every profile."""
    lines = (
        rfc8785.dumps({"ids": {p: chunk_id(r, tenant_id, repo_slug, p) for p in PROFILES}, "record": r})
        + b"\n"
        for r in records
    )
    return b"".join(lines)


def diff(expected: bytes, actual: bytes, *, limit: int = 3, name: str = "golden") -> str:
    """A unified diff of the first ``limit`` differing records, pretty-printed; empty when equal."""
    if expected == actual:
        return ""
    old, new = expected.splitlines(), actual.splitlines()
    shown: list[str] = []
    differing = [i for i in range(max(len(old), len(new))) if old[i : i + 1] != new[i : i + 1]]
    for index in differing[:limit]:
        before, after = _pretty(old[index : index + 1]), _pretty(new[index : index + 1])
        if before == after:  # the same JSON in other bytes (not canonical): show the raw lines
            before, after = [_raw(old[index])], [_raw(new[index])]
        shown.extend(
            difflib.unified_diff(
                before, after, f"{name} (line {index + 1})", f"generated (line {index + 1})", lineterm=""
            )
        )
    more = len(differing) - limit
    if more > 0:
        shown.append(f"... and {more} more differing line(s)")
    header = f"{name}: {len(old)} lines expected, {len(new)} generated, {len(differing)} differ"
    return "\n".join([header, *shown])


def _pretty(line: Sequence[bytes]) -> list[str]:
    if not line:
        return []
    try:
        return json.dumps(json.loads(line[0]), indent=2, ensure_ascii=False, sort_keys=True).splitlines()
    except ValueError:
        return [_raw(line[0])]


def _raw(line: bytes) -> str:
    return line.decode("utf-8", "replace")


def check(fixture: Fixture) -> str:
    """An empty string when the golden file holds exactly what a fresh scan produces, else a diff."""
    current = fixture.golden.read_bytes() if fixture.golden.exists() else b""
    return diff(current, fixture.generate(), name=str(fixture.golden.name))


def update(fixture: Fixture) -> bool:
    """Rewrite the golden file from a fresh scan (atomically); True when its bytes changed."""
    generated = fixture.generate()
    if fixture.golden.exists() and fixture.golden.read_bytes() == generated:
        return False
    partial = fixture.golden.with_name(fixture.golden.name + ".partial")
    partial.write_bytes(generated)
    partial.replace(fixture.golden)
    return True
