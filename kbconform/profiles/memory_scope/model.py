"""The memory-scope policy model: from the history of calls, what every call must do.

:class:`ScopePolicy` holds every stored memory with the scope it was written under, and the
manifest's design (its scope keys, how a scope is named, whether by-id calls check the scope).
It answers, for any caller: the exact memories a read returns, and which error each call raises.
It never asks the backend: a suite calls the backend, compares, and then tells the model that the
call landed (:meth:`ScopePolicy.commit_add` and the others); a call that raised changes nothing.

Each method names its rule (M1 to M12 of ``schemas/memory-scope.md``). A call that breaks two
rules at once (no identity and empty text) is refused for its identity first.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kbconform.adapter import where_matches
from kbconform.conformance import ANOTHER_TENANT, MayRefuse, Refused, scope_problems
from kbconform.errors import ContractViolation, KbconformError, NotFound, Unauthenticated
from kbconform.profiles.memory_scope.protocol import MAX_LIMIT, MEMORY_INVALID

__all__ = ["Memory", "ScopePolicy"]

Scope = Mapping[str, str]


@dataclass(frozen=True, slots=True)
class Memory:
    """A memory as stored: the scope it was written under, its text and its metadata."""

    id: str
    scope: Mapping[str, str]
    text: str
    metadata: Mapping[str, Any]

    def within(self, scope: Scope) -> bool:
        """M3: whether it matches ``scope``: every key the scope names, with exactly its value."""
        return all(key in self.scope and self.scope[key] == value for key, value in scope.items())


def _invalid(why: str) -> Refused:
    return Refused(ContractViolation, f"{MEMORY_INVALID}: {why}")


@dataclass
class ScopePolicy:
    """The exact model of the memory-scope profile for one backend, under its manifest's design:
    ``keys`` (the declared scope keys, in order), ``prefix`` (a scope names a leading run of
    them), ``reserved`` (characters no scope value may hold) and ``by_id`` (how by-id calls take
    the scope: ``checked``, a memory the scope does not match is not found; ``exact``, only a
    memory written under exactly that scope is found; ``none``, the scope is not asked)."""

    keys: tuple[str, ...]
    prefix: bool = False
    reserved: str = ""
    by_id: str = "checked"
    #: A search returns only memories above the backend's relevance threshold (``searchReturns:
    #: relevant``): its hits are judged in scope, and at most ``limit`` of them, not counted.
    relevant: bool = False
    #: Under ``by_id`` checked, the keys a by-id call checks (``byIdKeys``: a subset, such as the
    #: user alone); empty: every key the scope names.
    by_id_keys: tuple[str, ...] = ()
    #: A search orders the scope's memories most recently written first, whatever the query
    #: (``searchOrder: recency``).
    recency: bool = False
    #: The caller's identity is the application's (``callerIdentity: application``): the kit
    #: sends no caller that names no scope (:func:`~kbconform.profiles.memory_scope.world.no_scopes`).
    application_identity: bool = False
    memories: dict[str, Memory] = field(default_factory=dict)

    @classmethod
    def of(cls, manifest: Mapping[str, Any]) -> ScopePolicy:
        """The model of a backend declaring ``manifest`` (its raw mapping)."""
        return cls(
            keys=tuple(manifest["scopeKeys"]),
            prefix=manifest["scopeMatch"] == "prefix",
            reserved=str(manifest.get("reservedCharacters", "")),
            by_id=str(manifest["byIdScope"]),
            relevant=manifest.get("searchReturns") == "relevant",
            by_id_keys=tuple(manifest.get("byIdKeys", ())),
            recency=manifest.get("searchOrder") == "recency",
            application_identity=manifest.get("callerIdentity") == "application",
        )

    # -- identity (M1) ---------------------------------------------------------------------------

    def identify(self, scope: object) -> Refused | None:
        """Why ``scope`` names no scope (``Unauthenticated``), or None for a valid one."""

        def no(why: str) -> Refused:
            return Refused(Unauthenticated, why)

        if not isinstance(scope, Mapping):
            return no(f"a scope that is not a mapping: {type(scope).__name__}")
        if not scope:
            return no("an empty scope")
        unknown = [key for key in scope if key not in self.keys]
        if unknown:
            return no(f"scope keys the manifest does not declare: {unknown!r}")
        for key, value in scope.items():
            if not isinstance(value, str) or not value:
                return no(f"the scope key {key!r} has no value: {value!r}")
            if any(c in value for c in self.reserved):
                return no(f"the scope value {value!r} holds a reserved character")
        if self.prefix and tuple(scope) != self.keys[: len(scope)]:
            return no(f"the keys {list(scope)!r} are not a leading run of {list(self.keys)!r}")
        return None

    def valid(self, scope: object) -> bool:
        return self.identify(scope) is None

    def matching(self, scope: Scope) -> dict[str, Memory]:
        """M3: the memories ``scope`` reaches."""
        return {i: m for i, m in self.memories.items() if m.within(scope)}

    # -- writes (M2, M7) -------------------------------------------------------------------------

    def add(self, scope: object, text: object, metadata: object) -> Refused | None:
        refused = self.identify(scope)
        if refused is not None:
            return refused
        if not isinstance(text, str) or not text:
            return _invalid("a memory's text is a non-empty string")
        if not isinstance(metadata, Mapping):
            return _invalid("metadata is an object")
        return None

    def commit_add(self, scope: Scope, text: str, metadata: Mapping[str, Any], memory: str) -> None:
        """M2, M7: stored under exactly ``scope``; its metadata is data, never a scope."""
        self.memories[memory] = Memory(memory, dict(scope), text, dict(metadata))

    def check_id(self, returned: object) -> list[str]:
        """Problems with the id an add returned: a non-empty string no memory had."""
        if not isinstance(returned, str) or not returned:
            return [f"expected a memory id; got {returned!r}"]
        return [f"the id {returned!r} was given to another memory"] if returned in self.memories else []

    def reused(self, scope: Scope, returned: object) -> tuple[str | None, str | None]:
        """What an add under ``scope`` that returned the id of a memory already stored did, as
        the caller and effect it charges (:func:`~kbconform.conformance.charge`): replaced or
        merged into a memory of the very same scope (``replaced``), or into another scope's
        (another's data ``written``). Neither for an id no memory has."""
        found = self.memories.get(returned) if isinstance(returned, str) else None
        if found is None:
            return None, None
        if dict(found.scope) == dict(scope):
            return None, "replaced"
        return ANOTHER_TENANT, "written"

    def _by_id(self, scope: object, memory: object) -> Refused | Memory:
        """M5: the memory a by-id call acts on, or its refusal."""
        if self.by_id != "none":
            refused = self.identify(scope)
            if refused is not None:
                return refused
        found = self.memories.get(memory) if isinstance(memory, str) else None
        if found is None:
            return Refused(NotFound, f"no memory {memory!r}")
        if self.by_id == "checked" and not found.within(self._checked(scope)):  # type: ignore[arg-type]
            return Refused(NotFound, f"the memory {memory!r} is outside the scope")
        if self.by_id == "exact" and found.scope != scope:
            return Refused(NotFound, f"the memory {memory!r} was not written under exactly the scope")
        return found

    def _checked(self, scope: Scope) -> Scope:
        """The part of an identified ``scope`` a by-id call checks: the ``byIdKeys`` it names
        (every key when none are declared)."""
        if not self.by_id_keys:
            return scope
        return {key: value for key, value in scope.items() if key in self.by_id_keys}

    def get(self, scope: object, memory: object) -> Refused | dict[str, str]:
        """M5: the memory, as ``{id: text}``."""
        found = self._by_id(scope, memory)
        return found if isinstance(found, Refused) else {found.id: found.text}

    def update(self, scope: object, memory: object, text: object, metadata: object = None) -> Refused | None:
        found = self._by_id(scope, memory)
        if isinstance(found, Refused):
            return found
        if not isinstance(text, str) or not text:
            return _invalid("a memory's text is a non-empty string")
        if metadata is not None and not isinstance(metadata, Mapping):
            return _invalid("a memory's metadata is an object")
        return None

    def commit_update(
        self, scope: object, memory: str, text: str, metadata: Mapping[str, Any] | None = None
    ) -> None:
        """M5, M6: the text changes, and the metadata keys given; the scope it was written under
        does not, whatever the metadata names."""
        old = self.memories[memory]
        self.memories[memory] = Memory(old.id, old.scope, text, {**old.metadata, **(metadata or {})})

    def delete(self, scope: object, memory: object) -> Refused | None:
        """M5: a memory outside the scope, or no memory, is ``NotFound`` or an answer of nothing
        (a delete that is idempotent by design), changing nothing either way."""
        found = self._by_id(scope, memory)
        if isinstance(found, Refused) and found.error is NotFound:
            return MayRefuse(NotFound, found.why)
        return found if isinstance(found, Refused) else None

    def commit_delete(self, scope: object, memory: str) -> None:
        del self.memories[memory]

    def delete_all(self, scope: object) -> Refused | None:
        """M8: no identity deletes nothing; never everything."""
        return self.identify(scope)

    def commit_delete_all(self, scope: Scope) -> None:
        for memory in self.matching(scope):
            del self.memories[memory]

    # -- reads (M3, M4, M6) ----------------------------------------------------------------------

    def search(self, scope: object, limit: object = 1, where: object = None) -> Refused | dict[str, str]:
        """The memories a search under ``scope`` chooses among, id to text: those matching it
        (M3) whose metadata ``where`` selects (M6); a limit outside 1 to 1000 and a clause
        outside the grammar are ``KB_MEMORY_INVALID``."""
        refused = self.identify(scope)
        if refused is not None:
            return refused
        if type(limit) is not int or not 1 <= limit <= MAX_LIMIT:
            return _invalid(f"a search limit is an integer from 1 to {MAX_LIMIT}")
        assert isinstance(scope, Mapping)  # identified
        try:
            chosen = {i: m.text for i, m in self.matching(scope).items() if where_matches(m.metadata, where)}
        except KbconformError:
            return _invalid("a where clause of the client-where grammar")
        return chosen

    def listed(self, scope: object) -> Refused | dict[str, str]:
        """M3: every memory matching ``scope``."""
        refused = self.identify(scope)
        if refused is not None:
            return refused
        assert isinstance(scope, Mapping)  # identified
        return {i: m.text for i, m in self.matching(scope).items()}

    def first_hit(self, scope: Scope, text: str) -> str | None:
        """The memory a search under ``scope`` for ``text`` returns first, when the model knows
        it: under ``searchOrder: recency`` the scope's memory written last, else the memory whose
        own text ``text`` is (the nearest); None when the scope holds no such memory."""
        matched = self.matching(scope)
        if self.recency:
            return next(reversed(matched), None)
        return next((i for i, m in matched.items() if m.text == text), None)

    @property
    def stored(self) -> dict[str, str]:
        """Every memory's id, with its text."""
        return {i: m.text for i, m in self.memories.items()}

    @staticmethod
    def hit_problems(
        scope: Mapping[str, str], hits: Sequence[Any], limit: int | None, at_most: bool = False
    ) -> list[str]:
        """How a read's ``hits`` differ from what the model allows: no id twice, every hit in
        ``scope`` with its text exactly as stored, and ``min(limit, len(scope))`` of them (all of
        the scope when ``limit`` is None, a list; with ``at_most``, no more than that)."""
        return scope_problems(scope, hits, limit, at_most)
