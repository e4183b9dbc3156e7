"""The kb-grant policy model: from the history of calls, what every call must do.

:class:`GrantPolicy` holds tenants, knowledge bases (owner, store, model, documents with their
vectors) and grants as ``schemas/kb-grant.md`` says they are held. For any caller it answers
which error each call raises (a :class:`~kbconform.conformance.Refused`, in the spec's order),
and for a search the exact ranking: the true cosine of the search vector and every document of
the named knowledge bases, computed in float64 from the vectors the suite supplied, as scores
``(1 + cos) / 2``. It never asks the backend: a suite calls the backend, compares, and then
commits what landed (:meth:`GrantPolicy.commit_create_kb` and the others); a call that raised
changes nothing.

Each method names its rule (G1 to G15). The order of checks is the spec's: the caller, the
call's shape, the knowledge base's rights, then the rest (models, dimensions, stores, grantees).
A call that breaks two rules at once outside that order is not made by the suites.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kbconform.adapter import MAX_LIMIT
from kbconform.conformance import MayRefuse, Refused, few
from kbconform.errors import ContractViolation, Forbidden, NotFound, Unauthenticated
from kbconform.profiles.kb_grant.protocol import GRANT_INVALID, MODEL_MISMATCH

__all__ = ["GrantPolicy"]

#: How far a backend's score may be from the exact one (vectors may be kept as float32), and
#: how close two exact scores are to count as a tie (either order is right).
TOLERANCE = 1e-4


@dataclass(frozen=True, slots=True)
class Document:
    """A stored document: its id, text and vector (as the suite sent it)."""

    id: str
    text: str
    vector: tuple[float, ...]


@dataclass
class Kb:
    """A knowledge base: its owner, store, model, and documents by id (in the order stored)."""

    id: str
    owner: str
    store: str
    model: str
    documents: dict[str, Document] = field(default_factory=dict)

    def view(self) -> tuple[str, str, str, str, int]:
        """What get_kb and list_kbs show of it: (id, owner, store, model, documents)."""
        return (self.id, self.owner, self.store, self.model, len(self.documents))


@dataclass(frozen=True, slots=True)
class Ranked:
    """A document with its exact score for one search."""

    id: str
    kb: str
    text: str
    score: float


def _invalid(why: str) -> Refused:
    return Refused(ContractViolation, f"{GRANT_INVALID}: {why}")


def _mismatch(models: Iterable[str]) -> Refused:
    return Refused(
        ContractViolation, f"{MODEL_MISMATCH}: knowledge bases of the models {sorted(set(models))}"
    )


def is_vector(value: object) -> bool:
    """A vector's shape: a non-empty list of finite numbers (not bools), not all zero."""
    if not isinstance(value, Sequence) or isinstance(value, str | bytes) or not value:
        return False
    numbers = all(isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x) for x in value)
    return numbers and any(x != 0 for x in value)


def score(a: Sequence[float], b: Sequence[float]) -> float:
    """``(1 + cos) / 2`` of two vectors, in float64."""
    dot = math.fsum(float(x) * float(y) for x, y in zip(a, b, strict=True))
    norm = math.sqrt(math.fsum(float(x) ** 2 for x in a)) * math.sqrt(math.fsum(float(y) ** 2 for y in b))
    return (1.0 + dot / norm) / 2.0


@dataclass
class GrantPolicy:
    """The exact model of the kb-grant profile for one backend: the manifest's ``stores`` (ids)
    and ``models`` (name to dimension), and everything the calls that landed made."""

    stores: tuple[str, ...]
    models: Mapping[str, int]
    tenants: list[str] = field(default_factory=list)
    kbs: dict[str, Kb] = field(default_factory=dict)
    #: Each knowledge base's grantees.
    grants: dict[str, set[str]] = field(default_factory=dict)
    #: Every id a knowledge base or a document was ever given (ids are never reused).
    given: set[str] = field(default_factory=set)

    # -- identity and rights ---------------------------------------------------------------------

    def identify(self, caller: object) -> Refused | None:
        """G2: None, not a ``str``, empty, or a tenant never created is no identity."""
        if caller is None:
            return Refused(Unauthenticated, "no caller")
        if not isinstance(caller, str):
            return Refused(Unauthenticated, f"a caller that is not a string: {type(caller).__name__}")
        if not caller:
            return Refused(Unauthenticated, "an empty caller")
        if caller not in self.tenants:
            return Refused(Unauthenticated, f"the tenant {caller!r} was never created")
        return None

    def readable(self, caller: str, kb: object) -> bool:
        """G1, G6: the owner and every grantee read a knowledge base."""
        found = self.kbs.get(kb) if isinstance(kb, str) else None
        return found is not None and (found.owner == caller or caller in self.grants.get(found.id, set()))

    def scope(self, caller: str) -> dict[str, Kb]:
        """Every knowledge base ``caller`` reads, by id."""
        return {i: kb for i, kb in self.kbs.items() if self.readable(caller, i)}

    def _read(self, caller: object, kb: object) -> Refused | None:
        """The caller, then read access to ``kb`` (G4: else NotFound, as for a missing id)."""
        refused = self.identify(caller)
        if refused is not None:
            return refused
        if not isinstance(kb, str) or not kb:
            return _invalid("a knowledge base id is a non-empty string")
        assert isinstance(caller, str)
        if not self.readable(caller, kb):
            return Refused(NotFound, f"{caller!r} reads no knowledge base {kb!r}")
        return None

    def _administer(self, caller: object, kb: object) -> Refused | None:
        """Read access, then ownership (G6: a grantee is Forbidden)."""
        refused = self._read(caller, kb)
        if refused is not None:
            return refused
        assert isinstance(kb, str)
        if self.kbs[kb].owner != caller:
            return Refused(Forbidden, f"{caller!r} is a grantee of {kb!r}, not its owner")
        return None

    def _store(self, store: object) -> Refused | None:
        if store not in self.stores:
            return _invalid(f"a store of the manifest {list(self.stores)}; got {store!r}")
        return None

    def _grantee(self, grantee: object) -> Refused | None:
        if grantee not in self.tenants:
            return _invalid(f"a grantee is a tenant; got {grantee!r}")
        return None

    # -- the operator ------------------------------------------------------------------------------

    def create_tenant(self, tenant: object) -> Refused | None:
        """A name that exists, or is not a non-empty string: ``KB_GRANT_INVALID``."""
        if not isinstance(tenant, str) or not tenant:
            return _invalid("a tenant is a non-empty string")
        if tenant in self.tenants:
            return _invalid(f"the tenant {tenant!r} exists")
        return None

    def commit_create_tenant(self, tenant: str) -> None:
        self.tenants.append(tenant)

    # -- knowledge bases -------------------------------------------------------------------------

    def create_kb(self, caller: object, store: object, model: object) -> Refused | None:
        """An unknown store or model: ``KB_GRANT_INVALID``."""
        refused = self.identify(caller) or self._store(store)
        if refused is not None:
            return refused
        if model not in self.models:
            return _invalid(f"a model of the manifest {list(self.models)}; got {model!r}")
        return None

    def commit_create_kb(self, caller: str, store: str, model: str, kb: str) -> None:
        self.kbs[kb] = Kb(kb, caller, store, model)
        self.given.add(kb)

    def share_kb(self, caller: object, kb: object, grantee: object) -> Refused | None:
        """G6: the owner grants; an unknown grantee, or the owner itself: ``KB_GRANT_INVALID``."""
        refused = self._administer(caller, kb) or self._grantee(grantee)
        if refused is None and grantee == caller:
            return _invalid("the owner reads its knowledge base already")
        return refused

    def commit_share_kb(self, caller: str, kb: str, grantee: str) -> None:
        self.grants.setdefault(kb, set()).add(grantee)

    def revoke_kb(self, caller: object, kb: object, grantee: object) -> Refused | None:
        """G6: the owner withdraws a grant, at once; an unknown grantee: ``KB_GRANT_INVALID``. The
        owner as grantee has no grant to withdraw: the call changes nothing, or is refused as
        ``share_kb`` refuses it (``KB_GRANT_INVALID``); the contract lets the backend choose."""
        refused = self._administer(caller, kb) or self._grantee(grantee)
        if refused is None and grantee == caller:
            return MayRefuse(ContractViolation, f"{GRANT_INVALID}: the owner holds no grant to withdraw")
        return refused

    def commit_revoke_kb(self, caller: str, kb: str, grantee: str) -> None:
        self.grants.get(kb, set()).discard(grantee)

    def ingest(self, caller: object, kb: object, documents: object) -> Refused | None:
        """G15: a batch that is empty, or holds a document without non-empty text or with a
        vector that is not one of the knowledge base's model: ``KB_GRANT_INVALID``."""
        refused = self.identify(caller)
        if refused is not None:
            return refused
        if not isinstance(documents, Sequence) or isinstance(documents, str) or not documents:
            return _invalid("documents are a non-empty list")
        for index, document in enumerate(documents):
            if not isinstance(document, Mapping):
                return _invalid(f"document {index} is an object")
            text = document.get("text")
            if not isinstance(text, str) or not text:
                return _invalid(f"document {index} has a non-empty text")
            if not is_vector(document.get("embedding")):
                return _invalid(f"document {index} has a vector of finite numbers, not all zero")
        refused = self._administer(caller, kb)
        if refused is not None:
            return refused
        assert isinstance(kb, str)
        dimension = self.models[self.kbs[kb].model]
        for index, document in enumerate(documents):
            if len(document["embedding"]) != dimension:
                return _invalid(f"document {index} has a vector of dimension {dimension}")
        return None

    def commit_ingest(self, kb: str, documents: Sequence[Mapping[str, Any]], ids: Sequence[str]) -> None:
        """Keys beside text and embedding are dropped."""
        for document, doc_id in zip(documents, ids, strict=True):
            vector = tuple(float(x) for x in document["embedding"])
            self.kbs[kb].documents[doc_id] = Document(doc_id, document["text"], vector)
            self.given.add(doc_id)

    def get_kb(self, caller: object, kb: object) -> Refused | tuple[str, str, str, str, int]:
        """G1, G4: a knowledge base the caller reads, as get_kb shows it."""
        refused = self._read(caller, kb)
        if refused is not None:
            return refused
        assert isinstance(kb, str)
        return self.kbs[kb].view()

    def list_kbs(self, caller: object) -> Refused | dict[str, tuple[str, str, str, str, int]]:
        """G1: every knowledge base the caller reads, by id."""
        refused = self.identify(caller)
        if refused is not None:
            return refused
        assert isinstance(caller, str)
        return {i: kb.view() for i, kb in self.scope(caller).items()}

    def delete_kb(self, caller: object, kb: object) -> Refused | None:
        """G14: only the owner deletes."""
        return self._administer(caller, kb)

    def commit_delete_kb(self, caller: str, kb: str) -> None:
        """G14: the knowledge base, its documents and its grants are gone for everyone."""
        del self.kbs[kb]
        self.grants.pop(kb, None)

    def copy_kb(self, caller: object, source: object, store: object) -> Refused | None:
        """G12: read access to the source (else NotFound), then a store of the manifest."""
        return self._read(caller, source) or self._store(store)

    def commit_copy_kb(self, caller: str, source: str, store: str, kb: str, ids: Mapping[str, str]) -> None:
        """The copy: ``caller``'s, on ``store``, with the source's model; ``ids`` gives each source
        document's id in the copy."""
        original = self.kbs[source]
        copy = Kb(kb, caller, store, original.model)
        for doc_id, document in original.documents.items():
            copy.documents[ids[doc_id]] = Document(ids[doc_id], document.text, document.vector)
        self.kbs[kb] = copy
        self.given |= {kb, *ids.values()}

    def move_kb(self, caller: object, kb: object, store: object) -> Refused | None:
        """G13: only the owner moves, to a store of the manifest."""
        return self._administer(caller, kb) or self._store(store)

    def commit_move_kb(self, caller: str, kb: str, store: str) -> None:
        """G13: every document moves with it, ids unchanged."""
        self.kbs[kb].store = store

    # -- search ----------------------------------------------------------------------------------

    def search(self, caller: object, kbs: object, embedding: object, limit: object) -> Refused | list[Ranked]:
        """The exact ranking a search returns (its first ``limit``), or its error, in the order
        of the spec's Search section: the caller; the call's shape; every knowledge base
        readable (G4, G5); one model (G7) and its dimension; then the stores (G8 to G11)."""
        refused = self.identify(caller)
        if refused is not None:
            return refused
        assert isinstance(caller, str)
        if not isinstance(kbs, Sequence) or isinstance(kbs, str) or not kbs:
            return _invalid("kbs is a non-empty list")
        if any(not isinstance(kb, str) or not kb for kb in kbs):
            return _invalid("kbs holds knowledge base ids (non-empty strings)")
        if len(set(kbs)) != len(kbs):
            return _invalid("kbs names each knowledge base once")
        if not is_vector(embedding):
            return _invalid("the embedding is a vector of finite numbers, not all zero")
        if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_LIMIT:
            return _invalid(f"limit is an integer from 1 to {MAX_LIMIT}")
        unreadable = [kb for kb in kbs if not self.readable(caller, kb)]
        if unreadable:
            return Refused(NotFound, f"{caller!r} reads no knowledge base {unreadable[0]!r}")
        models = {self.kbs[kb].model for kb in kbs}
        if len(models) > 1:
            return _mismatch(models)
        assert isinstance(embedding, Sequence)
        if len(embedding) != self.models[models.pop()]:
            return _invalid("the embedding has the dimension of the knowledge bases' model")
        return self.ranking(kbs, embedding)[:limit]

    def ranking(self, kbs: Iterable[str], embedding: Sequence[float]) -> list[Ranked]:
        """Every document of ``kbs`` with its exact score, highest first."""
        ranked = [
            Ranked(document.id, kb, document.text, score(embedding, document.vector))
            for kb in kbs
            for document in self.kbs[kb].documents.values()
        ]
        return sorted(ranked, key=lambda r: -r.score)

    def stores_of(self, kbs: Iterable[str]) -> set[str]:
        """The stores the knowledge bases ``kbs`` are bound to."""
        return {self.kbs[kb].store for kb in kbs}

    @property
    def texts(self) -> dict[str, str]:
        """Every stored document's id and text."""
        return {d.id: d.text for kb in self.kbs.values() for d in kb.documents.values()}

    # -- comparisons -----------------------------------------------------------------------------

    def hit_problems(
        self, kbs: Sequence[str], embedding: Sequence[float], limit: int, hits: Sequence[Any]
    ) -> list[str]:
        """How a search's ``hits`` differ from the exact ranking (G8, G9): ``min(limit, n)`` hits,
        no id twice, each a document of the named knowledge bases with its knowledge base and
        text as stored, its score within :data:`TOLERANCE` of the exact one, highest first, and
        exactly the ``limit`` nearest (documents whose exact scores tie within the tolerance
        are interchangeable, in order and at the cut)."""
        exact = {r.id: r for r in self.ranking(kbs, embedding)}
        ordered = sorted(exact.values(), key=lambda r: -r.score)
        wanted = min(limit, len(ordered))
        got = [(str(hit.id), str(hit.kb), hit.text, hit.score) for hit in hits]
        ids = [g[0] for g in got]
        problems = []
        if len(got) != wanted:
            problems.append(f"{len(got)} hits; expected {wanted} (limit {limit}, {len(ordered)} documents)")
        if len(set(ids)) != len(ids):
            problems.append(f"an id twice: {few(i for i in set(ids) if ids.count(i) > 1)}")
        foreign = [i for i in ids if i not in exact]
        if foreign:
            problems.append(f"hits that are no document of the knowledge bases searched: {few(foreign)}")
        for doc_id, kb, text, given in got:
            ranked = exact.get(doc_id)
            if ranked is None:
                continue
            if (kb, text) != (ranked.kb, ranked.text):
                problems.append(
                    f"{doc_id} is shown as ({kb!r}, {text!r}); stored ({ranked.kb!r}, {ranked.text!r})"
                )
            if not isinstance(given, int | float) or not abs(float(given) - ranked.score) <= TOLERANCE:
                problems.append(f"{doc_id} scores {given!r}; exactly (1 + cos) / 2 = {ranked.score:.6f}")
        known = [exact[i].score for i in ids if i in exact]
        if any(later > earlier + TOLERANCE for earlier, later in itertools.pairwise(known)):
            problems.append(f"hits not highest first: exact scores {[round(s, 5) for s in known]}")
        if wanted and not foreign:
            cut = ordered[wanted - 1].score
            lacking = [r.id for r in ordered if r.score > cut + TOLERANCE and r.id not in ids]
            below = [i for i in ids if exact[i].score < cut - TOLERANCE]
            if lacking or below:
                problems.append(
                    f"not the {wanted} nearest: lacks {few(lacking)}, shows {few(below)} below the cut"
                )
        return problems
