"""The kb-grant profile's harness-v1 operations (:class:`~kbconform.adapter.KbGrantBackend`):
the caller crosses as its JSON form (any JSON value), every other argument as a value of its
kind or null when it is not one, which the backend checks as it does in process."""

from __future__ import annotations

import builtins
import math
import numbers
from collections.abc import Mapping, Sequence
from typing import Any

from kbconform.harness import HarnessBackend, WireTable, done, json_form
from kbconform.profiles.kb_grant.protocol import GrantHit, KbInfo


def caller_to_wire(caller: object) -> Any:
    """The caller of a kb-grant facade (a tenant) as harness-v1 data: its JSON form, so that the
    backend sees what it would see in process (a ``str`` as its plain value; a number, a list as
    themselves: no identity, which the backend refuses); a value with no JSON form as ``None``."""
    return json_form(caller)


# -- kb-grant arguments ------------------------------------------------------------------------
# Each argument crosses as a value of its kind (a string, an array of strings, a vector, an
# integer), the invalid ones the suites send on purpose included, or as null when it is not of
# that kind: null is as malformed as the value it stands for, so the backend refuses it, after
# the caller, with the same error it gives that value in process.


def text_or_null(value: object) -> str | None:
    """A knowledge base id, a store id, a model name or a tenant id: a ``str`` as its plain value
    (a subclass's too), anything else as null."""
    return str.__str__(value) if isinstance(value, str) else None


def _sequence(value: object) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, (str, bytes, bytearray))


def texts_or_null(value: object) -> list[str] | None:
    """The knowledge bases of a search: a sequence of ``str`` as a list of plain strings (empty
    and repeated ones included), anything else (a ``str`` itself, a list holding a number) as
    null."""
    if not _sequence(value) or not all(isinstance(item, str) for item in value):  # type: ignore[attr-defined]
        return None
    return [str.__str__(item) for item in value]  # type: ignore[attr-defined]


def _number(value: object) -> bool:
    """A real number (a numpy scalar too) that is finite as a double; never a bool."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return False
    try:
        return math.isfinite(float(value))
    except OverflowError:  # an int beyond a double
        return False


def vector_or_null(value: object) -> list[float] | None:
    """A vector: a sequence of finite numbers (any length, zeros included: the backend checks
    the model's dimension) as a list of them; anything else (a NaN, a bool, a string) as null."""
    if not _sequence(value) or not all(_number(item) for item in value):  # type: ignore[attr-defined]
        return None
    return [int(item) if isinstance(item, int) else float(item) for item in value]  # type: ignore[attr-defined]


def integer_or_null(value: object) -> int | None:
    """A limit: an ``int`` (any, the out-of-range ones included) as itself; anything else (a bool,
    a float, a string) as null."""
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else None


def documents_or_null(value: object) -> list[Any] | None:
    """A batch to ingest: a sequence of documents, each as its JSON form (malformed ones
    included), null for one with no JSON form (a vector holding NaN); anything else as null."""
    if not _sequence(value):
        return None
    return [json_form(document) for document in value]  # type: ignore[attr-defined]


def grant_hit_to_wire(hit: Any) -> dict[str, Any]:
    return {"id": hit.id, "kb": hit.kb, "text": hit.text, "score": hit.score}


def grant_hit_from_wire(data: Mapping[str, Any]) -> GrantHit:
    return GrantHit(data["id"], data["kb"], data["text"], float(data["score"]))


def kb_to_wire(kb: Any) -> dict[str, Any]:
    return {"id": kb.id, "owner": kb.owner, "store": kb.store, "model": kb.model, "documents": kb.documents}


def kb_from_wire(data: Mapping[str, Any]) -> KbInfo:
    return KbInfo(data["id"], data["owner"], data["store"], data["model"], data["documents"])


class GrantHarnessBackend(HarnessBackend):
    """A kb-grant backend behind a harness; its ``ingest(caller, kb, documents)`` is the request
    ``ingestDocuments``."""

    def _by(self, op: str, caller: object, **params: Any) -> Mapping[str, Any]:
        return self._request(op, {"backend": self.handle, "caller": caller_to_wire(caller), **params})

    def create_tenant(self, tenant: str, /) -> None:
        self._request("createTenant", {"backend": self.handle, "tenant": text_or_null(tenant)})

    def create_kb(self, caller: object, store: str, model: str, /) -> str:
        result = self._by("createKb", caller, store=text_or_null(store), model=text_or_null(model))
        return str(result["id"])

    def share_kb(self, caller: object, kb: str, grantee: str, /) -> None:
        self._by("shareKb", caller, kb=text_or_null(kb), grantee=text_or_null(grantee))

    def revoke_kb(self, caller: object, kb: str, grantee: str, /) -> None:
        self._by("revokeKb", caller, kb=text_or_null(kb), grantee=text_or_null(grantee))

    def ingest(self, caller: object, kb: object, documents: object, /) -> builtins.list[str]:
        result = self._by(
            "ingestDocuments", caller, kb=text_or_null(kb), documents=documents_or_null(documents)
        )
        return list(result["ids"])

    def search(
        self, caller: object, kbs: Sequence[str], embedding: Sequence[float], limit: int, /
    ) -> builtins.list[GrantHit]:
        result = self._by(
            "searchKbs",
            caller,
            kbs=texts_or_null(kbs),
            embedding=vector_or_null(embedding),
            limit=integer_or_null(limit),
        )
        return [grant_hit_from_wire(hit) for hit in result["hits"]]

    def get_kb(self, caller: object, kb: str, /) -> KbInfo:
        return kb_from_wire(self._by("getKb", caller, kb=text_or_null(kb))["kb"])

    def list_kbs(self, caller: object, /) -> builtins.list[KbInfo]:
        return [kb_from_wire(kb) for kb in self._by("listKbs", caller)["kbs"]]

    def delete_kb(self, caller: object, kb: str, /) -> None:
        self._by("deleteKb", caller, kb=text_or_null(kb))

    def copy_kb(self, caller: object, source: str, store: str, /) -> str:
        result = self._by("copyKb", caller, source=text_or_null(source), store=text_or_null(store))
        return str(result["id"])

    def move_kb(self, caller: object, kb: str, store: str, /) -> None:
        self._by("moveKb", caller, kb=text_or_null(kb), store=text_or_null(store))


def _search(backend: Any, a: Mapping[str, Any]) -> dict[str, Any]:
    found = backend.search(a["caller"], a["kbs"], a["embedding"], a["limit"])
    return {"hits": [grant_hit_to_wire(hit) for hit in found]}


WIRE = WireTable(
    handlers={
        "createTenant": lambda s, a: done(s.backend.create_tenant(a["tenant"])),
        "createKb": lambda s, a: {"id": s.backend.create_kb(a["caller"], a["store"], a["model"])},
        "shareKb": lambda s, a: done(s.backend.share_kb(a["caller"], a["kb"], a["grantee"])),
        "revokeKb": lambda s, a: done(s.backend.revoke_kb(a["caller"], a["kb"], a["grantee"])),
        "ingestDocuments": lambda s, a: {"ids": list(s.backend.ingest(a["caller"], a["kb"], a["documents"]))},
        "searchKbs": lambda s, a: _search(s.backend, a),
        "getKb": lambda s, a: {"kb": kb_to_wire(s.backend.get_kb(a["caller"], a["kb"]))},
        "listKbs": lambda s, a: {"kbs": [kb_to_wire(kb) for kb in s.backend.list_kbs(a["caller"])]},
        "deleteKb": lambda s, a: done(s.backend.delete_kb(a["caller"], a["kb"])),
        "copyKb": lambda s, a: {"id": s.backend.copy_kb(a["caller"], a["source"], a["store"])},
        "moveKb": lambda s, a: done(s.backend.move_kb(a["caller"], a["kb"], a["store"])),
    },
    backend=GrantHarnessBackend,
    # a NotFound names the knowledge base (copyKb's source; a search's: the ones it named)
    named={
        **dict.fromkeys(("shareKb", "revokeKb", "ingestDocuments", "getKb", "deleteKb", "moveKb"), "kb"),
        "copyKb": "source",
        "searchKbs": "kbs",
    },
)
