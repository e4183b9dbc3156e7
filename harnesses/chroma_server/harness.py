"""kbconform harness-v1 (stdio) for Chroma's Python server (PyPI chromadb), store-tenancy profile.

Each backend is a Chroma server (`uvicorn chromadb.app:app` on 127.0.0.1) started with token
authentication and SimpleRBAC as Chroma documents them (chroma_server.py): the plan's users and
tokens in its credentials file, their actions in its authorization file. Tenants and databases
are made through the server's own API by an operator user the harness adds; every other
operation is one HTTP request of the credential the kit sent, on the route the manifest names
(`v2`, or `v1` with `KBCONFORM_CHROMA_ROUTE=v1`). The server's answer is the verdict: each HTTP
status and Chroma error name is mapped to an error code (README.md, "Errors"); the harness adds
no check of its own.

Standard library only (the server runs in its own interpreter, chroma_server.python()); the
protocol is the kit's harness runtime, kbharness.
"""

from __future__ import annotations

import http.client
import json
import os
import secrets
import sys
import threading
import urllib.parse
from collections.abc import Mapping
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parents[1] / "kbconform" / "_harness_runtime")]

import kbharness  # noqa: E402

kbharness.claim_stdout()

import chroma_server as chroma  # noqa: E402

ADAPTER_VERSION = "0.1.0"
ROUTE = os.environ.get("KBCONFORM_CHROMA_ROUTE", "v2")
if ROUTE not in ("v1", "v2"):
    sys.exit(f"chroma-server-harness: KBCONFORM_CHROMA_ROUTE={ROUTE!r}: v1 or v2")


def _version() -> str:
    """chromadb's version in the server's interpreter (the manifest's backend version)."""
    import subprocess

    try:
        done = subprocess.run(
            [chroma.python(), "-c", "import importlib.metadata as m; print(m.version('chromadb'))"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return done.stdout.strip() or "unknown"


MANIFEST = {
    "manifestVersion": "1",
    "isolationProfile": "store-tenancy",
    "adapter": {"name": "kbconform Chroma server harness", "version": ADAPTER_VERSION},
    "backend": {"name": "chromadb (Python FastAPI server)", "version": _version()},
    "readFacades": ["get", "list"],
    "config": {
        "route": ROUTE,
        "authn": chroma.AUTHN,
        "authz": chroma.AUTHZ,
        "overwrite_singleton_tenant_database_access_from_auth": True,
    },
    "features": {
        "fault-injection": "the server's store cannot be made to fail from outside the server",
        "fork": "chromadb's Python server serves no fork route (POST .../fork answers 404 Not Found)",
    },
}

#: The kit's actions (schemas/store-tenancy.md) as SimpleRBAC's (chromadb.auth.AuthzAction).
ACTIONS: Mapping[str, tuple[str, ...]] = {
    "get_collection": ("collection:get_collection",),
    "list_collections": ("db:list_collections",),
    "count_collections": ("db:count_collections",),
    "get": ("collection:get",),
    "query": ("collection:query",),
    "count": ("collection:count",),
    "add": ("collection:add",),
    "upsert": ("collection:upsert",),
    "update": ("collection:update",),
    "delete": ("collection:delete",),
    "create_collection": ("db:create_collection", "db:get_or_create_collection"),
    "modify_collection": ("collection:update_collection",),
    "delete_collection": ("collection:delete_collection",),
    "fork_collection": (),
}
#: What the harness's own operator may do: make tenants and databases, empty the databases.
OPERATOR_ACTIONS = [
    "tenant:create_tenant",
    "tenant:get_tenant",
    "db:create_database",
    "db:get_database",
    "db:list_collections",
    "collection:delete_collection",
]
OPERATOR = "kbconform-operator"


def users_of(plan: Mapping[str, Any], operator_token: str) -> tuple[list[chroma.User], dict[str, list[str]]]:
    """The credentials file's users and the authorization file's roles for ``plan``: a role per
    user (``kbst-<user>``) holding Chroma's actions for the kit's, and the operator."""
    users = [chroma.User(OPERATOR, operator_token, "*", ("*",), OPERATOR)]
    roles = {OPERATOR: list(OPERATOR_ACTIONS)}
    for name, user in sorted(plan["users"].items()):
        tenants = sorted({grant["tenant"] for grant in user["grants"]})
        if len(tenants) != 1:
            raise kbharness.not_implemented(
                f"user {name} is granted {len(tenants)} tenants: a Chroma user has one tenant"
            )
        databases = tuple(sorted({grant["database"] for grant in user["grants"]}))
        role = f"kbst-{name}"
        roles[role] = sorted({a for action in user["actions"] for a in ACTIONS.get(action, ())})
        users.append(chroma.User(name, user["token"], tenants[0], databases, role))
    return users, roles


class Backend:
    """One opened backend: the server it was provisioned on (None before provisionStore)."""

    def __init__(self) -> None:
        self.server: chroma.Server | None = None
        self.plan_key = ""


class Servers:
    """Servers kept between backends: one is taken by a backend at provisionStore and given back
    at close, emptied by the next provisionStore of the same plan (a server is configured when
    it starts, so another plan starts another)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.idle: dict[str, list[tuple[chroma.Server, str]]] = {}

    def take(self, plan: Mapping[str, Any]) -> tuple[chroma.Server, str, str]:
        key = json.dumps(plan, sort_keys=True)
        with self.lock:
            kept = self.idle.get(key, [])
            if kept:
                server, token = kept.pop()
                return server, token, key
        token = "kbconform-operator-" + secrets.token_hex(16)
        users, roles = users_of(plan, token)
        return chroma.start(users, roles), token, key

    def give_back(self, backend: Backend) -> None:
        if backend.server is not None:
            with self.lock:
                token = backend.server.users[OPERATOR].token
                self.idle.setdefault(backend.plan_key, []).append((backend.server, token))
            backend.server = None

    def stop_all(self) -> None:
        with self.lock:
            for kept in self.idle.values():
                for server, _ in kept:
                    server.stop()
            self.idle.clear()


SERVERS = Servers()
_CANNOT_SEND = "cannot be sent"


def _segment(value: object) -> str:
    """A path segment or query value as a client puts it in a URL: a string as it is, anything
    else as its JSON text; percent-encoded."""
    text = value if isinstance(value, str) else json.dumps(value)
    return urllib.parse.quote(text, safe="")


def _query(**values: object) -> str:
    return "?" + "&".join(f"{k}={_segment(v)}" for k, v in values.items() if v is not None)


def _token(credential: object) -> str | None:
    """The token a client sends for ``credential``: None sends no header; a string as it is;
    anything else as its JSON text (Chroma's client sends ``str`` of what it is given)."""
    if credential is None:
        return None
    return credential if isinstance(credential, str) else json.dumps(credential)


def _error(status: int, body: object) -> kbharness.HarnessError:
    """The kit's error for one of Chroma's error answers (README.md, "Errors")."""
    name = body.get("error") if isinstance(body, dict) else None
    message = body.get("message") if isinstance(body, dict) else None
    detail = body.get("detail") if isinstance(body, dict) else None
    text = f"HTTP {status} {json.dumps(body)[:300]}"
    said = str(message or detail or "")
    if status == 403 and name == "AuthError" and said == "Forbidden":
        return kbharness.HarnessError("KB_UNAUTHENTICATED", text)
    if status in (401,):
        return kbharness.HarnessError("KB_UNAUTHENTICATED", text)
    if status == 403:
        return kbharness.HarnessError("KB_FORBIDDEN", text)
    if status == 404 or name == "NotFoundError" or "does not exist" in said:
        return kbharness.HarnessError("KB_NOT_FOUND", text)
    if status in (400, 409, 422):
        return kbharness.HarnessError("KB_STORE_INVALID", text)
    if status >= 500:
        return kbharness.HarnessError("KB_BACKEND_UNAVAILABLE", text)
    return kbharness.HarnessError("KB_HARNESS_INTERNAL", text)


class ChromaServerHarness:
    """The store-tenancy operations, each one request to the backend's Chroma server."""

    manifest = MANIFEST

    # --- lifecycle ---------------------------------------------------------------------------------
    def open(self, params: dict[str, Any], handle: str) -> Backend:
        if params.get("faults"):
            raise kbharness.invalid("fault injection is not offered (manifest features)")
        return Backend()

    def close(self, backend: Backend) -> None:
        SERVERS.give_back(backend)

    def shutdown(self, backends: list[Backend]) -> None:
        for backend in backends:
            SERVERS.give_back(backend)
        SERVERS.stop_all()

    # --- requests ----------------------------------------------------------------------------------
    def _send(self, backend: Backend, method: str, path: str, credential: object, body: Any = None) -> Any:
        if backend.server is None:
            raise kbharness.invalid("provisionStore first: the backend has no server yet")
        token = _token(credential)
        try:
            status, out = chroma.call(backend.server, method, path, token, body)
        except (ValueError, http.client.InvalidURL) as e:
            # http.client refuses a header or URL with control characters before sending it.
            raise kbharness.HarnessError(
                "KB_UNAUTHENTICATED" if token is not None else "KB_STORE_INVALID", f"{_CANNOT_SEND}: {e}"
            ) from None
        except OSError as e:
            raise kbharness.HarnessError("KB_BACKEND_UNAVAILABLE", f"{type(e).__name__}: {e}") from None
        if not 200 <= status < 300:
            raise _error(status, out)
        return out

    def _db(self, p: dict[str, Any]) -> str:
        return f"/api/v2/tenants/{_segment(p['tenant'])}/databases/{_segment(p['database'])}"

    def _collections(self, p: dict[str, Any], rest: str = "", **query: object) -> str:
        """The collections path of the request's tenant and database, on the manifest's route."""
        if ROUTE == "v2":
            return f"{self._db(p)}/collections{rest}" + (_query(**query) if query else "")
        return f"/api/v1/collections{rest}" + _query(tenant=p["tenant"], database=p["database"], **query)

    def _by_id(self, p: dict[str, Any], suffix: str = "") -> str:
        """A collection named by id: v2 under the request's tenant and database, v1 by id alone
        (v1's data routes have no tenant or database)."""
        cid = _segment(p["collection"])
        if ROUTE == "v2":
            return f"{self._db(p)}/collections/{cid}{suffix}"
        return f"/api/v1/collections/{cid}{suffix}"

    # --- the operator's call -----------------------------------------------------------------------
    def provisionStore(self, backend: Backend, p: dict[str, Any]) -> dict[str, Any]:
        plan = p["plan"]
        if backend.server is None:
            try:
                backend.server, _, backend.plan_key = SERVERS.take(plan)
            except RuntimeError as e:
                raise kbharness.HarnessError("KB_BACKEND_UNAVAILABLE", str(e)) from None
        server, op = backend.server, backend.server.users[OPERATOR].token
        for tenant, databases in sorted(plan["tenants"].items()):
            t = _segment(tenant)
            if chroma.call(server, "GET", f"/api/v2/tenants/{t}", op)[0] != 200:
                self._operator(server, "POST", "/api/v2/tenants", op, {"name": tenant})
            for database in databases:
                d = _segment(database)
                if chroma.call(server, "GET", f"/api/v2/tenants/{t}/databases/{d}", op)[0] != 200:
                    self._operator(server, "POST", f"/api/v2/tenants/{t}/databases", op, {"name": database})
                listed = self._operator(server, "GET", f"/api/v2/tenants/{t}/databases/{d}/collections", op)
                for found in listed:
                    name = _segment(found["name"])
                    self._operator(
                        server, "DELETE", f"/api/v2/tenants/{t}/databases/{d}/collections/{name}", op
                    )
        return {}

    @staticmethod
    def _operator(server: chroma.Server, method: str, path: str, token: str, body: Any = None) -> Any:
        status, out = chroma.call(server, method, path, token, body)
        if not 200 <= status < 300:
            raise kbharness.HarnessError(
                "KB_BACKEND_UNAVAILABLE", f"provisioning {method} {path}: HTTP {status} {out}"
            )
        return out

    # --- collections -------------------------------------------------------------------------------
    def createCollection(self, backend: Backend, p: dict[str, Any]) -> dict[str, Any]:
        # Chroma refuses an empty metadata object: the kit's {} is no metadata (README.md).
        body: dict[str, Any] = {"name": p["name"], "metadata": p["metadata"] or None}
        if ROUTE == "v1":
            body["get_or_create"] = False
        out = self._send(backend, "POST", self._collections(p), p["credential"], body)
        return {"id": str(out["id"])}

    def getCollection(self, backend: Backend, p: dict[str, Any]) -> dict[str, Any]:
        out = self._send(backend, "GET", self._collections(p, f"/{_segment(p['name'])}"), p["credential"])
        return {"collection": _shown(out)}

    def listCollections(self, backend: Backend, p: dict[str, Any]) -> dict[str, Any]:
        path = self._collections(p, limit=p["limit"], offset=p["offset"])
        return {"collections": [_shown(c) for c in self._send(backend, "GET", path, p["credential"])]}

    def countCollections(self, backend: Backend, p: dict[str, Any]) -> dict[str, Any]:
        if ROUTE == "v2":
            path = f"{self._db(p)}/collections_count"
        else:
            path = "/api/v1/count_collections" + _query(tenant=p["tenant"], database=p["database"])
        return {"count": self._send(backend, "GET", path, p["credential"])}

    def modifyCollection(self, backend: Backend, p: dict[str, Any]) -> dict[str, Any]:
        body = {"new_name": p["name"], "new_metadata": p["metadata"]}
        self._send(backend, "PUT", self._by_id(p), p["credential"], body)
        return {}

    def deleteCollection(self, backend: Backend, p: dict[str, Any]) -> dict[str, Any]:
        self._send(backend, "DELETE", self._collections(p, f"/{_segment(p['name'])}"), p["credential"])
        return {}

    def forkCollection(self, backend: Backend, p: dict[str, Any]) -> dict[str, Any]:
        raise kbharness.not_implemented(MANIFEST["features"]["fork"])

    # --- records -----------------------------------------------------------------------------------
    def _rows(self, backend: Backend, p: dict[str, Any], suffix: str) -> dict[str, Any]:
        body = {"ids": p["ids"], "embeddings": p["embeddings"], "documents": p["documents"]}
        self._send(backend, "POST", self._by_id(p, suffix), p["credential"], body)
        return {}

    def addRecords(self, backend: Backend, p: dict[str, Any]) -> dict[str, Any]:
        return self._rows(backend, p, "/add")

    def upsertRecords(self, backend: Backend, p: dict[str, Any]) -> dict[str, Any]:
        return self._rows(backend, p, "/upsert")

    def updateRecords(self, backend: Backend, p: dict[str, Any]) -> dict[str, Any]:
        return self._rows(backend, p, "/update")

    def getRecords(self, backend: Backend, p: dict[str, Any]) -> dict[str, Any]:
        body = {"ids": p["ids"], "include": ["documents"]}
        out = self._send(backend, "POST", self._by_id(p, "/get"), p["credential"], body)
        return {"records": _records(out["ids"], out.get("documents"))}

    def queryRecords(self, backend: Backend, p: dict[str, Any]) -> dict[str, Any]:
        body = {"query_embeddings": [p["embedding"]], "n_results": p["n"], "include": ["documents"]}
        out = self._send(backend, "POST", self._by_id(p, "/query"), p["credential"], body)
        return {"records": _records(out["ids"][0], (out.get("documents") or [None])[0])}

    def deleteRecords(self, backend: Backend, p: dict[str, Any]) -> dict[str, Any]:
        self._send(backend, "POST", self._by_id(p, "/delete"), p["credential"], {"ids": p["ids"]})
        return {}

    def countRecords(self, backend: Backend, p: dict[str, Any]) -> dict[str, Any]:
        return {"count": self._send(backend, "GET", self._by_id(p, "/count"), p["credential"])}


def _shown(found: Mapping[str, Any]) -> dict[str, Any]:
    """A collection as the kit reads it: Chroma's id, name and metadata (None is no metadata)."""
    return {"id": str(found["id"]), "name": str(found["name"]), "metadata": dict(found.get("metadata") or {})}


def _records(ids: list[str], documents: list[str | None] | None) -> list[dict[str, str]]:
    docs = documents if documents is not None else [None] * len(ids)
    return [{"id": str(i), "document": "" if d is None else str(d)} for i, d in zip(ids, docs, strict=False)]


if __name__ == "__main__":
    sys.exit(kbharness.serve(ChromaServerHarness(), name="chroma-server-harness"))
