"""Deletion signals: validation with their error codes, revision resolvers, and the delete plan.

Precedence (schemas/deletion-signaling.md): the revision boundary computes the change set,
tombstones add explicit deletes, the manifest reconciles what remains; paths written by the
same push (``files``) are never deleted by it. Every lookup is scoped to the requester's tenant.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from kbconform.contract import explain, is_valid
from kbconform.errors import ContractViolation, Problem, RevisionBoundaryUnavailable

_SCHEMA = "deletion-signal-v1"


class GitResolver:
    """Resolves revision boundaries in local git repositories with the git command line.

    ``repositories`` maps a repo slug to a working tree or bare repository.
    """

    def __init__(self, repositories: Mapping[str, str | Path]) -> None:
        self.repositories = {slug: Path(path) for slug, path in repositories.items()}

    def deleted_paths(self, repo_slug: str, base: str, head: str) -> list[str]:
        where = self.repositories.get(repo_slug)
        if where is None:
            raise RevisionBoundaryUnavailable("apply_deletion_signal", f"no git repository for {repo_slug!r}")
        command = [
            "git",
            "-C",
            str(where),
            "diff",
            "--name-only",
            "--no-renames",
            "--diff-filter=D",
            "-z",
            base,
            head,
            "--",
        ]
        try:
            done = subprocess.run(command, capture_output=True, check=False, timeout=60)
        except (OSError, subprocess.TimeoutExpired) as error:
            raise RevisionBoundaryUnavailable("apply_deletion_signal", f"git failed: {error}") from None
        if done.returncode != 0:
            reason = done.stderr.decode("utf-8", "replace").strip() or f"git exited {done.returncode}"
            raise RevisionBoundaryUnavailable("apply_deletion_signal", reason)
        return sorted(p for p in done.stdout.decode("utf-8").split("\0") if p)


def _code(problems: Iterable[Problem]) -> str:
    problems = list(problems)
    pointers = [p.pointer for p in problems]
    if any(
        p.pointer.startswith(("/baseRevision", "/headRevision")) or p.keyword == "dependentRequired"
        for p in problems
    ):
        return "KB_REVISION_BOUNDARY_INVALID"
    if pointers and all(p.startswith("/deleted") for p in pointers):
        return "KB_TOMBSTONE_INVALID"
    if pointers and all(p.startswith("/manifestSnapshot") for p in pointers):
        return "KB_MANIFEST_INVALID"
    return "KB_DELETE_SIGNAL_INVALID"


def check_signal(signal: object) -> Mapping[str, Any]:
    """The signal, or a :class:`ContractViolation` whose code names the broken mechanism."""
    if is_valid(signal, _SCHEMA):
        assert isinstance(signal, Mapping)
        return signal
    problems = explain(signal, _SCHEMA)
    raise ContractViolation(contract=_SCHEMA, problems=problems, code=_code(problems))


def _invalid(code: str, pointer: str, keyword: str, expected: str, got: object) -> ContractViolation:
    return ContractViolation(
        contract=_SCHEMA, problems=(Problem(pointer, keyword, expected, repr(got)),), code=code
    )


def explicit_paths(signal: Mapping[str, Any]) -> tuple[set[tuple[str, str]], set[tuple[str, str]]]:
    """``(tombstoned, written)`` as (repoSlug, sourcePath) pairs; refuses ambiguous signals."""
    default = signal.get("repoSlug")

    def pairs(key: str, code: str) -> set[tuple[str, str]]:
        found = set()
        for index, entry in enumerate(signal.get(key, [])):
            repo = entry.get("repoSlug", default)
            if repo is None:
                raise _invalid(
                    code, f"/{key}/{index}", "repoSlug", "a repoSlug on the entry or on the signal", entry
                )
            found.add((repo, entry["sourcePath"]))
        return found

    tombstoned = pairs("deleted", "KB_TOMBSTONE_INVALID")
    written = pairs("files", "KB_DELETE_SIGNAL_INVALID")
    both = sorted(tombstoned & written)
    if both:
        raise _invalid(
            "KB_DELETE_SIGNAL_INVALID", "/files", "conflict", "no path both written and deleted", both[0]
        )
    return tombstoned, written


def boundary_repo(signal: Mapping[str, Any]) -> str:
    """The repository a revision boundary is about: the signal's, else the manifest's."""
    repo = signal.get("repoSlug") or (signal.get("manifestSnapshot") or {}).get("repoSlug")
    if repo is None:
        raise _invalid(
            "KB_REVISION_BOUNDARY_INVALID",
            "/repoSlug",
            "required",
            "a repoSlug for the revision boundary",
            None,
        )
    return str(repo)
