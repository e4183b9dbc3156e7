"""Whether the Rust server `chroma run` (chromadb's own CLI) can be put behind token authentication.

Standard library and the installed `chroma` command alone (no kbconform):

    python advisories/chroma/repro_rust_no_auth.py [--chroma PATH]

Starts `chroma run --host 127.0.0.1` with the settings that configure the Python server's token
authentication and SimpleRBAC (the `CHROMA_SERVER_AUTHN_*` and `CHROMA_SERVER_AUTHZ_*` variables
and their files, harnesses/chroma_server/chroma_server.py), then asks it, with no token at all,
to list a database's collections and to create a tenant. chromadb 1.5.9's Rust server answers
both (its command takes a config file with no authentication settings, and it reads none of the
Python settings): there is no offline way to judge it with authentication, so the kit does not.
It also shows the server's own resolution of a collection id, which no authentication would
change: a collection of tenant_a is read by its id under tenant_b's path (#7462), while the
`by-id` route under that path answers 404.

Exit status: 0 when both calls were answered with no credential (the server has no
authentication) and the id was resolved under the other tenant's path, 1 otherwise, 2 when
the server could not be run. About 10 s.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "harnesses" / "chroma_server"))

import chroma_server as chroma  # noqa: E402


def _chroma_command() -> str | None:
    beside = Path(chroma.python()).parent / "chroma"
    return str(beside) if beside.exists() else shutil.which("chroma")


def _by_id_under_another_path(server: chroma.Server) -> dict[str, object]:
    """A collection of tenant_a read by its id under tenant_b's path: the Rust server's own
    resolution of an id, which no authentication would change (#7462)."""
    for tenant in ("tenant_a", "tenant_b"):
        chroma.call(server, "POST", "/api/v2/tenants", None, {"name": tenant})
        chroma.call(server, "POST", f"/api/v2/tenants/{tenant}/databases", None, {"name": "main"})
    a, b = "/api/v2/tenants/tenant_a/databases/main", "/api/v2/tenants/tenant_b/databases/main"
    made = chroma.call(server, "POST", f"{a}/collections", None, {"name": "alice_notes"})[1]
    cid = made["id"] if isinstance(made, dict) else ""
    rows = {"ids": ["a1"], "embeddings": [[1.0, 0.0, 0.0]], "documents": ["alice secret"]}
    chroma.call(server, "POST", f"{a}/collections/{cid}/add", None, rows)
    got = chroma.call(server, "POST", f"{b}/collections/{cid}/get", None, {"include": ["documents"]})
    by_id = chroma.call(server, "GET", f"{b}/collections/by-id/{cid}", None)
    return {
        "get_by_id_under_another_tenant": got[0],
        "documents_under_another_tenant": got[1].get("documents") if isinstance(got[1], dict) else got[1],
        "by_id_route_under_another_tenant": by_id[0],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chroma", help="the chroma command (default: beside the server's Python)")
    args = parser.parse_args(argv)
    command = args.chroma or _chroma_command()
    if not command:
        print("repro_rust_no_auth: no chroma command found", file=sys.stderr)
        return 2
    folder = tempfile.mkdtemp(prefix="kbconform-chroma-rust-")
    admin = chroma.User("admin", "tok-admin", "*", ("*",), "admin")
    chroma.write_files(folder, [admin], chroma.ROLES)
    port = chroma._free_port()
    log = (Path(folder) / "server.log").open("wb")  # closed in the finally below
    process = subprocess.Popen(
        [command, "run", "--path", str(Path(folder) / "data"), "--host", "127.0.0.1", "--port", str(port)],
        env=chroma.server_env(folder),
        cwd=folder,
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    server = chroma.Server(f"http://127.0.0.1:{port}", folder, process, log.name)
    try:
        deadline = time.monotonic() + chroma.START_SECONDS
        while True:
            if process.poll() is not None or time.monotonic() > deadline:
                print("repro_rust_no_auth: chroma run did not start", file=sys.stderr)
                return 2
            try:
                chroma.call(server, "GET", "/api/v2/heartbeat", None, timeout=2)
                break
            except OSError:
                time.sleep(0.2)
        version = chroma.call(server, "GET", "/api/v2/version", None)[1]
        listed = chroma.call(
            server, "GET", "/api/v2/tenants/default_tenant/databases/default_database/collections", None
        )
        made = chroma.call(server, "POST", "/api/v2/tenants", None, {"name": "made_without_a_token"})
        by_id = _by_id_under_another_path(server)
    finally:
        server.stop()
        log.close()
    summary = {
        "chroma_version": version,
        "list_without_token": listed[0],
        "create_tenant_without_token": made[0],
        **by_id,
    }
    print(json.dumps(summary, sort_keys=True))
    return 0 if listed[0] == 200 and made[0] == 200 and by_id["get_by_id_under_another_tenant"] == 200 else 1


if __name__ == "__main__":
    sys.exit(main())
