"""What a deletion signal and a sync cost when their undo log comes from the lookup that found
the rows, against the lookup then a read of the same rows again, in one process.

    python benchmarks/undo_reads.py [--adapter chroma-embedded|memory] [--rounds N]
                                    [--suites] [--json PATH]

Before: a deletion signal looked up the manifest's repository, then each repository's rows by
path (the manifest's again), then read the rows to delete again with their embeddings (the undo
log); a sync looked up the stale rows, then read them again. Now each row is read once, with its
embedding. :class:`Before` is the reference with the earlier lookups (the undo log then falls
back to the read it did before). Prints, for each, the store calls of one signal (a manifest
that drops 200 of a tenant's rows, as atomic-03's) and of one sync (200 rows, 100 rewritten, 100
new, 100 stale, as atomic-04's), and the CPU milliseconds of each, interleaved medians. A write's
store calls are where the atomicity suite fails it: one faulted attempt, on a freshly seeded
backend, each. ``--suites``: atomic-03 and atomic-04 (both kinds of fault) on both, each test's
backend calls and CPU seconds (``suite_calls.py``).
"""

from __future__ import annotations

import argparse
import builtins
import statistics
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from _bench import report

from kbconform.adapter import BackendOptions
from kbconform.identity import Principal
from kbconform.profiles.tenant_namespace.data import record
from kbconform_reference.namespace.adapter import ReferenceAdapter, SwitchedStore
from kbconform_reference.namespace.service import KnowledgeBase, Settings

HERE = Path(__file__).resolve().parent
ROWS = 200


class Before(KnowledgeBase):
    """The reference with the lookups it made before: rows without their embeddings, the
    manifest's repository read again by path, and the undo log read after them."""

    def _doomed(
        self,
        principal: Principal,
        signal: Mapping[str, Any],
        targets: set[tuple[str, str]],
        written: set[tuple[str, str]],
    ) -> tuple[builtins.list[str], set[tuple[str, str]]]:
        targets = set(targets)
        tenant = {"tenantId": {"$eq": principal.tenant_id}}
        with self._store_call("apply_deletion_signal"):
            manifest = signal.get("manifestSnapshot")
            if manifest is not None:
                keep = set(manifest["pathsAfterPush"])
                rows = self.store.get(where={"$and": [tenant, {"repoSlug": {"$eq": manifest["repoSlug"]}}]})
                targets |= {
                    (str(manifest["repoSlug"]), str(m["sourcePath"]))
                    for m in rows.metadatas
                    if m["sourcePath"] not in keep
                }
            targets -= written
            doomed: builtins.list[str] = []
            for repo in sorted({r for r, _ in targets}):
                paths = sorted(p for r, p in targets if r == repo)
                clause = {"$and": [tenant, {"repoSlug": {"$eq": repo}}, {"sourcePath": {"$in": paths}}]}
                rows = self.store.get(where=clause)
                doomed.extend(
                    i
                    for i, m in zip(rows.ids, rows.metadatas, strict=True)
                    if m["tenantId"] == principal.tenant_id
                )
        return doomed, targets

    def _stale(self, principal: Principal, repo_slug: str, keep: set[str]) -> builtins.list[str]:
        tenant = {"tenantId": {"$eq": principal.tenant_id}}
        rows = self.store.get(where={"$and": [tenant, {"repoSlug": {"$eq": repo_slug}}]})
        return [
            i
            for i, m in zip(rows.ids, rows.metadatas, strict=True)
            if m["tenantId"] == principal.tenant_id
            and m["repoSlug"] == repo_slug
            and m["sourcePath"] not in keep
        ]


class _Adapter(ReferenceAdapter):
    """The reference adapter opening ``kind`` backends."""

    kind: type[KnowledgeBase] = KnowledgeBase

    def open(self, options: BackendOptions) -> KnowledgeBase:
        store = self._store()
        used = store if options.store_fails is None else SwitchedStore(store, options.store_fails)
        backend = self.kind(used, settings=Settings(spoof_mode=options.spoof_mode), resolver=options.resolver)
        return self._opened(backend, getattr(store, "drop", None))


class _BeforeAdapter(_Adapter):
    kind = Before


MODE = ["chroma-embedded"]


def before() -> ReferenceAdapter:
    """The reference with the earlier lookups (``--suites`` loads it by name)."""
    return _BeforeAdapter(MODE[0])  # type: ignore[arg-type]


def after() -> ReferenceAdapter:
    """The reference as it is."""
    return _Adapter(MODE[0])  # type: ignore[arg-type]


def _write(adapter: ReferenceAdapter, which: str) -> tuple[int, float]:
    """One write on a freshly seeded backend: its store calls and CPU milliseconds."""
    calls = [0]

    def counted() -> bool:
        calls[0] += 1
        return False

    backend = adapter.open(BackendOptions(spoof_mode="overwrite", store_fails=counted))
    acme = Principal("acme", "agent-1")
    old = [record(f"docs/old-{n}.md", f"old {n}", tenant="acme", repo="bulk") for n in range(ROWS)]
    backend.ingest(acme, old)
    write: Callable[[], Any]
    if which == "signal":
        kept = [f"docs/old-{n}.md" for n in range(ROWS // 2)]
        write = lambda: backend.apply_deletion_signal(  # noqa: E731
            acme, {"repoSlug": "bulk", "manifestSnapshot": {"repoSlug": "bulk", "pathsAfterPush": kept}}
        )
    else:
        by_path = ["sourcePath", "kind", "name"]
        batch = [
            *(
                record(f"docs/old-{n}.md", f"second {n}", tenant="acme", repo="bulk", hashInputs=by_path)
                for n in range(ROWS // 2)
            ),
            *(record(f"docs/new-{n}.md", f"new {n}", tenant="acme", repo="bulk") for n in range(ROWS // 2)),
        ]
        write = lambda: backend.sync(acme, "bulk", batch)  # noqa: E731
    calls[0] = 0
    start = time.process_time()
    write()
    cpu = (time.process_time() - start) * 1000
    adapter.close(backend)
    return calls[0], cpu


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--adapter", choices=["chroma-embedded", "memory"], default="chroma-embedded")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--suites", action="store_true")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    MODE[0] = args.adapter
    sides = {"before": before(), "after": after()}
    figures: dict[str, Any] = {}
    try:
        for which in ("signal", "sync"):
            cpu: dict[str, list[float]] = {side: [] for side in sides}
            calls: dict[str, int] = {}
            for _ in range(args.rounds):
                for side, adapter in sides.items():
                    calls[side], spent = _write(adapter, which)
                    cpu[side].append(spent)
            for side in sides:
                figures[f"{which}_store_calls_{side}"] = calls[side]
                figures[f"{which}_cpu_ms_{side}"] = round(statistics.median(cpu[side]), 2)
            figures[f"{which}_cpu_ratio"] = round(
                figures[f"{which}_cpu_ms_before"] / max(figures[f"{which}_cpu_ms_after"], 1e-9), 2
            )
    finally:
        for adapter in sides.values():
            adapter.shutdown()
    if args.suites:
        sys.path.insert(0, str(HERE))
        sys.modules.setdefault("undo_reads", sys.modules[__name__])
        import suite_calls

        atomic = HERE.parent / "suites" / "tenant_namespace" / "test_atomicity.py"
        tests = [
            f"{atomic}::test_a_deletion_signal_the_store_fails_part_way_deletes_nothing",
            f"{atomic}::test_a_sync_the_store_fails_part_way_writes_and_deletes_nothing",
        ]
        for side in sides:
            figures[f"suites_{side}"] = suite_calls.main(["--adapter", f"undo_reads:{side}", *tests])
    return report(figures, args.json)


if __name__ == "__main__":
    main(sys.argv[1:])
