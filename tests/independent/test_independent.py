"""The independent backends against every suite of their profile: each passes every test of the
catalogue it does not decline, and declines only what its manifest declines with a reason.

They are not the references: ``sqlite_namespace.py`` (tenant-namespace: one SQLite table, the
read filter in SQL, a transaction per write), ``lancedb_namespace.py`` (tenant-namespace: one
LanceDB table, filters written by the kit's ``sql_literal`` and ``where_literal``, a failed
write restoring the table version it started from), ``sqlite_pool.py`` (project-pool: membership as
SQLite tables, every search one scoped SQL statement, every write and membership change one
transaction), ``sqlite_grant.py`` (kb-grant: the catalogue and every store's documents as
rows of one SQLite store, authorization joined in SQL, a transaction per write, copy and move)
``sqlite_memory.py`` (memory-scope in prefix mode: namespace paths compared as exact
prefixes in SQL, a transaction per write) and ``sqlite_shared_vectors.py`` (memory-scope with
named keys: a scope as rows of its keys, each text's vector stored once and shared between
scopes, counted by its holders) are written from the spec docs, and so are the in-memory doubles
``tests/plugin/pool_adapter.py`` (project-pool: dictionaries of internal ids) and
``tests/plugin/grant_adapter.py`` (kb-grant: held to every kb-grant test by
``tests/plugin/test_kb_grant_suite.py``). They are the control that keeps the suites' model
honest: a test one fails is a disagreement between the model and the spec, settled in the spec.
The thorough profile at several seeds is the nightly command of ``tests/README.md``.

The LanceDB backend runs here on every test but the reader storms and the scale test
(:data:`LANCEDB_SKIPS`, for the reason given there); its every test at the default profile is
``kbconform run --adapter tests.independent.lancedb_namespace:make --seed 11`` from the
repository root, and at the thorough profile the nightly command."""

from __future__ import annotations

import pytest

from kbconform import report, runner
from kbconform._levels import LEVELS
from tests.independent import (
    lancedb_namespace,
    sqlite_grant,
    sqlite_memory,
    sqlite_namespace,
    sqlite_pool,
    sqlite_shared_vectors,
)
from tests.plugin import pool_adapter

#: Each test here runs the suites in a child process: the slow tier.
pytestmark = pytest.mark.slow

#: The tests the LanceDB backend is not run on here, and why: every LanceDB read crosses three
#: threads (the caller's, LanceDB's event loop, its Rust runtime), so under the reader storms'
#: thread switch every 10 microseconds (conc-01, conc-02) a test takes about twenty seconds, and
#: together they cost a fifth of its run; they prove that no caller's state is kept between
#: calls, which this backend has nowhere to keep (every read builds its filter from its own
#: principal, as ``sqlite_namespace`` does, which runs them). scale-01 crosses an approximate
#: index's threshold, and this backend ranks exactly, as ``sqlite_namespace`` does. The writers'
#: storm (conc-03, its one writer lock and its versions) runs, and so does every test of its own
#: design: the state machine in both spoof modes, deletion, pages, atomicity (its versions
#: restored), client where (its typed columns), backup and maintenance.
LANCEDB_SKIPS = ("conc-01[*]", "conc-02[*]", "scale-01")


def _declined(manifest: dict[str, object]) -> set[str]:
    features = manifest.get("features", {})
    assert isinstance(features, dict)
    return {name for name, offer in features.items() if isinstance(offer, str)}


def _lancedb_selection() -> tuple[str, ...]:
    """Every test id a full run of the LanceDB backend reports but :data:`LANCEDB_SKIPS`."""
    left_out = set(report.matching(LANCEDB_SKIPS))
    return tuple(
        t["id"] for t in report.expected(lancedb_namespace.MANIFEST, LEVELS[-1]) if t["id"] not in left_out
    )


@pytest.mark.parametrize(
    ("factory", "manifest", "declined"),
    [
        ("tests.independent.sqlite_namespace:make", sqlite_namespace.MANIFEST, {"workspace-scan"}),
        ("tests.independent.lancedb_namespace:make", lancedb_namespace.MANIFEST, {"workspace-scan"}),
        ("tests.independent.sqlite_pool:make", sqlite_pool.MANIFEST, set()),
        ("tests.plugin.pool_adapter:make", pool_adapter.MANIFEST, set()),
        ("tests.independent.sqlite_grant:make", sqlite_grant.MANIFEST, set()),
        ("tests.independent.sqlite_memory:make", sqlite_memory.MANIFEST, set()),
        ("tests.independent.sqlite_shared_vectors:make", sqlite_shared_vectors.MANIFEST, set()),
    ],
)
def test_an_independent_backend_passes_every_test_it_does_not_decline(
    factory: str, manifest: dict[str, object], declined: set[str]
) -> None:
    """A full run in process at a fixed seed: no test fails or errs, every test runs but those
    that need a feature the manifest declines (with its reason), and the report is sound. The
    LanceDB backend's run leaves out :data:`LANCEDB_SKIPS` only: a partial run, which earns no
    level (its full run is the module docstring's command)."""
    assert _declined(manifest) == declined
    select = _lancedb_selection() if factory.startswith("tests.independent.lancedb_namespace:") else None
    outcome = runner.run_suites(factory, transport="in-process", seed=11, select=select)
    assert outcome.problems == ()
    assert outcome.failed == [], outcome.output[-4000:]
    tests = outcome.report["tests"]
    skipped = [t for t in tests if t["status"] == "skip"]
    assert all(set(t["requires"]) & declined for t in skipped), [t["id"] for t in skipped]
    assert bool(skipped) == bool(declined)
    assert len(tests) - len(skipped) > 15
    assert outcome.verdict == "pass"
    # a declined capability never caps a level: every level is earned, and names what it rests on
    verdicts = outcome.report["levels"]
    if select is not None:
        assert sorted(t["id"] for t in tests) == sorted(select)
        assert not any(v["earned"] for v in verdicts.values()), verdicts  # a partial run earns none
    else:
        assert all(v["earned"] for v in verdicts.values() if v["pass"]), verdicts
    assert {name for v in verdicts.values() for name in v["declined"]} == declined
