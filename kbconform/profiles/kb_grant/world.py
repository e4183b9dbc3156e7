"""The ``kb-grant`` profile's driver (a backend and :class:`GrantPolicy` driven together) and
its world for the shared isolation suite."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kbconform.adapter import MAX_LIMIT, BackendOptions, Manifest
from kbconform.conformance import TOPIC, Driver, Reader, Reading, call_args, carried, hits_count, judged
from kbconform.errors import KbconformError, NotFound
from kbconform.profiles.kb_grant.model import GrantPolicy

__all__ = ["GRANT_TENANTS", "GrantDriver", "GrantIsolation", "GrantWorld"]


def _view(kb: Any) -> tuple[str, str, str, str, int]:
    """A knowledge base as get_kb or list_kbs showed it: (id, owner, store, model, documents)."""
    return (str(kb.id), str(kb.owner), str(kb.store), str(kb.model), kb.documents)


def _shown_view(view: tuple[str, str, str, str, int]) -> str:
    _, owner, store, model, documents = view
    return f"owner {owner}, store {store}, model {model}, {documents} documents"


@dataclass
class GrantDriver(Driver):
    """A kb-grant backend and its model, driven together: each call is made, its outcome
    compared with :class:`~kbconform.profiles.kb_grant.model.GrantPolicy` and what landed committed to it.
    Every error is checked for stored text the call did not send. ``rng`` makes the unique
    token each text starts with, tenant names and the vectors (gaussian, of the model's
    dimension, never zero)."""

    backend: Any
    manifest: Manifest
    rng: random.Random = field(default_factory=random.Random)
    policy: GrantPolicy = field(init=False)
    #: A copy that landed whose documents' ids are not known yet: (caller, source, store, copy).
    unlearned: list[tuple[str, str, str, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.policy = GrantPolicy(self.manifest.stores, self.manifest.models)

    # -- data ------------------------------------------------------------------------------------

    def vector(self, model: str) -> list[float]:
        """A random gaussian vector of ``model``'s dimension (never the zero vector)."""
        while True:
            vector = [self.rng.gauss(0.0, 1.0) for _ in range(self.policy.models[model])]
            if any(vector):
                return vector

    def text(self, what: str = TOPIC) -> str:
        """A document's text: a unique token, then ``what``."""
        return f"kbg{self.rng.getrandbits(48):012x} {what}"

    def documents(self, model: str, n: int, what: str = TOPIC) -> list[dict[str, Any]]:
        """``n`` valid documents of ``model``. Each claims a place inside its data (G18): keys
        beside ``text`` and ``embedding``, which are dropped, name a stored document's id, a
        knowledge base and a tenant the backend knows (when there are any)."""
        texts, kbs = list(self.policy.texts), list(self.policy.kbs)  # as learnt: one program a seed
        tenants = self.policy.tenants
        made = []
        for _ in range(n):
            document: dict[str, Any] = {"text": self.text(what), "embedding": self.vector(model)}
            claims = {"id": texts, "kb": kbs, "owner": tenants}
            document.update({key: self.rng.choice(known) for key, known in claims.items() if known})
            made.append(document)
        return made

    def tenant_name(self, prefix: str = "t") -> str:
        return f"{prefix}-{self.rng.getrandbits(32):08x}"

    # -- calls -----------------------------------------------------------------------------------

    def attempt(self, operation: str, *args: Any, may_fail: bool = False, learn: bool = True) -> Any:
        """Call ``operation`` (any facade but search) with ``args``: a refusal the model expects
        comes back as the error; an answer is compared with the model (ids, views) and what
        landed committed. With ``may_fail`` (a store fault armed), BackendUnavailable is a call
        that changed nothing. A copy's document ids are learnt by a search of the copy (with
        ``learn`` False: by :meth:`learn`, once the fault is off). Any other outcome fails."""
        expected, outcome = self._made(operation, args, may_fail, self.policy.texts.values())
        if isinstance(outcome, KbconformError):
            return outcome
        call = f"{operation}{call_args(args)}"
        if operation in ("get_kb", "list_kbs"):
            got = _view(outcome) if operation == "get_kb" else _views(outcome)
            assert got == expected, f"{call} shows {got}; the model holds {expected}"
            return outcome
        if operation in ("create_kb", "copy_kb"):
            problems = self._new_ids([outcome])
            assert not problems, f"{call}: {'; '.join(problems)}"
        if operation == "ingest":
            outcome = list(outcome)
            problems = self._new_ids(outcome, len(args[2]))
            assert not problems, f"{call}: {'; '.join(problems)}"
            self.policy.commit_ingest(args[1], args[2], outcome)
        elif operation == "create_kb":
            self.policy.commit_create_kb(args[0], args[1], args[2], outcome)
        elif operation == "copy_kb":
            self.unlearned.append((*args, outcome))
            self.policy.given.add(outcome)
            if learn:
                self.learn()
        else:
            getattr(self.policy, f"commit_{operation}")(*args)
        return outcome

    def _new_ids(self, returned: Sequence[object], count: int | None = None) -> list[str]:
        """Problems with ids a call returned: ``count`` of them, non-empty strings, all different,
        none given before (ids are unique and never reused)."""
        if count is not None and len(returned) != count:
            return [f"expected {count} ids; got {len(returned)}: {list(returned)!r}"]
        if any(not isinstance(i, str) or not i for i in returned):
            return [f"ids that are not non-empty strings: {list(returned)!r}"]
        if len(set(returned)) != len(returned):
            return [f"one id twice in {list(returned)!r}"]
        taken = sorted(str(i) for i in returned if i in self.policy.given)
        return [f"ids given before: {taken}"] if taken else []

    def learn(self) -> None:
        """The document ids of every copy that landed, by a search of the copy (G12: it holds
        every document of its source, with the source's texts, under new ids)."""
        while self.unlearned:
            caller, source, store, copy = self.unlearned.pop(0)
            documents = list(self.policy.kbs[source].documents.values())
            ids: dict[str, str] = {}
            if documents:
                hits = list(self.backend.search(caller, [copy], documents[0].vector, len(documents)))
                by_text = {str(hit.text): str(hit.id) for hit in hits}
                texts = sorted(d.text for d in documents)
                held = sorted(str(hit.text) for hit in hits)
                assert held == texts, f"the copy {copy!r} of {source!r} holds {held}; its source {texts}"
                assert all(str(hit.kb) == copy for hit in hits), (
                    f"a search of {copy!r} shows other knowledge bases"
                )
                ids = {d.id: by_text[d.text] for d in documents}
                problems = self._new_ids(list(ids.values()))
                assert not problems, f"the documents of the copy {copy!r}: {'; '.join(problems)}"
            self.policy.commit_copy_kb(caller, source, store, copy, ids)

    def tenant(self, name: str | None = None) -> str:
        """A new tenant (a random name unless ``name``)."""
        tenant = name or self.tenant_name()
        self.call("create_tenant", tenant)
        return tenant

    def kb(self, caller: str, store: str | None = None, model: str | None = None, documents: int = 0) -> str:
        """A new knowledge base of ``caller`` (the first store and model unless named) holding
        ``documents`` documents; its id."""
        model = model or next(iter(self.policy.models))
        kb = str(self.call("create_kb", caller, store or self.policy.stores[0], model))
        if documents:
            self.ingest(caller, kb, documents)
        return kb

    def ingest(self, caller: str, kb: str, n: int = 1, what: str = TOPIC) -> list[str]:
        """``n`` documents of ``caller`` into ``kb`` that must land; their ids."""
        batch = self.documents(self.policy.kbs[kb].model, n, what)
        return [str(i) for i in self.call("ingest", caller, kb, batch)]

    # -- searches --------------------------------------------------------------------------------

    def everything(self, kbs: Iterable[str]) -> int:
        """A limit above the number of documents of ``kbs`` (at most the largest limit)."""
        return min(
            MAX_LIMIT, sum(len(self.policy.kbs[kb].documents) for kb in kbs if kb in self.policy.kbs) + 1
        )

    def attempt_search(
        self,
        caller: object,
        kbs: Any,
        embedding: Any = None,
        limit: Any = None,
        may_fail: bool = False,
    ) -> list[Any] | KbconformError:
        """Search as ``caller``: the hits, compared with the exact ranking (G8, G9), or the error
        the model expects (with ``may_fail``, BackendUnavailable too). ``embedding`` defaults to
        a random vector of the first named knowledge base's model, ``limit`` to everything."""
        if embedding is None:
            first = self.policy.kbs.get(kbs[0]) if kbs and isinstance(kbs[0], str) else None
            embedding = self.vector(first.model if first else next(iter(self.policy.models)))
        limit = self.everything(kbs) if limit is None else limit
        who = f"search as {caller!r} of {kbs!r} (limit {limit!r})"
        outcome: list[Any] | KbconformError = judged(
            who,
            self.policy.search(caller, kbs, embedding, limit),
            lambda: list(self.backend.search(caller, kbs, embedding, limit)),
            self.policy.texts.values(),
            [],
            may_fail,
            hits_count,
        )
        if isinstance(outcome, KbconformError):
            return outcome
        problems = self.policy.hit_problems(kbs, embedding, limit, outcome)
        assert not problems, f"{who}: {'; '.join(problems)}"
        return outcome

    def search(self, caller: object, kbs: Any, embedding: Any = None, limit: Any = None) -> list[Any]:
        """A search the model allows: its hits, exactly the model's ranking."""
        outcome = self.attempt_search(caller, kbs, embedding, limit)
        assert isinstance(outcome, list), f"search as {caller!r} of {kbs!r} failed: {outcome!r}"
        return outcome

    def refuse_search(
        self, caller: object, kbs: Any, embedding: Any = None, limit: Any = None
    ) -> KbconformError:
        """A search the model refuses: it must raise exactly that error."""
        outcome = self.attempt_search(caller, kbs, embedding, limit)
        assert isinstance(outcome, KbconformError), f"search as {caller!r} of {kbs!r} answered"
        return outcome

    def groups(self, caller: str) -> list[list[str]]:
        """The knowledge bases ``caller`` reads, one list per model (what one search may name)."""
        by_model: dict[str, list[str]] = {}
        for kb in self.policy.scope(caller).values():
            by_model.setdefault(kb.model, []).append(kb.id)
        return list(by_model.values())

    def check(self, tenants: Iterable[str] | None = None) -> int:
        """Every read of every tenant (of ``tenants`` only, when named) equals the model (G1, G4,
        G6): list_kbs, get_kb of every knowledge base, a search of everything it reads (per
        model), the very same search by the next tenant right after (answered from that
        tenant's own rights), and each knowledge base it may not read searched alone
        (NotFound). How many
        tenants read documents that are neither none nor all (a check that could tell a leak,
        or a loss, from a correct backend)."""
        self.learn()
        informative = 0
        total = len(self.policy.texts)
        everyone = list(self.policy.tenants)
        for tenant in everyone if tenants is None else tenants:
            self.attempt("list_kbs", tenant)
            for kb in self.policy.kbs:
                self.attempt("get_kb", tenant, kb)
                if not self.policy.readable(tenant, kb):
                    self.attempt_search(tenant, [kb])
            shown = 0
            after = everyone[(everyone.index(tenant) + 1) % len(everyone)]
            for group in self.groups(tenant):
                vector = self.vector(self.policy.kbs[group[0]].model)
                shown += len(self.search(tenant, group, vector))
                # The very same search from another tenant right after: answered from its own
                # rights, never from what the first left behind (a cache keyed by the request).
                self.attempt_search(after, group, vector)
            informative += 0 < shown < total
        return informative


def _views(kbs: Iterable[Any]) -> dict[str, tuple[str, str, str, str, int]]:
    shown = [_view(kb) for kb in kbs]
    views = {view[0]: view for view in shown}
    assert len(views) == len(shown), f"list_kbs shows a knowledge base twice: {sorted(v[0] for v in shown)}"
    return views


@dataclass
class GrantWorld:
    """The seeded tenants, knowledge bases and grants, and the model that holds them."""

    driver: GrantDriver
    readers: tuple[Reader, ...]

    @property
    def policy(self) -> GrantPolicy:
        return self.driver.policy

    def size(self, facade: str) -> int:
        return len(self.policy.texts) if facade == "search" else len(self.policy.kbs)

    def expected(self, facade: str, reader: Reader) -> Reading:
        scope = self.policy.scope(reader.identity)
        if facade == "search":
            items = {d.id: d.text for kb in scope.values() for d in kb.documents.values()}
        else:
            items = {i: _shown_view(kb.view()) for i, kb in scope.items()}
        return Reading(items, len(items))

    def read(self, backend: Any, facade: str, reader: Reader) -> Reading:
        tenant, found = reader.identity, {}
        if facade == "list":
            views = [_view(kb) for kb in backend.list_kbs(tenant)]
            return Reading({v[0]: _shown_view(v) for v in views}, len(views))
        if facade == "get":
            for kb in self.policy.kbs:
                try:
                    view = _view(backend.get_kb(tenant, kb))
                except NotFound:  # what a foreign knowledge base and a missing one raise alike
                    continue
                found[view[0]] = _shown_view(view)
            return Reading(found, len(found))
        shown = 0
        for group in self.driver.groups(tenant):  # everything it reads, one search per model
            hits = list(
                backend.search(
                    tenant,
                    group,
                    self.driver.vector(self.policy.kbs[group[0]].model),
                    self.driver.everything(group),
                )
            )
            found.update((str(hit.id), str(hit.text)) for hit in hits)
            shown += len(hits)
        for kb in self.policy.kbs:  # and every knowledge base it may not read, alone
            if not self.policy.readable(tenant, kb):
                try:
                    hits = list(
                        backend.search(tenant, [kb], self.driver.vector(self.policy.kbs[kb].model), MAX_LIMIT)
                    )
                except NotFound:
                    continue
                found.update((str(hit.id), str(hit.text)) for hit in hits)
        return Reading(found, shown)

    def _own(self, identity: object) -> list[str]:
        """The knowledge bases a read as ``identity`` names: a model's group it reads that holds
        documents (for a reader), else any knowledge base holding documents."""
        if isinstance(identity, str) and identity in self.policy.tenants:
            for group in self.driver.groups(identity):
                if any(self.policy.kbs[kb].documents for kb in group):
                    return group
        return [next(kb.id for kb in self.policy.kbs.values() if kb.documents)]

    def read_once(self, backend: Any, facade: str, identity: object) -> object:
        kbs = self._own(identity)
        if facade == "search":
            return backend.search(identity, kbs, self.driver.vector(self.policy.kbs[kbs[0]].model), 10)
        if facade == "get":
            return backend.get_kb(identity, kbs[0])
        return backend.list_kbs(identity)

    def no_identities(self) -> dict[str, object]:
        """None, values that are not strings, and strings that are no tenant: empty, never
        created, case, space and prefix variants of one, a knowledge base's id."""
        tenant = self.policy.tenants[0]
        return {
            "None": None,
            "a number": 1,
            "a list holding a tenant": [tenant],
            "an empty string": "",
            "a tenant never created": f"never-created-{tenant}",
            "a tenant in upper case": tenant.upper(),
            "a tenant with a trailing space": f"{tenant} ",
            "a prefix of a tenant": tenant[:-1],
            "a knowledge base's id": next(iter(self.policy.kbs)),
        }

    def carried(self, error: BaseException) -> list[str]:
        return carried(error, self.policy.texts.values())

    def _owned(self, tenant: object) -> str:
        """The first knowledge base ``tenant`` owns (any, for a caller that owns none)."""
        owned = (kb.id for kb in self.policy.kbs.values() if kb.owner == tenant)
        return next(owned, next(iter(self.policy.kbs)))

    def writers(self) -> tuple[Reader, ...]:
        """The first three tenants that own a knowledge base: each ingests into its own."""
        owners = {kb.owner for kb in self.policy.kbs.values()}
        return tuple(r for r in self.readers if r.identity in owners)[:3]

    def _document(self, kb: str, mark: str) -> dict[str, Any]:
        draw = random.Random(mark)  # the same vector for the write and the model's record of it
        vector = [draw.gauss(0.0, 1.0) or 1.0 for _ in range(self.policy.models[self.policy.kbs[kb].model])]
        return {"text": f"{mark} {TOPIC} written at once", "embedding": vector}

    def write(self, backend: Any, facade: str, identity: object, mark: str) -> object:
        kb = self._owned(identity)
        return backend.ingest(identity, kb, [self._document(kb, mark)])

    def wrote(self, facade: str, writer: Reader, mark: str, answer: object) -> list[str]:
        kb = self._owned(writer.identity)
        ids = list(answer) if isinstance(answer, Sequence) and not isinstance(answer, str) else [answer]
        problems = self.driver._new_ids(ids, 1)
        if not problems:
            self.policy.commit_ingest(kb, [self._document(kb, mark)], [str(i) for i in ids])
        return problems


#: The seeded tenants: names that are prefixes of each other, and a digit.
GRANT_TENANTS = ("acme", "acme-2", "beta", "1", "stranger")


@dataclass(frozen=True)
class GrantIsolation:
    """The ``kb-grant`` profile: tenants owning knowledge bases on every declared store (and
    model), some granted to others (one grant revoked), one moved, one copied, one deleted, one
    empty, and a tenant that owns nothing."""

    manifest: Manifest

    def seed(self, backend: Any, rng: random.Random) -> GrantWorld:
        d = GrantDriver(backend, self.manifest, rng)
        acme, acme2, beta, one, stranger = (d.tenant(name) for name in GRANT_TENANTS)
        stores, models = d.policy.stores, list(d.policy.models)
        owned = {}
        for index, store in enumerate(stores):
            owned[(acme, store)] = d.kb(acme, store, models[0], 3)
            owned[(acme2, store)] = d.kb(acme2, store, models[index % len(models)], 3)
        shared = owned[(acme, stores[0])]
        d.kb(beta, stores[0], models[-1], 3)
        d.kb(one, stores[-1], models[0])  # an empty knowledge base
        d.call("share_kb", acme, shared, acme2)
        d.call("share_kb", acme, shared, beta)
        d.call("share_kb", acme2, owned[(acme2, stores[-1])], one)
        revoked = owned[(acme, stores[-1])]
        d.call("share_kb", acme, revoked, stranger)
        d.search(stranger, [revoked])  # read once before the revoke: a cached grant would show
        d.call("revoke_kb", acme, revoked, stranger)
        if len(stores) > 1:
            d.call("move_kb", acme, shared, stores[1])
        d.ingest(acme, shared, 1, f"{TOPIC} after the move")
        d.call("copy_kb", beta, shared, stores[-1])
        gone = d.kb(acme2, stores[0], models[0], 2)
        d.call("share_kb", acme2, gone, beta)
        d.call("delete_kb", acme2, gone)
        d.check()
        readers = tuple(Reader(f"tenant {t!r}", t) for t in d.policy.tenants)
        return GrantWorld(d, readers)

    def options(self, store_fails: Callable[..., bool]) -> BackendOptions:
        return BackendOptions(store_fails=store_fails)
