"""L3 pages: one call whose work spans the backend's own pages does exactly that work (schemas/pages.md).

A backend splits big calls into pages of its own: writes and deletes one store call per page,
path lookups a bounded ``$in`` per page, listings a store page at a time. A bug at a page
boundary (the last partial page dropped, a second page read without the tenant) shows only when
one call spans more than one page, so each call here does, at the sizes
:meth:`~kbconform.conformance.Run.page_sizes` names.
"""

from __future__ import annotations

from typing import Any

import pytest

from kbconform.conformance import Run
from kbconform.errors import NotFound
from kbconform.identity import Principal
from kbconform.profiles.tenant_namespace.data import Principals, ingest_batches, record

#: The isolation profile these tests are written for (schemas/read-filter.md).
PROFILES = ("tenant-namespace",)


def _paths(size: int) -> list[str]:
    return [f"pages/{size}/{n:05d}.md" for n in range(size)]


def _listed(backend: Any, principal: Principal, page: int) -> list[str]:
    """Every id ``principal`` lists, page after page of ``page`` hits."""
    found: list[str] = []
    while True:
        got = [hit.id for hit in backend.list(principal, page, len(found))]
        found += got
        if len(got) < page or len(found) > 20_000:
            return found


def _reads_exactly(
    backend: Any, facades: tuple[str, ...], principal: Principal, scope: set[str], size: int
) -> list[str]:
    """list in pages of ``size`` (and of ``size`` + 1), count (when offered) and query of the whole
    scope give exactly ``scope``, each id once. A query that lacks some of the scope is returned
    as a problem for the end of the test (the page checks of every size are judged first); a
    foreign id anywhere fails at once."""
    who = principal.tenant_id
    for page in (size, size + 1):
        listed = _listed(backend, principal, page)
        assert len(listed) == len(set(listed)), f"{who}'s list in pages of {page} returns an id twice"
        assert set(listed) == scope, (
            f"{who}'s list in pages of {page}: {len(set(listed) - scope)} ids it may not read or "
            f"did not write, {len(scope - set(listed))} of its own missing"
        )
    if "count" in facades:
        counted = backend.count(principal)
        assert counted == len(scope), f"{who} counts {counted}, its scope holds {len(scope)}"
    hits = [hit.id for hit in backend.query(principal, "page boundary", len(scope) + 5, None)]
    assert len(hits) == len(set(hits)), f"{who}'s query returns an id twice"
    assert set(hits) <= scope, (
        f"{who}'s query of its whole scope returns {len(set(hits) - scope)} foreign ids"
    )
    missing = len(scope - set(hits))
    return (
        [f"{who}'s query of its {len(scope)} chunks (n={len(scope) + 5}) lacks {missing}"] if missing else []
    )


@pytest.mark.kbconform(
    id="page-01", rule="pages.md#what-the-tests-do", guide="listprincipal-limit-offset", level="L3"
)
def test_calls_spanning_the_backends_pages_do_exactly_their_work(
    kbconform_run: Run, kbconform_backend: Any, kbconform_principals: Principals
) -> None:
    """For each size: acme writes that many chunks in one ingest (in batches of ``maxWriteBatch``
    when smaller), beta writes chunks at the first and the last two of the same paths; acme's
    list (in pages of the size and one more), count, query and gets read exactly its own; one
    signal tombstoning every path deletes exactly acme's chunks, and beta's stay."""
    backend, acme, beta = kbconform_backend, kbconform_principals.acme, kbconform_principals.beta
    limit, facades = kbconform_run.manifest.max_write_batch, kbconform_run.manifest.read_facades
    base = {
        who.tenant_id: set(
            ingest_batches(
                backend,
                who,
                [record("pages/base.md", f"{who.tenant_id} base page boundary", tenant=who.tenant_id)],
                limit,
            )
        )
        for who in (acme, beta)
    }
    late: list[str] = []  # a query's shortfall, judged once every size's pages are
    for size in kbconform_run.page_sizes():
        paths = _paths(size)
        records = [record(path, f"acme page boundary {size} {path}", tenant=acme.tenant_id) for path in paths]
        ids = ingest_batches(backend, acme, records, limit)
        assert len(set(ids)) == size, f"an ingest of {size} records returned {len(set(ids))} ids"
        twins = sorted({0, size - 2, size - 1} - {-1})
        beta_ids = set(
            ingest_batches(
                backend,
                beta,
                [
                    record(paths[n], f"beta page boundary {size} {paths[n]}", tenant=beta.tenant_id)
                    for n in twins
                ],
                limit,
            )
        )
        late += _reads_exactly(backend, facades, acme, base["acme"] | set(ids), size)
        late += _reads_exactly(backend, facades, beta, base["beta"] | beta_ids, size)
        for chunk in (ids[0], ids[-1]):
            assert backend.get(acme, chunk).id == chunk, f"acme cannot get its own {chunk}"
            with pytest.raises(NotFound):
                backend.get(beta, chunk)
        signal = {"repoSlug": "app", "deleted": [{"sourcePath": path} for path in paths]}
        deleted = set(backend.apply_deletion_signal(acme, signal).deleted_ids)
        assert deleted == set(ids), (
            f"a signal tombstoning {size} paths deleted {len(deleted - set(ids))} ids it must not "
            f"and kept {len(set(ids) - deleted)} of acme's"
        )
        late += _reads_exactly(backend, facades, acme, base["acme"], size)
        late += _reads_exactly(backend, facades, beta, base["beta"] | beta_ids, size)
        backend.apply_deletion_signal(
            beta, {"repoSlug": "app", "deleted": [{"sourcePath": paths[n]} for n in twins]}
        )
    assert not late, f"{len(late)} queries lacked chunks of their scope: " + "; ".join(late[:3])
