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
The thorough profile at several seeds is the nightly command of ``tests/README.md``."""

from __future__ import annotations

import pytest

from kbconform import runner
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


def _declined(manifest: dict[str, object]) -> set[str]:
    features = manifest.get("features", {})
    assert isinstance(features, dict)
    return {name for name, offer in features.items() if isinstance(offer, str)}


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
    that need a feature the manifest declines (with its reason), and the report is sound."""
    assert _declined(manifest) == declined
    outcome = runner.run_suites(factory, transport="in-process", seed=11)
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
    assert all(v["earned"] for v in verdicts.values() if v["pass"]), verdicts
    assert {name for v in verdicts.values() for name in v["declined"]} == declined
