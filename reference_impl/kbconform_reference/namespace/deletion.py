"""Deletion signals: validation with their error codes, revision resolvers, and the delete plan.

Precedence (schemas/deletion-signaling.md): the revision boundary computes the change set,
tombstones add explicit deletes, the manifest reconciles what remains; paths written by the
same push (``files``) are never deleted by it. Every lookup is scoped to the requester's tenant.
Validation, the error codes and the repository defaults are the kit's
(:mod:`kbconform.adapter`: ``check_deletion_signal``, ``signal_paths``, ``boundary_repo``).
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from pathlib import Path

from kbconform.adapter import boundary_repo, check_deletion_signal, signal_paths
from kbconform.errors import RevisionBoundaryUnavailable

__all__ = ["GitResolver", "boundary_repo", "check_signal", "explicit_paths"]

#: The signal, or a ContractViolation whose code names the broken mechanism.
check_signal = check_deletion_signal
#: ``(tombstoned, written)`` as (repoSlug, sourcePath) pairs; refuses ambiguous signals.
explicit_paths = signal_paths


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
