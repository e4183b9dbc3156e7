"""The kb-grant profile's harness-v1 operations (:class:`~kbconform.adapter.KbGrantBackend`):
the caller crosses as its JSON form (any JSON value), every other argument as a value of its
kind or null when it is not one, which the backend checks as it does in process."""

from __future__ import annotations

import builtins
from collections.abc import Mapping, Sequence
from typing import Any

from kbconform.adapter import GrantHit, KbInfo
from kbconform.harness import HarnessBackend, WireTable, done
from kbconform.harness._wire import (
    caller_to_wire,
    documents_or_null,
    grant_hit_from_wire,
    grant_hit_to_wire,
    integer_or_null,
    kb_from_wire,
    kb_to_wire,
    text_or_null,
    texts_or_null,
    vector_or_null,
)


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
)
