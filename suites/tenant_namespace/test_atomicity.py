"""L3 atomicity: a write the store fails part-way has written and deleted nothing, as every later
call sees it.

Each test seeds a backend, then makes one big write (ingest, restore, a deletion signal, a sync;
an ingest or sync of at most the manifest's ``maxWriteBatch`` records, its set-up split into
batches of that size). First with no fault, counting the store calls the write makes (the
control: its whole effect is checked); then, on a fresh backend each time, with the store
failing from its k-th call on for every k of those calls (at most 50 of them: the first 25,
then spread evenly to the last): the kit does not know how many store calls a backend makes,
nor how it pages, so it tries every place, and a backend that makes one call per row is judged
like one that makes one per page. ``lasting``: the store stays down after the fault opens (a
rollback the backend tries at once fails too), and comes back only after the call has raised;
``transient``: only the k-th store call fails. Each failed call must raise
KB_BACKEND_UNAVAILABLE, and once the store is back everything must read exactly as before it:
list (every page) and count for every principal, the operator's export, and get of every id
the control's write changed and of ids spread over the rest (:data:`GETS`; every stored id
when a fresh backend's ids are not the control's). What a faulted attempt read before its write
is known, not read again: the seed fixes it, so it is the control's view before its write with
the attempt's own stamps, from the export the attempt is seeded with (:meth:`View.known`; read
in full when that export differs from the control's in more than its stamps). For the same
reason a faulted attempt's canaries are not read back after seeding (the control's are): its
export stands for them. A faulted write that succeeds all the same (it retried, or did without
the failed call) must have its whole effect, as the control does, read with a get of every id;
a written id the view already got is not got again. Each view's reads cross to the run's worker
once (``batched``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
import rfc8785

from kbconform.adapter import BackendOptions
from kbconform.conformance import COUNTING, FAULT_KINDS, Fault, Run, batched, fault_points
from kbconform.errors import BackendUnavailable, NotFound
from kbconform.profiles.tenant_namespace.data import Principals, ingest_batches, record, seed_canaries

#: The isolation profile these tests are written for (schemas/stamping.md and its siblings).
PROFILES = ("tenant-namespace",)

#: Records per big write: enough that a backend that pages its writes makes several pages.
BATCH = 200


def _batch(run: Run) -> int:
    """BATCH, or the manifest's ``maxWriteBatch`` when smaller: the judged write is one request
    the backend takes (set-ups split theirs, ``ingest_batches``)."""
    return min(BATCH, run.manifest.max_write_batch or BATCH)


_PAGE = 100  # list page size the suite reads with
_NUMBERS = frozenset({int, float})  # an embedding of these is kept as its numbers (:func:`_canonical`)


def _readers(principals: Principals) -> list[Any]:
    found = list(principals.members)
    return found + ([principals.shared_writer] if principals.shared_writer is not None else [])


def _canonical(value: Any) -> Any:
    """A read-back value in a form that compares and hashes as its JSON does: its JCS bytes,
    with a record's embedding kept as a tuple of its numbers (which compare as JCS compares
    them: 1 == 1.0). Canonicalizing every float of every embedding was most of this suite's
    own time."""
    if isinstance(value, dict):
        embedding = value.get("embedding")
        if isinstance(embedding, (list, tuple)) and set(map(type, embedding)) <= _NUMBERS:
            rest = {key: item for key, item in value.items() if key != "embedding"}
            return bytes(rfc8785.dumps(rest)), tuple(embedding)
    return bytes(rfc8785.dumps(value))


def _listed(backend: Any, principal: Any, shown: dict[str, Any]) -> dict[str, Any]:
    """Every chunk ``principal`` lists, page by page, as id -> canonical (document, metadata);
    the document of each id first shown is kept in ``shown``."""
    found: dict[str, Any] = {}
    offset = 0
    while True:
        page = list(backend.list(principal, _PAGE, offset))
        for hit in page:
            assert hit.id not in found, f"list returned {hit.id} on two pages"
            found[hit.id] = _canonical([hit.document, dict(hit.metadata)])
            shown.setdefault(hit.id, hit.document)
        if len(page) < _PAGE:
            return found
        offset += len(page)
        assert offset < 100_000, "list never ends"


def _listing(row: dict[str, Any]) -> Any:
    """An exported row as list shows it (canonical)."""
    return _canonical([row.get("document"), dict(row.get("metadata") or {})])


def _got(chunk_id: str, row: dict[str, Any]) -> Any:
    """An exported row as get shows it (canonical)."""
    return _canonical([chunk_id, row.get("document"), dict(row.get("metadata") or {})])


def _unstamped(row: dict[str, Any]) -> Any:
    """An exported row without the time its backend stamped it with (canonical)."""
    metadata = {k: v for k, v in (row.get("metadata") or {}).items() if k != "ingestedAt"}
    return _canonical({**row, "metadata": metadata})


class View:
    """What the suite's principals read: the state a failed write must leave untouched."""

    def __init__(self, run: Run, backend: Any, principals: Principals, ids: dict[str, Any]) -> None:
        """``ids``: every id to get, with the principal that owns it. The reads cross to the
        run's worker once (``batched``), each within its own deadline."""
        #: The document list or get first showed for each id (:meth:`known` reads a row's
        #: document here when the export carries none).
        self.shown: dict[str, Any] = {}
        #: The document get showed for each id it found (a check reads it here, not again).
        self.got: dict[str, Any] = {}
        self.gets: dict[str, Any] = {}
        batched(backend, lambda: self._read(run, backend, principals, ids))
        self.export = {i: _canonical(r) for i, r in self.exported.items()}

    def _read(self, run: Run, backend: Any, principals: Principals, ids: dict[str, Any]) -> None:
        self.lists = {p.tenant_id: _listed(backend, p, self.shown) for p in _readers(principals)}
        self.counts = (
            {p.tenant_id: backend.count(p) for p in _readers(principals)}
            if "count" in run.manifest.read_facades
            else {}
        )
        for chunk_id, owner in sorted(ids.items()):
            try:
                hit = backend.get(owner, chunk_id)
            except NotFound:
                self.gets[chunk_id] = None
            else:
                self.gets[chunk_id] = _canonical([hit.id, hit.document, dict(hit.metadata)])
                self.got[chunk_id] = hit.document
                self.shown.setdefault(chunk_id, hit.document)
        self.exported = {str(r["id"]): dict(r) for r in backend.export(principals.operator)}

    @classmethod
    def known(cls, control: View, rows: list[dict[str, Any]], ids: dict[str, Any]) -> View | None:
        """What a fresh backend seeded as the control was reads before its write, told without
        reading it: from its own export (``rows``) and the control's view before the write, each
        row listed, counted and got as the control's was, with its own stamps (``ids``: the ids
        to get). None when that cannot be told: its export holds other ids, or rows that differ
        from the control's in more than ``ingestedAt``, or the control's lists and gets do not
        show its rows as its export does (then the suite reads the backend). An export that
        carries no document (a backend that keeps the text elsewhere) leaves each row's document
        the one the control's lists and gets showed, the same in every read of it."""
        own = {str(r["id"]): dict(r) for r in rows}
        if set(own) != set(control.exported) or not set(ids) <= set(control.gets):
            return None
        if not control.shows_export or any(_unstamped(row) != control.unstamped[i] for i, row in own.items()):
            return None
        read = {i: control.as_read(i, row) for i, row in own.items()}
        view = cls.__new__(cls)
        view.shown = dict(control.shown)
        view.got = {i: read[i].get("document") for i in ids if control.gets[i] is not None}
        view.lists = {
            tenant: {i: _listing(read[i]) for i in listed} for tenant, listed in control.lists.items()
        }
        view.counts = dict(control.counts)
        view.gets = {i: None if control.gets[i] is None else _got(i, read[i]) for i in ids}
        view.exported, view.export = own, {i: _canonical(r) for i, r in own.items()}
        return view

    def as_read(self, chunk_id: str, row: dict[str, Any]) -> dict[str, Any]:
        """An exported row as list and get read it: with the document they showed for its id
        when the export carries none."""
        if row.get("document") is None and self.shown.get(chunk_id) is not None:
            return {**row, "document": self.shown[chunk_id]}
        return row

    @functools.cached_property
    def unstamped(self) -> dict[str, Any]:
        """Each exported row without its stamp of time (:func:`_unstamped`)."""
        return {i: _unstamped(row) for i, row in self.exported.items()}

    @functools.cached_property
    def shows_export(self) -> bool:
        """Whether list and get show each row as the export does (its document, where the export
        carries none, the same in every list and get: :meth:`as_read`)."""
        read = {i: self.as_read(i, row) for i, row in self.exported.items()}
        return all(
            i in read and entry == _listing(read[i])
            for listed in self.lists.values()
            for i, entry in listed.items()
        ) and all(hit is None or hit == _got(i, read[i]) for i, hit in self.gets.items())

    def differences(self, other: View) -> list[str]:
        """What reads differently in ``other``, named (empty when everything reads alike)."""
        found = []
        for tenant, listed in self.lists.items():
            if other.lists[tenant] != listed:
                changed = set(listed.items()) ^ set(other.lists[tenant].items())
                found.append(f"list of {tenant}: {len({i for i, _ in changed})} chunks differ")
        found.extend(
            f"count of {tenant}: {count} before, {other.counts[tenant]} after"
            for tenant, count in self.counts.items()
            if other.counts[tenant] != count
        )
        found.extend(f"get {i}" for i, hit in self.gets.items() if other.gets[i] != hit)
        if other.export != self.export:
            changed = set(self.export.items()) ^ set(other.export.items())
            found.append(f"export: {len({i for i, _ in changed})} chunks differ")
        return found


@dataclass
class Attempt:
    """A fresh, seeded backend: the ids to get (with their owners), the write to make, and what
    the test needs to check the write's effect."""

    backend: Any
    owners: dict[str, Any]
    write: Callable[[], Any]
    data: dict[str, Any] = field(default_factory=dict)
    #: The operator's export of the seeded backend, before the write.
    exported: list[dict[str, Any]] = field(default_factory=list)


#: Of the stored ids a write leaves as they were, how many a faulted attempt reads back with
#: get (spread over them in id order), beside every id the control's write changed: list and
#: export read every row already, and a get per row per attempt was most of this suite's time.
GETS = 8
Check = Callable[[Attempt, Any, View, View], None]
#: Seeds a fresh backend and says what to write; True for the control, whose canaries are read
#: back (a faulted attempt's seed is checked against the control's by its export instead).
Prepare = Callable[[Any, bool], Attempt]


def _compared(owners: dict[str, Any], changed: set[str]) -> dict[str, Any]:
    """Of ``owners`` (an attempt's stored ids), the ones a faulted attempt gets: every id the
    control's write ``changed``, and :data:`GETS` of the rest, spread in id order; all of them
    when the attempt's ids are not the control's."""
    if not changed <= set(owners):
        return owners
    rest = sorted(set(owners) - changed)
    step = max(1, len(rest) // GETS)
    kept = changed | set(rest[::step][:GETS])
    return {chunk_id: owner for chunk_id, owner in owners.items() if chunk_id in kept}


def _every_fault(
    run: Run,
    open_backend: Any,
    principals: Principals,
    kind: str,
    prepare: Prepare,
    check: Check,
) -> None:
    """The write once with no fault, counting its store calls (the control: ``check`` sees its
    whole effect, once the faulted writes are judged); then, on a fresh backend (``prepare``
    seeds it and says what to write) for each of those calls (:func:`fault_points`), the write
    with the store failing there. A write that raises KB_BACKEND_UNAVAILABLE must leave
    everything reading as before it; one that succeeds all the same (a retry, a failing call it
    could do without) must have its whole effect (``check`` again). The kit never assumes how
    many store calls a write takes.

    A fresh backend for each call: a backend that carries state from one failed write to the
    next call (a pending rollback) would otherwise shift where the next fault lands. Each is
    seeded as the control was, without reading its canaries back: its export, which the
    attempt's state before its write is told from, must hold the control's rows (else that
    state is read in full, :meth:`View.known`).
    """

    def opened(fault: Fault, control: bool = False) -> Attempt:
        options = BackendOptions(spoof_mode=run.manifest.spoof_modes[0], store_fails=fault.switch)
        return prepare(open_backend(options), control)

    counter = Fault(kind)
    control = opened(counter, control=True)
    unfaulted = View(run, control.backend, principals, control.owners)
    counter.switch.set(COUNTING)
    try:
        landed = control.write()
    finally:
        calls = counter.switch.set(None)
    assert calls > 0, "the write made no store call: the backend never consulted its fault switch"
    whole = View(run, control.backend, principals, control.owners)
    changed = {i for i, hit in unfaulted.gets.items() if whole.gets[i] != hit}
    for k in fault_points(calls):
        fault = Fault(kind)
        attempt = opened(fault)
        compared = _compared(attempt.owners, changed)
        before = View.known(unfaulted, attempt.exported, compared) or View(
            run, attempt.backend, principals, compared
        )
        fault.open_at(k)
        try:
            result = attempt.write()
        except BackendUnavailable:
            assert fault.close(), (
                f"the write raised KB_BACKEND_UNAVAILABLE with no store call failing (k={k})"
            )
            differences = before.differences(View(run, attempt.backend, principals, compared))
            assert not differences, (
                f"the store failed at its call {k} of the write ({kind}): the write raised "
                f"KB_BACKEND_UNAVAILABLE, yet once the store was back it reads differently: "
                + "; ".join(differences[:8])
            )
            run.close(attempt.backend)
            continue
        finally:
            fault.close()
        if kind == "lasting":
            assert k > 0, "the store failed from its first call on, and the write still succeeded"
        check(attempt, result, before, View(run, attempt.backend, principals, attempt.owners))
        run.close(attempt.backend)
    # The control last: a write that does not land whole even unfaulted fails here, after the
    # faults had their say.
    check(control, landed, unfaulted, whole)
    run.close(control.backend)


def _document(attempt: Attempt, after: View, owner: Any, chunk_id: str) -> Any:
    """The document get shows for ``chunk_id``: as the after-view's get showed it, when it got
    that id (no call since), else from a get now."""
    if chunk_id in after.got:
        return after.got[chunk_id]
    return attempt.backend.get(owner, chunk_id).document


def _seeded(
    backend: Any,
    principals: Principals,
    write: Callable[[], Any],
    data: dict[str, Any] | None = None,
    rows: list[dict[str, Any]] | None = None,
    owners: dict[str, Any] | None = None,
) -> Attempt:
    """The attempt of ``write`` on a seeded ``backend``: its export (``rows``, else the operator's
    export now), and every stored id with the principal that owns it (and ``owners``)."""
    rows = [dict(r) for r in backend.export(principals.operator)] if rows is None else rows
    by_tenant = {p.tenant_id: p for p in _readers(principals)}
    stored = {str(r["id"]): by_tenant[r["metadata"]["tenantId"]] for r in rows}
    return Attempt(backend, stored | (owners or {}), write, data or {}, rows)


@pytest.mark.kbconform(
    id="atomic-01",
    rule="stamping.md#other-write-rules",
    guide="ingestprincipal-records",
    level="L3",
    requires="fault-injection",
)
@pytest.mark.parametrize("kind", FAULT_KINDS)
def test_an_ingest_the_store_fails_part_way_writes_nothing(
    kind: str, kbconform_run: Run, kbconform_open: Any, kbconform_principals: Principals
) -> None:
    """A batch of new chunks and of rewrites of stored ones (hashInputs without content, so the
    ids stay and the text changes): every failed attempt leaves every chunk as it was and adds
    none; the successful one writes every record (control)."""
    principals = kbconform_principals
    acme, size, limit = principals.acme, _batch(kbconform_run), kbconform_run.manifest.max_write_batch
    by_path = ["sourcePath", "kind", "name"]
    rewrites = size // 3
    stored = [
        record(f"docs/page-{n}.md", f"first {n}", tenant="acme", hashInputs=by_path) for n in range(rewrites)
    ]
    batch = [
        *(
            record(f"docs/page-{n}.md", f"second {n}", tenant="acme", hashInputs=by_path)
            for n in range(rewrites)
        ),
        *(record(f"docs/new-{n}.md", f"new {n}", tenant="acme") for n in range(size - rewrites)),
    ]

    def prepare(backend: Any, control: bool) -> Attempt:
        seed_canaries(backend, principals, kbconform_run.rng(f"atomic-01[{kind}]"), read_back=control)
        ingest_batches(backend, acme, stored, limit)
        return _seeded(backend, principals, lambda: backend.ingest(acme, batch))

    def check(attempt: Attempt, result: Any, before: View, after: View) -> None:
        ids = list(result.ids)
        assert len(ids) == len(batch)
        assert set(after.lists[acme.tenant_id]) == set(before.lists[acme.tenant_id]) | set(ids)
        for chunk_id, rec in zip(ids, batch, strict=True):
            assert _document(attempt, after, acme, chunk_id) == rec["content"], "the write did not land whole"
        for tenant, chunks in before.lists.items():
            if tenant != acme.tenant_id:
                assert after.lists[tenant] == chunks, f"acme's ingest changed what {tenant} reads"

    _every_fault(kbconform_run, kbconform_open, principals, kind, prepare, check)


@pytest.mark.kbconform(
    id="atomic-02",
    rule="backup.md#all-or-nothing",
    guide="restoreprincipal-records",
    level="L3",
    requires="fault-injection",
)
@pytest.mark.parametrize("kind", FAULT_KINDS)
def test_a_restore_the_store_fails_part_way_writes_nothing(
    kind: str, kbconform_run: Run, kbconform_open: Any, kbconform_principals: Principals
) -> None:
    """A restore of new chunks (another backend's export) and of every stored chunk with another
    text and embedding: every failed attempt leaves every chunk as it was (embeddings included)
    and adds none; the successful one restores every record as given (control)."""
    principals = kbconform_principals
    operator = principals.operator
    other = kbconform_open()
    restored = [record(f"docs/restored-{n}.md", f"restored {n}", tenant="acme") for n in range(BATCH)]
    ingest_batches(other, principals.acme, restored, kbconform_run.manifest.max_write_batch)
    new = [dict(r) for r in other.export(operator)]

    def prepare(backend: Any, control: bool) -> Attempt:
        seed_canaries(backend, principals, kbconform_run.rng(f"atomic-02[{kind}]"), read_back=control)
        rows = [dict(r) for r in backend.export(operator)]
        changed = [
            {**r, "document": f"changed {r['document']}", "embedding": list(r["embedding"])[::-1]}
            for r in rows
        ]
        batch = [*changed, *new]
        owners = {str(r["id"]): principals.acme for r in new}
        return _seeded(
            backend, principals, lambda: backend.restore(operator, batch), {"batch": batch}, rows, owners
        )

    def check(attempt: Attempt, result: Any, before: View, after: View) -> None:
        batch = attempt.data["batch"]
        assert result == len(batch)
        assert after.export == {**before.export, **{str(r["id"]): _canonical(r) for r in batch}}, (
            "the restore did not land whole, as given"
        )
        assert all(after.gets[str(r["id"])] is not None for r in new)

    _every_fault(kbconform_run, kbconform_open, principals, kind, prepare, check)


@pytest.mark.kbconform(
    id="atomic-03",
    rule="deletion-signaling.md#all-or-nothing",
    guide="apply_deletion_signalprincipal-signal",
    level="L3",
    requires="fault-injection",
)
@pytest.mark.parametrize("kind", FAULT_KINDS)
def test_a_deletion_signal_the_store_fails_part_way_deletes_nothing(
    kind: str, kbconform_run: Run, kbconform_open: Any, kbconform_principals: Principals
) -> None:
    """A manifest snapshot that drops most of acme's repository: every failed attempt leaves
    every chunk in place (embeddings included); the successful one deletes exactly the dropped
    chunks, of acme only (control)."""
    principals = kbconform_principals
    acme = principals.acme

    def prepare(backend: Any, control: bool) -> Attempt:
        rng = kbconform_run.rng(f"atomic-03[{kind}]")
        canaries = seed_canaries(backend, principals, rng, read_back=control)
        old = [record(f"docs/old-{n}.md", f"old {n}", tenant="acme") for n in range(BATCH)]
        dropped = ingest_batches(backend, acme, old, kbconform_run.manifest.max_write_batch)
        twin = list(backend.ingest(principals.beta, [record("docs/old-0.md", "old 0", tenant="beta")]).ids)
        kept = sorted(str(c.record["sourcePath"]) for c in canaries.chunks.values() if c.tenant == "acme")
        signal = {"manifestSnapshot": {"repoSlug": "app", "pathsAfterPush": kept}}
        return _seeded(
            backend,
            principals,
            lambda: backend.apply_deletion_signal(acme, signal),
            {"dropped": set(dropped), "twin": twin[0]},
        )

    def check(attempt: Attempt, result: Any, before: View, after: View) -> None:
        dropped = attempt.data["dropped"]
        assert set(result.deleted_ids) == dropped
        assert set(after.lists[acme.tenant_id]) == set(before.lists[acme.tenant_id]) - dropped
        assert all(after.gets[i] is None for i in dropped), "a dropped chunk still reads"
        assert after.gets[attempt.data["twin"]] is not None, "acme's signal deleted beta's chunk"
        assert set(after.export) == set(before.export) - dropped

    _every_fault(kbconform_run, kbconform_open, principals, kind, prepare, check)


@pytest.mark.kbconform(
    id="atomic-04",
    rule="maintenance.md#sync",
    guide="syncprincipal-repo_slug-records-envelope",
    level="L3",
    requires=("fault-injection", "sync"),
)
@pytest.mark.parametrize("kind", FAULT_KINDS)
def test_a_sync_the_store_fails_part_way_writes_and_deletes_nothing(
    kind: str, kbconform_run: Run, kbconform_open: Any, kbconform_principals: Principals
) -> None:
    """acme holds 200 chunks in repository ``bulk`` (beta one, at a path acme's sync drops) and
    syncs ``bulk`` to 100 of them with new text (hashInputs without content: the ids stay) and
    100 new ones (half of ``maxWriteBatch`` each, when the manifest declares less than 200):
    every failed attempt leaves every chunk as it was, deletes none and adds none; the
    successful one rewrites, adds and deletes exactly the stale ones, of acme only (control)."""
    principals = kbconform_principals
    acme, half, limit = principals.acme, _batch(kbconform_run) // 2, kbconform_run.manifest.max_write_batch
    by_path = ["sourcePath", "kind", "name"]

    def old(n: int, text: str, tenant: str = "acme") -> dict[str, Any]:
        return record(f"docs/old-{n}.md", text, tenant=tenant, repo="bulk", hashInputs=by_path)

    batch = [
        *(old(n, f"second {n}") for n in range(half)),
        *(record(f"docs/new-{n}.md", f"new {n}", tenant="acme", repo="bulk") for n in range(half)),
    ]

    def prepare(backend: Any, control: bool) -> Attempt:
        seed_canaries(backend, principals, kbconform_run.rng(f"atomic-04[{kind}]"), read_back=control)
        stale = ingest_batches(backend, acme, [old(n, f"first {n}") for n in range(BATCH)], limit)[half:]
        twin = list(backend.ingest(principals.beta, [old(BATCH - 1, "beta's", tenant="beta")]).ids)
        return _seeded(
            backend,
            principals,
            lambda: backend.sync(acme, "bulk", batch),
            {"stale": set(stale), "twin": twin[0]},
        )

    def check(attempt: Attempt, result: Any, before: View, after: View) -> None:
        stale, ids = attempt.data["stale"], list(result.ids)
        assert set(result.deleted_ids) == stale, "the sync did not delete exactly acme's stale chunks"
        assert set(after.lists[acme.tenant_id]) == (set(before.lists[acme.tenant_id]) - stale) | set(ids)
        for chunk_id, rec in zip(ids, batch, strict=True):
            assert _document(attempt, after, acme, chunk_id) == rec["content"], "the sync did not land whole"
        assert after.gets[attempt.data["twin"]] is not None, "acme's sync deleted beta's chunk"

    _every_fault(kbconform_run, kbconform_open, principals, kind, prepare, check)
