"""The kb-grant profile's own suite (schemas/kb-grant.md): grants, search across stores, copies,
moves and deletes.

Each test drives a fresh backend and the policy model together (:class:`GrantDriver`): every
call's outcome is compared with :class:`~kbconform.profiles.kb_grant.model.GrantPolicy` and committed to it,
every search's hits are compared with the exact cosine ranking of the vectors the suite sent,
and every error is checked for stored text. Only the protocol and the manifest's stores and
models are used. Each test's docstring names the rule it checks; the profile-independent tests
(iso-01 to iso-03) are in ``test_isolation.py``.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from functools import partial
from typing import Any

import pytest
from hypothesis import strategies as st
from hypothesis.stateful import initialize, rule

from kbconform.adapter import MAX_LIMIT, BackendOptions, FaultPlan, FaultSwitch
from kbconform.conformance import DriverMachine, Fault, Run, every_fault
from kbconform.conformance.strategies import names_of, with_twins
from kbconform.errors import BackendUnavailable, Forbidden, KbconformError, NotFound
from kbconform.profiles.kb_grant.protocol import GRANT_INVALID, MODEL_MISMATCH
from kbconform.profiles.kb_grant.world import GrantDriver

#: The isolation profile these tests are written for (schemas/kb-grant.md).
PROFILES = ("kb-grant",)

#: Pairs of tenant names (callers and grant subjects) that collide under common mistakes:
#: prefixes, case and trailing-space variants, digits, the NFC and NFD forms of one name.
TENANT_FAMILIES = (
    ("acme", "acme-2"),
    ("acme", "Acme"),
    ("acm", "acme"),
    ("beta", "beta "),
    ("1", "10"),
    ("caf\u00e9", "cafe\u0301"),
)
TENANT_NAMES = names_of(TENANT_FAMILIES)
#: Tenant names at a store's boundaries, made in this order at the end of every program of
#: grant-13: two long names alike in their first 77 characters (a column that cuts values at a
#: width makes them one), then a name holding a quote, a double quote, a backslash and a colon,
#: and after it a name holding ``_`` and ``%`` that matches it as a ``LIKE`` pattern.
EDGE_TENANTS = ("tenant-" + "0" * 70 + "-a", "tenant-" + "0" * 70 + "-b", "t'1\"\\:", "t_1%")


def _driver(run: Run, backend: Any, name: str) -> GrantDriver:
    return GrantDriver(backend, run.manifest, run.rng(name))


def _ids(hits: list[Any]) -> set[str]:
    return {str(hit.id) for hit in hits}


def _faulty(run: Run, open_backend: Any, name: str) -> tuple[GrantDriver, FaultSwitch]:
    switch = FaultSwitch()
    backend = open_backend(BackendOptions(store_fails=switch))
    return GrantDriver(backend, run.manifest, run.rng(name)), switch


def _same_not_found(
    foreign: KbconformError, missing: KbconformError, foreign_id: str, missing_id: str
) -> None:
    """A foreign id's error is a missing id's: same class, same code, the same message but for
    the id."""
    assert type(foreign) is type(missing), f"{foreign!r} and {missing!r}"
    assert isinstance(foreign, NotFound), f"{foreign!r}"  # behind harness-v1: its Remote subclass
    assert foreign.code == missing.code
    assert str(foreign).replace(foreign_id, "ID") == str(missing).replace(missing_id, "ID"), (
        f"a foreign knowledge base's error differs from a missing one's: {foreign} / {missing}"
    )


@pytest.mark.kbconform(id="grant-01", rule="kb-grant.md#g15", guide="the-kb-grant-profile", level="L0")
def test_malformed_calls_are_refused_with_kb_grant_invalid_and_change_nothing(
    kbconform_run: Run, kbconform_backend: Any
) -> None:
    """G15: empty and existing tenant names, unknown stores and models, empty batches, empty
    texts, vectors that are empty, zero, not finite or of another dimension, duplicate and
    empty knowledge base lists, limits out of range (0, 1001, a bool, a float), an unknown
    grantee and a share with the owner itself raise KB_GRANT_INVALID, and nothing changes
    (every read equals the model after them; control: the valid calls land)."""
    d = _driver(kbconform_run, kbconform_backend, "grant-01")
    owner, other = d.tenant(), d.tenant()
    model = next(iter(d.policy.models))
    kb = d.kb(owner, documents=3)
    d.kb(other, documents=1)
    d.check()
    for name in ("", owner):
        d.refuse("create_tenant", name)
    d.refuse("create_kb", owner, f"{d.policy.stores[0]}-unknown", model)
    d.refuse("create_kb", owner, d.policy.stores[0], f"{model}-unknown")
    dimension = d.policy.models[model]
    good = d.documents(model, 1)[0]
    batches: list[Any] = [
        [],
        [{**good, "text": ""}],
        [{"text": d.text()}],
        [{**good, "embedding": []}],
        [{**good, "embedding": [0.0] * dimension}],
        [{**good, "embedding": [float("nan")] + [1.0] * (dimension - 1)}],
        [{**good, "embedding": [1.0] * (dimension + 1)}],
        [d.documents(model, 1)[0], {**good, "embedding": [1.0] * (dimension - 1)}],
    ]
    for batch in batches:
        d.refuse("ingest", owner, kb, batch)
    vector = d.vector(model)
    for kbs, embedding, limit in (
        ([], vector, 5),
        ([kb, kb], vector, 5),
        ([""], vector, 5),
        ([kb], [], 5),
        ([kb], [0.0] * dimension, 5),
        ([kb], [1.0] * (dimension + 1), 5),
        ([kb], vector, 0),
        ([kb], vector, MAX_LIMIT + 1),
        ([kb], vector, True),
        ([kb], vector, 2.0),
    ):
        error = d.refuse_search(owner, kbs, embedding, limit)
        assert getattr(error, "code", None) == GRANT_INVALID, f"search({kbs!r}, limit {limit!r}): {error!r}"
    d.refuse("share_kb", owner, kb, f"{other}-unknown")
    d.refuse("share_kb", owner, kb, owner)
    d.refuse("revoke_kb", owner, kb, f"{other}-unknown")
    d.refuse("copy_kb", owner, kb, f"{d.policy.stores[0]}-unknown")
    d.refuse("move_kb", owner, kb, f"{d.policy.stores[0]}-unknown")
    d.call("ingest", owner, kb, [{**good, "extra": "dropped"}])
    assert d.check()


@pytest.mark.kbconform(id="grant-02", rule="kb-grant.md#g4", guide="the-kb-grant-profile", level="L1")
def test_a_foreign_knowledge_base_is_not_found_on_every_facade_and_never_pivoted_to(
    kbconform_run: Run, kbconform_backend: Any
) -> None:
    """G4: a stranger's search of a foreign knowledge base (alone, or beside its own, in either
    order, even of another model), get_kb, copy_kb and every administering facade raise
    NotFound, exactly as for an id that never existed (same class, code and message but for the
    id, carrying no text and no owner); never Forbidden, never the other knowledge bases' hits.
    Control: the owner reads it, the stranger reads its own."""
    d = _driver(kbconform_run, kbconform_backend, "grant-02")
    owner, stranger, third = d.tenant("owner-" + d.tenant_name()), d.tenant(), d.tenant()
    models = list(d.policy.models)
    foreign = d.kb(owner, documents=4)
    other_model = d.kb(owner, model=models[-1], documents=2)
    own = d.kb(stranger, documents=3)
    missing = f"{foreign}-missing"
    assert d.search(owner, [foreign]), "control: the owner reads it"
    assert d.search(stranger, [own]), "control: the stranger reads its own"
    for kbs in ([foreign], [own, foreign], [foreign, own], [own, other_model]):
        error = d.refuse_search(stranger, kbs)
        assert isinstance(error, NotFound), f"search of {kbs}: {error!r}"
        assert owner not in str(error), f"the error names the owner: {error}"
    _same_not_found(
        d.refuse_search(stranger, [foreign]), d.refuse_search(stranger, [missing]), foreign, missing
    )
    _same_not_found(
        d.refuse("get_kb", stranger, foreign), d.refuse("get_kb", stranger, missing), foreign, missing
    )
    store = d.policy.stores[-1]
    for operation, *args in (
        ("share_kb", third),
        ("revoke_kb", third),
        ("delete_kb",),
        ("move_kb", store),
        ("copy_kb", store),
    ):
        errors = [d.refuse(operation, stranger, kb, *args) for kb in (foreign, missing)]
        _same_not_found(errors[0], errors[1], foreign, missing)
        assert not isinstance(errors[0], Forbidden)
    d.refuse("ingest", stranger, foreign, d.documents(models[0], 1))
    assert d.check()


@pytest.mark.kbconform(
    id="grant-03",
    rule="kb-grant.md#g5",
    guide="the-kb-grant-profile",
    level="L2",
    requires="fault-injection",
)
def test_a_refused_search_asks_no_store_anything(kbconform_run: Run, kbconform_open: Any) -> None:
    """G5: searches refused for no identity, an unreadable knowledge base (alone or beside the
    caller's own), mixed models or a bad dimension consult the store switch zero times; with
    every store failing, a search naming an unreadable knowledge base is NotFound, not
    BackendUnavailable. Control: an allowed search consults it, and fails while it fails."""
    d, switch = _faulty(kbconform_run, kbconform_open, "grant-03")
    owner, stranger = d.tenant(), d.tenant()
    models = list(d.policy.models)
    foreign = [d.kb(owner, store, models[0], 3) for store in d.policy.stores]
    own = [d.kb(stranger, store, models[0], 2) for store in d.policy.stores]
    other_model = d.kb(stranger, d.policy.stores[0], models[-1], 2)
    switch.set(None)
    d.search(stranger, own)
    assert switch.set(None) > 0, "control: an allowed search consults the switch"
    refused: list[tuple[object, list[str], Any]] = [
        (None, own, None),
        (f"{stranger}-never-created", own, None),
        (stranger, foreign[:1], None),
        (stranger, [*own, foreign[-1]], None),
        (stranger, [foreign[0], *own], None),
        (stranger, own, [1.0] * (d.policy.models[models[0]] + 1)),
    ]
    if len(models) > 1:
        refused.append((stranger, [own[0], other_model], None))
    for caller, kbs, embedding in refused:
        d.refuse_search(caller, kbs, embedding)
        consulted = switch.set(None)
        assert consulted == 0, (
            f"search as {caller!r} of {kbs}, refused, consulted the store {consulted} times"
        )
    switch.set(FaultPlan(0))
    for kbs in (foreign[:1], [*own, foreign[-1]]):
        error = d.attempt_search(stranger, kbs)
        assert isinstance(error, NotFound), f"search of {kbs} with every store failing: {error!r}"
    error = d.attempt_search(stranger, own, may_fail=True)
    assert isinstance(error, BackendUnavailable), f"control: with every store failing, {error!r}"
    switch.set(None)
    assert d.check()


@pytest.mark.kbconform(id="grant-04", rule="kb-grant.md#g6", guide="the-kb-grant-profile", level="L1")
def test_a_grant_lets_the_grantee_read_and_nothing_more_and_a_revoke_is_at_once(
    kbconform_run: Run, kbconform_backend: Any
) -> None:
    """G6: before a grant the grantee finds the knowledge base not found; after it, search,
    get_kb, list_kbs and copy_kb read it, and every administering call is Forbidden; after a
    revoke (the grantee having read it just before), it is not found again at once, while
    another grantee keeps reading it; a copy made under the grant stays the grantee's. The
    owner revoking itself (refused or not, as the backend chooses) keeps reading its own."""
    d = _driver(kbconform_run, kbconform_backend, "grant-04")
    owner, grantee, other = d.tenant(), d.tenant(), d.tenant()
    kb = d.kb(owner, documents=4)
    d.refuse_search(grantee, [kb])
    d.refuse("get_kb", grantee, kb)
    d.call("share_kb", owner, kb, grantee)
    d.call("share_kb", owner, kb, grantee)  # again: no change
    d.call("share_kb", owner, kb, other)
    assert len(d.search(grantee, [kb])) == 4
    d.call("get_kb", grantee, kb)
    assert kb in {str(v.id) for v in d.call("list_kbs", grantee)}
    copy = str(d.call("copy_kb", grantee, kb, d.policy.stores[-1]))
    store = d.policy.stores[-1]
    for operation, *args in (
        ("share_kb", other),
        ("revoke_kb", other),
        ("ingest", d.documents(d.policy.kbs[kb].model, 1)),
        ("delete_kb",),
        ("move_kb", store),
    ):
        error = d.refuse(operation, grantee, kb, *args)
        assert isinstance(error, Forbidden), f"{operation} by a grantee: {error!r}"
    d.check()  # every tenant reads it just before the revoke: a cached grant would show
    d.call("revoke_kb", owner, kb, grantee)
    d.refuse_search(grantee, [kb])
    d.refuse("get_kb", grantee, kb)
    assert kb not in {str(v.id) for v in d.call("list_kbs", grantee)}
    d.refuse("copy_kb", grantee, kb, store)
    assert len(d.search(other, [kb])) == 4, "another grantee keeps reading it"
    assert len(d.search(grantee, [copy])) == 4, "the copy is the grantee's own"
    d.call("revoke_kb", owner, kb, grantee)  # no grant: no change
    # The owner as grantee holds no grant: no change, or KB_GRANT_INVALID as share_kb says; the
    # contract lets the backend choose. Either way the owner keeps its knowledge base.
    d.attempt("revoke_kb", owner, kb, owner)
    assert len(d.search(owner, [kb])) == 4, "the owner reads its knowledge base after revoking itself"
    d.call("get_kb", owner, kb)
    assert d.check()


@pytest.mark.kbconform(
    id="grant-05",
    rule="kb-grant.md#g7",
    guide="the-kb-grant-profile",
    level="L1",
    requires="multi-model",
)
def test_knowledge_bases_of_different_models_are_never_searched_together(
    kbconform_run: Run, kbconform_backend: Any
) -> None:
    """G7: a search naming knowledge bases of two models (on one store and on two, own and
    granted) raises KB_MODEL_MISMATCH and returns nothing, whatever the vector's dimension
    matches. Control: each model's knowledge bases are searched exactly on their own."""
    d = _driver(kbconform_run, kbconform_backend, "grant-05")
    owner, grantee = d.tenant(), d.tenant()
    first, second = list(d.policy.models)[:2]
    stores = d.policy.stores
    a = d.kb(owner, stores[0], first, 3)
    b = d.kb(owner, stores[0], second, 3)
    c = d.kb(owner, stores[-1], second, 3)
    d.call("share_kb", owner, c, grantee)
    g = d.kb(grantee, stores[-1], first, 2)
    for caller, kbs in (
        (owner, [a, b]),
        (owner, [b, a]),
        (owner, [a, c]),
        (owner, [a, b, c]),
        (grantee, [g, c]),
    ):
        for model in (first, second):
            error = d.refuse_search(caller, kbs, d.vector(model))
            assert getattr(error, "code", None) == MODEL_MISMATCH, f"search of {kbs}: {error!r}"
    assert d.search(owner, [b, c])
    assert d.search(grantee, [g])
    assert d.search(owner, [a])
    assert d.check()


@pytest.mark.kbconform(
    id="grant-06",
    rule="kb-grant.md#g8",
    guide="the-kb-grant-profile",
    level="L1",
    requires="multi-store",
)
def test_a_search_over_several_stores_is_the_exact_ranking_by_true_cosine(
    kbconform_run: Run, kbconform_backend: Any
) -> None:
    """G8, G9: knowledge bases on every store (two on one store, so a store holds a group), and
    searches of one store's, another's and all of them, with random probes and documents' own
    vectors, at limits 1, 2, 3, about half, all and above all: exactly the limit nearest by true
    cosine, scores (1 + cos) / 2 within 1e-4, highest first. The probes are chosen so the exact
    top hits come from different stores (control: a merge of raw engine scores shows)."""
    d = _driver(kbconform_run, kbconform_backend, "grant-06")
    owner = d.tenant()
    model = next(iter(d.policy.models))
    stores = d.policy.stores
    kbs = [d.kb(owner, store, model, 6) for store in stores] + [d.kb(owner, stores[0], model, 5)]
    total = sum(len(d.policy.kbs[kb].documents) for kb in kbs)
    mixed = 0
    for probe in range(12):
        vector = d.vector(model)
        top = d.policy.ranking(kbs, vector)[:4]
        mixed += len(d.policy.stores_of(r.kb for r in top)) > 1
        for limit in sorted({1, 2, 3, total // 2, total, total + 1, MAX_LIMIT}):
            d.search(owner, kbs, vector, limit)
        if probe < len(stores):
            d.search(owner, [kbs[probe]], vector, 3)
    assert mixed, "control: no probe's top hits came from two stores"
    d.search(owner, [kbs[0], kbs[-1]], None, 4)  # two knowledge bases of one store: one group
    for kb in kbs:  # a document's own vector finds it first, with score 1
        document = next(iter(d.policy.kbs[kb].documents.values()))
        hits = d.search(owner, kbs, list(document.vector), 1)
        assert [str(hits[0].id)] == [document.id]
    d.check()


@pytest.mark.kbconform(
    id="grant-07",
    rule="kb-grant.md#g10",
    guide="the-kb-grant-profile",
    level="L2",
    requires=("fault-injection", "multi-store"),
)
def test_one_failing_store_group_fails_the_whole_search(kbconform_run: Run, kbconform_open: Any) -> None:
    """G3, G10: with one store failing, a search over knowledge bases on it and on the others
    raises BackendUnavailable, never the others' hits; so do get_kb and list_kbs of a knowledge
    base on it; a search of the other stores alone is answered exactly (control), and after the
    fault everything reads as before."""
    d, switch = _faulty(kbconform_run, kbconform_open, "grant-07")
    owner = d.tenant()
    model = next(iter(d.policy.models))
    kbs = {store: d.kb(owner, store, model, 4) for store in d.policy.stores}
    d.check()
    for failing in d.policy.stores:
        switch.set(FaultPlan(0, stores=frozenset({failing})))
        others = [kb for store, kb in kbs.items() if store != failing]
        for names in (list(kbs.values()), [kbs[failing], *others], [*others, kbs[failing]]):
            error = d.attempt_search(owner, names, may_fail=True)
            assert isinstance(error, BackendUnavailable), f"{failing} failing, search of {names}: {error!r}"
        error = d.attempt("get_kb", owner, kbs[failing], may_fail=True)
        assert isinstance(error, BackendUnavailable), f"get_kb of a knowledge base on {failing}: {error!r}"
        error = d.attempt("list_kbs", owner, may_fail=True)
        assert isinstance(error, BackendUnavailable), f"list_kbs with {failing} failing: {error!r}"
        assert d.search(owner, others), "control: the other stores answer"
        switch.set(None)
    d.check()


@pytest.mark.kbconform(
    id="grant-08",
    rule="kb-grant.md#g11",
    guide="the-kb-grant-profile",
    level="L2",
    requires=("fault-injection", "multi-store"),
)
def test_a_store_group_that_does_not_answer_fails_the_search_within_its_deadline(
    kbconform_run: Run, kbconform_open: Any
) -> None:
    """G11: with one store hanging several times the manifest's groupDeadlineSeconds, a search
    over it and the others raises BackendUnavailable within the deadline plus a generous slack
    (measured with a monotonic clock), never after the hang, never a partial result; searches
    of the other stores stay answered, at once, while it hangs."""
    d, switch = _faulty(kbconform_run, kbconform_open, "grant-08")
    deadline = kbconform_run.manifest.group_deadline
    limit = 2 * deadline + 1.0  # the deadline, and as much again and a second of slack
    hang = 2 * limit
    owner = d.tenant()
    model = next(iter(d.policy.models))
    kbs = {store: d.kb(owner, store, model, 3) for store in d.policy.stores}
    slow = d.policy.stores[0]
    others = [kb for store, kb in kbs.items() if store != slow]
    d.check()
    switch.set(FaultPlan(0, stores=frozenset({slow}), hang=hang))
    started = time.monotonic()
    error = d.attempt_search(owner, list(kbs.values()), may_fail=True)
    took = time.monotonic() - started
    assert isinstance(error, BackendUnavailable), f"a search over a hanging store: {error!r}"
    assert took < limit, (
        f"the search failed after {took:.2f} s; the group deadline is {deadline} s (a store hung {hang} s)"
    )
    started = time.monotonic()
    assert d.search(owner, others), "control: the other stores answer"
    assert time.monotonic() - started < limit
    switch.set(None)  # ends the hung store call (it fails): the store is back
    d.check()


@pytest.mark.kbconform(id="grant-09", rule="kb-grant.md#g12", guide="the-kb-grant-profile", level="L1")
def test_a_copy_needs_read_access_to_its_source_and_belongs_to_the_caller_alone(
    kbconform_run: Run, kbconform_backend: Any
) -> None:
    """G12: copying a knowledge base the caller may not read (never granted, or revoked) is
    NotFound and creates nothing; a grantee's copy onto each store holds every document (same
    texts and vectors, new ids) with the source's model, belongs to it alone (the source's owner
    and its other grantee do not read it: search, get and list; it administers it), and does not
    follow its source."""
    d = _driver(kbconform_run, kbconform_backend, "grant-09")
    owner, grantee, stranger, other = d.tenant(), d.tenant(), d.tenant(), d.tenant()
    source = d.kb(owner, documents=5)
    d.call("share_kb", owner, source, stranger)
    d.call("revoke_kb", owner, source, stranger)
    for store in d.policy.stores:
        d.refuse("copy_kb", stranger, source, store)
    assert not d.policy.scope(stranger)
    d.check()
    d.call("share_kb", owner, source, grantee)
    d.call("share_kb", owner, source, other)  # the source's grants are not the copy's
    copies = [str(d.call("copy_kb", grantee, source, store)) for store in d.policy.stores]
    d.ingest(owner, source, 1, "after the copy")
    for copy in copies:
        assert len(d.search(grantee, [copy])) == 5
        for reader in (owner, other):
            d.refuse_search(reader, [copy])
            d.refuse("get_kb", reader, copy)
            assert copy not in {str(v.id) for v in d.call("list_kbs", reader)}
        d.ingest(grantee, copy, 1, "the copy's own")
    d.call("delete_kb", owner, source)
    assert all(len(d.search(grantee, [copy])) == 6 for copy in copies)
    d.check()


@pytest.mark.kbconform(
    id="grant-10",
    rule="kb-grant.md#g13",
    guide="the-kb-grant-profile",
    level="L2",
    requires="multi-store",
)
def test_a_move_keeps_every_document_and_only_the_owner_moves(
    kbconform_run: Run, kbconform_backend: Any
) -> None:
    """G13: a knowledge base of many documents (more than a page), shared with a grantee, moved
    to every other store and back keeps every document (ids, texts, vectors: searches rank as
    before), its grants and its id; a move to its own store changes nothing; the grantee's
    move is Forbidden, a stranger's NotFound."""
    d = _driver(kbconform_run, kbconform_backend, "grant-10")
    owner, grantee, stranger = d.tenant(), d.tenant(), d.tenant()
    kb = d.kb(owner, documents=23)
    neighbour = d.kb(owner, d.policy.stores[-1], None, 3)
    d.call("share_kb", owner, kb, grantee)
    stores = d.policy.stores
    for store in [*stores[1:], stores[0]]:
        d.call("move_kb", owner, kb, store)
        assert len(d.search(grantee, [kb])) == 23
        d.search(owner, [kb, neighbour], None, 10)
    d.call("move_kb", owner, kb, d.policy.kbs[kb].store)
    assert isinstance(d.refuse("move_kb", grantee, kb, stores[-1]), Forbidden)
    assert isinstance(d.refuse("move_kb", stranger, kb, stores[-1]), NotFound)
    assert d.check()


@pytest.mark.kbconform(
    id="grant-11",
    rule="kb-grant.md#g13",
    guide="the-kb-grant-profile",
    level="L2",
    requires=("fault-injection", "multi-store"),
)
def test_a_move_or_copy_whose_store_fails_leaves_everything_as_it_was(
    kbconform_run: Run, kbconform_open: Any
) -> None:
    """G13: a move or a copy whose store call fails, at its first store call, at its second, or
    at any later one, raises BackendUnavailable (or lands, when no call it made failed) and
    leaves everything as the model says: the knowledge base whole on its store, no new one;
    control: once the fault is off, the same move and copy land."""
    d, switch = _faulty(kbconform_run, kbconform_open, "grant-11")
    owner = d.tenant()
    kb = d.kb(owner, documents=6)
    target = d.policy.stores[1]
    failed = 0
    for passing in range(4):
        for operation in ("move_kb", "copy_kb"):
            switch.set(FaultPlan(passing))
            outcome = d.attempt(operation, owner, kb, target, may_fail=True, learn=False)
            switch.set(None)
            failed += isinstance(outcome, BackendUnavailable)
            d.check()
            if operation == "move_kb" and not isinstance(outcome, BackendUnavailable):
                d.call("move_kb", owner, kb, d.policy.stores[0])
    assert failed >= 2, "control: no move or copy failed"
    d.call("move_kb", owner, kb, target)
    d.call("copy_kb", owner, kb, d.policy.stores[0])
    d.check()


@pytest.mark.kbconform(id="grant-12", rule="kb-grant.md#g14", guide="the-kb-grant-profile", level="L1")
def test_only_the_owner_deletes_and_a_deleted_knowledge_base_is_gone_for_everyone(
    kbconform_run: Run, kbconform_backend: Any
) -> None:
    """G14: a grantee's delete is Forbidden and a stranger's NotFound (nothing deleted); the
    owner's delete removes the knowledge base, its documents and its grants for everyone (every
    facade: NotFound, absent from lists and searches), its id is never given again, and the
    owner's other knowledge bases are untouched. The deleted one is the newest (it holds
    documents): a knowledge base created next on the same store and model has a fresh id and is
    empty (search and get), never the deleted one's id or documents."""
    d = _driver(kbconform_run, kbconform_backend, "grant-12")
    owner, grantee, stranger = d.tenant(), d.tenant(), d.tenant()
    kept = d.kb(owner, documents=2)
    kb = d.kb(owner, documents=4)  # the newest: an id taken from the highest would be its own
    d.call("share_kb", owner, kb, grantee)
    assert isinstance(d.refuse("delete_kb", grantee, kb), Forbidden)
    assert isinstance(d.refuse("delete_kb", stranger, kb), NotFound)
    d.check()
    store, model = d.policy.kbs[kb].store, d.policy.kbs[kb].model
    d.call("delete_kb", owner, kb)
    for tenant in (owner, grantee):
        d.refuse_search(tenant, [kb])
        d.refuse("get_kb", tenant, kb)
    d.refuse_search(owner, [kb, kept])
    d.refuse("delete_kb", owner, kb)
    d.refuse("share_kb", owner, kb, grantee)
    assert len(d.search(owner, [kept])) == 2
    fresh = d.kb(owner, store, model)  # a new id (checked), never the deleted one's
    assert fresh != kb
    assert d.search(owner, [fresh]) == [], "a new knowledge base holds documents it never got"
    d.call("get_kb", owner, fresh)  # compared with the model: no documents
    d.refuse_search(grantee, [fresh])
    d.kb(owner, documents=1)
    d.check()


# -- random programs ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Step:
    """One step of a program: ``op`` by the tenant, on the knowledge base, with the other
    tenant and store the indices pick (modulo)."""

    op: str
    tenant: int
    kb: int = 0
    other: int = 0
    store: int = 0
    n: int = 1


STEPS = st.builds(
    Step,
    op=st.sampled_from(["create", "ingest", "share", "revoke", "read", "copy", "move", "delete"]),
    tenant=st.integers(0, 10),
    kb=st.integers(0, 20),
    other=st.integers(0, 10),
    store=st.integers(0, 3),
    n=st.integers(1, 3),
)


@pytest.mark.kbconform(id="grant-13", rule="kb-grant.md#the-rules", guide="the-kb-grant-profile", level="L3")
def test_random_programs_of_grants_copies_and_moves_leave_every_read_as_the_model_says(
    kbconform_run: Run, kbconform_open: Any
) -> None:
    """G1, G6, G8, G17, G18, G20: after a random program of knowledge bases created, documents
    ingested (each claiming another's id, KB and owner in keys that are dropped), grants given
    and revoked, reads, copies, moves and deletes, by tenants whose names collide under common
    mistakes (the first two a colliding pair), every read of every tenant (list, get of every
    knowledge base, the exact search of all it reads, NotFound for the rest) equals the model.
    Each program starts with every tenant's knowledge base granted to the next tenant and read
    by every tenant, its revokes withdraw grants that exist, and its reads (a tenant's list,
    gets and searches) come between steps: a revoke follows reads of what it withdraws. Each
    program ends with a grant, so a tenant reads some documents but not all (the guard below is
    the control), and with tenants named at the stores' boundaries (long look-alikes, quotes,
    ``_`` and ``%``), two of them ingesting one and the same document."""
    informative = [0]

    @kbconform_run.given(
        tenants=with_twins(TENANT_FAMILIES, 2, 4),
        program=st.lists(STEPS, min_size=1, max_size=20),
    )
    def check(tenants: list[str], program: list[Step]) -> None:
        backend = kbconform_open()
        try:
            d = _driver(kbconform_run, backend, "grant-13")
            for tenant in tenants:
                d.tenant(tenant)
            stores, models = d.policy.stores, list(d.policy.models)
            for index, tenant in enumerate(tenants):
                d.kb(tenant, stores[index % len(stores)], models[index % len(models)], 2)
            for first_kb, next_tenant in zip(list(d.policy.kbs), [*tenants[1:], tenants[0]], strict=True):
                d.call("share_kb", d.policy.kbs[first_kb].owner, first_kb, next_tenant)
            d.check()  # every grant read before any revoke: a grant kept once read would show
            for step in program:
                tenant = tenants[step.tenant % len(tenants)]
                other = tenants[step.other % len(tenants)]
                store = stores[step.store % len(stores)]
                owned = [kb.id for kb in d.policy.kbs.values() if kb.owner == tenant]
                readable = list(d.policy.scope(tenant))
                granted = [(k, g) for k in owned for g in sorted(d.policy.grants.get(k, ()))]
                kb = owned[step.kb % len(owned)] if owned else None
                if step.op == "create" or kb is None:
                    d.kb(tenant, store, models[step.n % len(models)], step.n - 1)
                elif step.op == "ingest":
                    d.ingest(tenant, kb, step.n)
                elif step.op == "share" and other != tenant:
                    d.call("share_kb", tenant, kb, other)
                elif step.op == "revoke":
                    if granted:  # a grant that exists (the setup's were read)
                        kb, other = granted[step.other % len(granted)]
                    d.attempt("revoke_kb", tenant, kb, other)  # itself: no change, or refused
                elif step.op == "read":
                    d.check([other])
                elif step.op == "copy":
                    d.call("copy_kb", tenant, readable[step.kb % len(readable)], store)
                elif step.op == "move":
                    d.call("move_kb", tenant, kb, store)
                elif step.op == "delete":
                    d.call("delete_kb", tenant, kb)
            # The program ends with a grant of a knowledge base holding documents: the last
            # comparison has a tenant reading some documents but not all.
            first, second = tenants[0], tenants[1]
            kb = d.kb(first, stores[-1], models[0], 2)
            d.call("share_kb", first, kb, second)
            d.kb(second, stores[0], models[0], 1)
            # Then tenants named at the stores' boundaries (G17), two of them each ingesting one
            # and the same document into a knowledge base on one store: two documents, each in
            # its own knowledge base (G1).
            same = d.documents(models[0], 1)
            for index, tenant in enumerate(EDGE_TENANTS):
                d.tenant(tenant)
                if index < 2:
                    d.call("ingest", tenant, d.kb(tenant, stores[0], models[0]), [dict(same[0])])
            informative[0] += d.check()
        finally:
            kbconform_run.close(backend)

    check()
    assert informative[0] > 0, "no example compared a scope that is neither empty nor everything"


#: Callers that are no identity: None, values that are not strings, strings that are no tenant.
NO_IDENTITY: tuple[object, ...] = (None, 0, "", "never-created", "ACME", "acme ", ["acme"])
#: A caller: a tenant (an index into those created), or no identity (a negative index).
CALLERS = st.integers(0, 30) | st.integers(1, len(NO_IDENTITY)).map(lambda n: -n)
FAULTS = st.none() | st.integers(0, 3)
#: A malformed variant of a call, or none.
MALFORMED = st.none() | st.sampled_from(["store", "empty", "dimension", "zero", "limit", "duplicate"])


class GrantMachine(DriverMachine[GrantDriver]):
    """Grants given and revoked between writes, copies, moves and deletes of many tenants,
    malformed and unauthenticated calls and store faults, every read of every tenant compared
    with the model after each step (:class:`DriverMachine` holds the invariant and binds the
    machine to a run)."""

    @initialize(
        tenants=with_twins(TENANT_FAMILIES, 2, 4),
        seed=st.integers(0, 2**32 - 1),
    )
    def open_backend(self, tenants: list[str], seed: int) -> None:
        """A backend with a few tenants, each owning a knowledge base with documents granted to
        the next tenant (so every program holds grants its reads see before any revoke); then
        :meth:`_opening` with the first of them."""
        self.driver = d = GrantDriver(self.fresh_backend(), self.run.manifest, random.Random(seed))
        for index, tenant in enumerate(tenants):
            d.tenant(tenant)
            d.kb(tenant, d.policy.stores[index % len(d.policy.stores)], None, 2)
        for kb, tenant in zip(list(d.policy.kbs), [*tenants[1:], tenants[0]], strict=True):
            d.call("share_kb", d.policy.kbs[kb].owner, kb, tenant)
        self._opening(tenants[0], tenants[1], next(iter(d.policy.kbs)))

    def _opening(self, owner: str, grantee: str, kb: str) -> None:
        """What every program starts with, each call a rule the model judges, so that what breaks
        one shows whatever rules Hypothesis draws after: ``kb``'s ``grantee`` ingests into it
        (``Forbidden``, G6); its ``owner`` revokes itself (no change, or refused: it still reads
        it) and copies it (the copy is the owner's alone, G12), then copies it again with the
        copy's last store call failing (nothing left, G13), and fills the first copy with one more
        document; a knowledge base with no document on another store is searched beside it at a
        limit past every document (the exact ranking, however the stores split it, G8), then
        granted and deleted (its grantee reads it nowhere, G14); a search naming one knowledge
        base twice (``KB_GRANT_INVALID``, G15); and a search of all the owner reads, once counting
        its store calls, then with the last of them failing (the search fails whole, never fewer
        hits, G3, G10)."""
        d, stores = self.d, self.d.policy.stores
        d.attempt("ingest", grantee, kb, d.documents(d.policy.kbs[kb].model, 1))
        d.attempt("revoke_kb", owner, kb, owner)
        # its documents' ids learnt after the count: the count holds the copy's calls only
        calls, copy = self._store_calls(lambda: d.attempt("copy_kb", owner, kb, stores[-1], learn=False))
        d.learn()
        if calls:
            self._do("copy_kb", owner, kb, stores[-1], fault=calls - 1)
        d.ingest(owner, copy, 1)
        empty = d.kb(owner, stores[0])
        if len(stores) > 1:
            d.search(owner, [copy, empty])
        d.call("share_kb", owner, empty, grantee)
        d.call("delete_kb", owner, empty)
        d.refuse_search(owner, [kb, kb], None, 1)
        kbs = list(d.policy.scope(owner))
        calls, _ = self._store_calls(lambda: d.search(owner, kbs))
        if calls:
            with self._armed(calls - 1) as armed:
                d.attempt_search(owner, kbs, may_fail=armed)

    def _tenant(self, pick: int) -> str:
        return self.d.policy.tenants[pick % len(self.d.policy.tenants)]

    def _caller(self, pick: int) -> object:
        return self._tenant(pick) if pick >= 0 else NO_IDENTITY[-pick - 1]

    def _kb(self, pick: int) -> str | None:
        """Any knowledge base (the caller's, granted, foreign), or a deleted or missing id."""
        known = list(self.d.policy.kbs)
        if pick % 7 == 6 or not known:
            return f"kb-missing-{pick}"
        return known[pick % len(known)]

    def _owned(self, caller: object, pick: int) -> str | None:
        owned = [kb.id for kb in self.d.policy.kbs.values() if kb.owner == caller]
        return owned[pick % len(owned)] if owned else None

    def _store(self, pick: int) -> str:
        return self.d.policy.stores[pick % len(self.d.policy.stores)]

    def _do(self, operation: str, *args: Any, fault: int | None = None) -> Any:
        with self._armed(fault) as armed:
            outcome = self.d.attempt(operation, *args, may_fail=armed, learn=False)
        self.d.learn()
        return outcome

    # -- rules -----------------------------------------------------------------------------------

    @rule(name=st.sampled_from(TENANT_NAMES) | st.just(""))
    def create_tenant(self, name: str) -> None:
        """A new tenant, or KB_GRANT_INVALID for one that exists or an empty name."""
        self.d.attempt("create_tenant", name)

    @rule(
        caller=CALLERS,
        store=st.integers(0, 3),
        model=st.integers(0, 3),
        malformed=st.booleans(),
        fault=FAULTS,
    )
    def create_kb(self, caller: int, store: int, model: int, malformed: bool, fault: int | None) -> None:
        """A knowledge base of a tenant or of no identity; an unknown store (KB_GRANT_INVALID)."""
        who = self._caller(caller)
        models = list(self.d.policy.models)
        named = (
            f"{self._store(store)}-unknown"
            if malformed and who in self.d.policy.tenants
            else self._store(store)
        )
        self._do("create_kb", who, named, models[model % len(models)], fault=fault)

    @rule(caller=CALLERS, kb=st.integers(0, 40), n=st.integers(1, 3), malformed=MALFORMED, fault=FAULTS)
    def ingest(self, caller: int, kb: int, n: int, malformed: str | None, fault: int | None) -> None:
        """Documents into any knowledge base (the owner's lands, a grantee's is Forbidden, others
        NotFound), or a malformed batch into the caller's own (KB_GRANT_INVALID)."""
        who = self._caller(caller)
        target = self._kb(kb)
        model = (
            self.d.policy.kbs[target].model
            if target in self.d.policy.kbs
            else next(iter(self.d.policy.models))
        )
        batch: list[Any] = self.d.documents(model, n)
        if malformed is not None:
            target = self._owned(who, kb)
            if target is None:
                return
            dimension = self.d.policy.models[self.d.policy.kbs[target].model]
            batch = {
                "empty": [],
                "dimension": [{**batch[0], "embedding": [1.0] * (dimension + 1)}],
                "zero": [*batch[:-1], {**batch[-1], "embedding": [0.0] * dimension}],
            }.get(malformed, [*batch[:-1], {**batch[-1], "text": ""}])
        self._do("ingest", who, target, batch, fault=fault)

    @rule(caller=CALLERS, kb=st.integers(0, 40), other=st.integers(0, 30), share=st.booleans())
    def grant(self, caller: int, kb: int, other: int, share: bool) -> None:
        """A grant given or revoked, by the owner (lands, or KB_GRANT_INVALID for itself), a
        grantee (Forbidden), a stranger (NotFound) or no identity."""
        who = self._caller(caller)
        self._do("share_kb" if share else "revoke_kb", who, self._kb(kb), self._tenant(other))

    @rule(kb=st.integers(0, 40), other=st.integers(0, 30))
    def share_as_owner(self, kb: int, other: int) -> None:
        """The owner of a knowledge base grants it to another tenant (read after this step)."""
        target = self._kb(kb)
        if target not in self.d.policy.kbs:
            return
        owner = self.d.policy.kbs[target].owner
        others = [t for t in self.d.policy.tenants if t != owner]
        if others:
            self._do("share_kb", owner, target, others[other % len(others)])

    def _granted(self) -> list[tuple[str, str]]:
        return [
            (kb, grantee) for kb, grantees in self.d.policy.grants.items() for grantee in sorted(grantees)
        ]

    @rule(pick=st.integers(0, 40))
    def revoke_a_grant(self, pick: int) -> None:
        """The owner withdraws a grant that exists, its grantee having read it after every
        earlier step: from now on it reads it nowhere. (No precondition: which grants exist
        follows from calls a fault may or may not stop, so a rule that exists only with a grant
        would make Hypothesis's replay of a program draw differently.)"""
        granted = self._granted() if self.driver is not None else []
        if not granted:
            return
        kb, grantee = granted[pick % len(granted)]
        self._do("revoke_kb", self.d.policy.kbs[kb].owner, kb, grantee)

    @rule(caller=CALLERS, kb=st.integers(0, 40), store=st.integers(0, 3), fault=FAULTS)
    def copy(self, caller: int, kb: int, store: int, fault: int | None) -> None:
        """A copy of any knowledge base (a readable one lands, others NotFound) onto any store."""
        self._do("copy_kb", self._caller(caller), self._kb(kb), self._store(store), fault=fault)

    @rule(caller=CALLERS, kb=st.integers(0, 40), store=st.integers(0, 3), fault=FAULTS)
    def move(self, caller: int, kb: int, store: int, fault: int | None) -> None:
        """A move of any knowledge base onto any store (the owner's lands)."""
        self._do("move_kb", self._caller(caller), self._kb(kb), self._store(store), fault=fault)

    @rule(caller=CALLERS, kb=st.integers(0, 40), fault=FAULTS)
    def delete(self, caller: int, kb: int, fault: int | None) -> None:
        """A delete of any knowledge base (the owner's lands)."""
        self._do("delete_kb", self._caller(caller), self._kb(kb), fault=fault)

    @rule(
        caller=CALLERS,
        kbs=st.lists(st.integers(0, 40), min_size=1, max_size=3),
        limit=st.integers(1, 5),
        malformed=MALFORMED,
        fault=FAULTS,
    )
    def search(
        self, caller: int, kbs: list[int], limit: int, malformed: str | None, fault: int | None
    ) -> None:
        """A search of any knowledge bases with a small limit: the exact top of the ranking, or
        the error the model names (in the spec's order), BackendUnavailable with a store failing."""
        who = self._caller(caller)
        names: list[Any] = list(dict.fromkeys(self._kb(k) for k in kbs))
        first = self.d.policy.kbs.get(str(names[0]))
        model = first.model if first else next(iter(self.d.policy.models))
        vector: Any = self.d.vector(model)
        if malformed == "limit":
            limit = MAX_LIMIT + 1
        elif malformed == "duplicate":
            names = [*names, names[0]]
        elif malformed == "zero":
            vector = [0.0] * len(vector)
        elif malformed == "dimension":
            vector = [*vector, 1.0]
        elif malformed == "empty":
            names = []
        with self._armed(fault) as armed:
            self.d.attempt_search(who, names, vector, limit, may_fail=armed)


@pytest.mark.kbconform(id="grant-14", rule="kb-grant.md#the-rules", guide="the-kb-grant-profile", level="L4")
def test_interleaved_grants_writes_moves_and_faults_match_the_model(kbconform_run: Run) -> None:
    """G1-G15, G17, G18: every step of every program (tenants and knowledge bases created, documents
    ingested, grants given and revoked, copies, moves and deletes by owners, grantees,
    strangers and no identity, malformed calls, searches with small limits, store faults from
    any store call of a call) and, after each, every read of every tenant equals the policy
    model; the model compared scopes that are neither empty nor everything (control)."""
    machine = GrantMachine.bound(kbconform_run, "KbGrant")
    kbconform_run.run_machine(machine)
    assert machine.compared[0] > 0, "no step compared a scope that is neither empty nor everything"


@pytest.mark.kbconform(id="grant-15", rule="kb-grant.md#g16", guide="the-kb-grant-profile", level="L2")
def test_calls_spanning_the_backends_pages_do_exactly_their_work(
    kbconform_run: Run, kbconform_open: Any
) -> None:
    """G1, G4, G8 and G12 across the backend's pages (schemas/pages.md): for each size, a fresh
    backend where bob owns that many knowledge bases and shares every one with ann (the first
    and the last two hold a document); carl owns two with a document each, shared with nobody.
    ann's and carl's list_kbs are exactly what they read; ann's search naming all of
    bob's is their exact ranking. ann writes that many documents into one knowledge base in one
    ingest, copies it (up to the largest search limit, what a search can show whole) and
    deletes it: the copy holds exactly its documents."""
    store = kbconform_run.manifest.stores[-1]
    for size in kbconform_run.page_sizes():
        backend = kbconform_open()
        d = _driver(kbconform_run, backend, f"grant-15 {size}")
        ann, bob, carl = d.tenant(), d.tenant(), d.tenant()
        shared = [d.kb(bob, store) for _ in range(size)]
        for n in sorted({0, size - 2, size - 1} - {-1}):
            d.ingest(bob, shared[n])
        for kb in shared:
            d.call("share_kb", bob, kb, ann)
        d.kb(carl, documents=1)
        d.kb(carl, documents=1)
        for tenant in (ann, carl):
            d.attempt("list_kbs", tenant)
        assert d.search(ann, shared), "ann's search of bob's knowledge bases found none of their documents"
        own = d.kb(ann)
        d.ingest(ann, own, size)
        if size <= MAX_LIMIT:
            copy = str(d.call("copy_kb", ann, own, store))
            d.call("delete_kb", ann, own)
            d.learn()
            assert len(d.search(ann, [copy])) == size, "the copy lacks documents"
        kbconform_run.close(backend)


#: The most store calls of one write grant-16 fails it at (every one, when it makes no more; else
#: the first ones and some spread to the last).
GRANT_ATTEMPTS = 12


def _atomic_world(d: GrantDriver) -> dict[str, str]:
    """Tenants owner, grantee and stranger; the owner's knowledge base a on the first store with
    three documents, shared with the grantee, and b on the last store with two, shared with
    nobody; the stranger's own c with a document."""
    owner, grantee, stranger = d.tenant(), d.tenant(), d.tenant()
    first, last = d.policy.stores[0], d.policy.stores[-1]
    a, b = d.kb(owner, first, documents=3), d.kb(owner, last, documents=2)
    d.call("share_kb", owner, a, grantee)
    c = d.kb(stranger, first, documents=1)
    return {"owner": owner, "grantee": grantee, "stranger": stranger, "a": a, "b": b, "c": c, "last": last}


def _batch(d: GrantDriver, kb: str, run: Run) -> list[dict[str, Any]]:
    """Documents for one ingest into ``kb``: three, or one more than the manifest's smallest
    page size (a write that spans two of the backend's pages)."""
    declared = run.manifest.page_sizes
    return d.documents(d.policy.kbs[kb].model, min(declared) + 1 if declared else 3)


#: Each write grant-16 faults, as a call on :func:`_atomic_world`.
GRANT_CHANGES: dict[str, Any] = {
    "create_kb": lambda d, w, run: ("create_kb", w["owner"], w["last"], d.policy.kbs[w["a"]].model),
    "share_kb": lambda d, w, run: ("share_kb", w["owner"], w["b"], w["grantee"]),
    "revoke_kb": lambda d, w, run: ("revoke_kb", w["owner"], w["a"], w["grantee"]),
    "ingest": lambda d, w, run: ("ingest", w["owner"], w["a"], _batch(d, w["a"], run)),
    "delete_kb": lambda d, w, run: ("delete_kb", w["owner"], w["a"]),
    "copy_kb": lambda d, w, run: ("copy_kb", w["grantee"], w["a"], w["last"]),
    "move_kb": lambda d, w, run: ("move_kb", w["owner"], w["a"], w["last"]),
}


def _opened_grants(
    run: Run, open_backend: Any, label: str, fault: Fault
) -> tuple[GrantDriver, str, tuple[Any, ...]]:
    """A fresh backend whose stores fail as ``fault`` says, seeded with :func:`_atomic_world`
    (the same for every attempt of ``label``), and the call of :data:`GRANT_CHANGES` to make."""
    backend = open_backend(BackendOptions(store_fails=fault.switch))
    d = GrantDriver(backend, run.manifest, run.rng(f"grant-16 {label}"))
    operation, *args = GRANT_CHANGES[label](d, _atomic_world(d), run)
    return d, operation, tuple(args)


@pytest.mark.kbconform(
    id="grant-16",
    rule="kb-grant.md#g19",
    guide="the-kb-grant-profile",
    level="L2",
    requires="fault-injection",
)
def test_a_write_whose_store_fails_at_any_call_changes_nothing(
    kbconform_run: Run, kbconform_open: Any
) -> None:
    """G19: each write (a knowledge base created, shared, revoked, written to, deleted, copied by
    a grantee, moved; the copy and the move to another store when the manifest lists two) made
    once unfaulted, counting its store calls, then on a fresh backend for each of those calls
    with every store failing there, from that call on (lasting) or at it only (transient): the
    call raises BackendUnavailable and changes nothing, or lands whole; afterwards every view
    of every tenant (lists, gets, searches) equals the model, and the same call with the stores
    back lands. The kit never assumes how many store calls a write makes: its last one fails
    too, and a write that makes none (a catalogue kept in the process) has nothing to fault.
    Control: some faulted write failed."""
    failed = 0
    for label in GRANT_CHANGES:
        failed += every_fault(
            label,
            partial(_opened_grants, kbconform_run, kbconform_open, label),
            kbconform_run.close,
            attempts=GRANT_ATTEMPTS,
            # a copy's documents are learnt once the fault is off, by the check (GrantDriver.learn)
            attempt=lambda d, operation, args: d.attempt(operation, *args, may_fail=True, learn=False),
        )
    assert failed, "control: no faulted write failed"
