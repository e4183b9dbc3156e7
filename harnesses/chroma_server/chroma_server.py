"""Chroma's Python FastAPI server with token authentication and SimpleRBAC, on 127.0.0.1.

Standard library only (the server itself needs chromadb and uvicorn in the interpreter that
runs it). The configuration is the one Chroma documents for its token authentication and its
role-based authorization provider: a credentials file of users, each with tokens, a tenant and
databases (`chromadb/auth/token_authn`), and an authorization file mapping each user to a role
and each role to its actions (`chromadb/auth/simple_rbac_authz`), set by the server settings
`chroma_server_authn_provider`, `chroma_server_authn_credentials_file`,
`chroma_server_authz_provider` and `chroma_server_authz_config_file` (as `CHROMA_*`
environment variables), with `chroma_overwrite_singleton_tenant_database_access_from_auth`.

Used by harness.py beside it and by the reproductions in advisories/chroma/. The server runs in
the interpreter ``python()`` names: ``$KBCONFORM_CHROMA_PYTHON``, else this folder's ``.venv``
(``install``), else the interpreter running this module.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

AUTHN = "chromadb.auth.token_authn.TokenAuthenticationServerProvider"
AUTHZ = "chromadb.auth.simple_rbac_authz.SimpleRBACAuthorizationProvider"

# Every action SimpleRBAC knows (chromadb.auth.AuthzAction), by the role that may take it.
ALL_ACTIONS = [
    "system:reset",
    "tenant:create_tenant",
    "tenant:get_tenant",
    "db:create_database",
    "db:get_database",
    "db:delete_database",
    "db:list_databases",
    "db:list_collections",
    "db:count_collections",
    "db:create_collection",
    "db:get_or_create_collection",
    "collection:get_collection",
    "collection:delete_collection",
    "collection:update_collection",
    "collection:add",
    "collection:delete",
    "collection:get",
    "collection:query",
    "collection:count",
    "collection:update",
    "collection:upsert",
]
WRITER_ACTIONS = [a for a in ALL_ACTIONS if not a.startswith(("system:", "tenant:"))]
READER_ACTIONS = [
    "db:get_database",
    "db:list_collections",
    "db:count_collections",
    "collection:get_collection",
    "collection:get",
    "collection:query",
    "collection:count",
]
ROLES = {"admin": ALL_ACTIONS, "writer": WRITER_ACTIONS, "reader": READER_ACTIONS}

CALL_SECONDS = 10.0
START_SECONDS = 60.0


@dataclass(frozen=True)
class User:
    """One user of the credentials file: its token, tenant, databases and role."""

    id: str
    token: str
    tenant: str
    databases: tuple[str, ...]
    role: str


def _yaml_list(items: list[str]) -> str:
    return "[" + ", ".join(json.dumps(i) for i in items) + "]"


def credentials_yaml(users: list[User]) -> str:
    """The token provider's credentials file (YAML; JSON strings are YAML scalars)."""
    lines = ["users:"]
    for u in users:
        lines += [
            f"  - id: {json.dumps(u.id)}",
            f"    role: {json.dumps(u.role)}",
            f"    tenant: {json.dumps(u.tenant)}",
            f"    databases: {_yaml_list(list(u.databases))}",
            f"    tokens: {_yaml_list([u.token])}",
        ]
    return "\n".join(lines) + "\n"


def authz_yaml(users: list[User], roles: dict[str, list[str]]) -> str:
    """SimpleRBAC's configuration file: roles and their actions, users and their role."""
    lines = ["roles_mapping:"]
    for role, actions in roles.items():
        lines += [f"  {role}:", f"    actions: {_yaml_list(actions)}"]
    lines.append("users:")
    for u in users:
        lines += [f"  - id: {json.dumps(u.id)}", f"    role: {json.dumps(u.role)}"]
    return "\n".join(lines) + "\n"


HERE = Path(__file__).resolve().parent


def python() -> str:
    """The interpreter the server runs in (chromadb, fastapi and uvicorn installed)."""
    named = os.environ.get("KBCONFORM_CHROMA_PYTHON")
    if named:
        return named
    venv = HERE / ".venv" / "bin" / "python"
    return str(venv) if venv.exists() else sys.executable


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Server:
    """A running server: its base URL, folder and process."""

    url: str
    folder: str
    process: subprocess.Popen[bytes]
    log: str
    users: dict[str, User] = field(default_factory=dict)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        shutil.rmtree(self.folder, ignore_errors=True)

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def server_env(folder: str, overwrite_singleton: bool = True) -> dict[str, str]:
    """The environment that configures the server: persistence, auth, telemetry off."""
    at = Path(folder)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHROMA_")}
    env.update(
        {
            "IS_PERSISTENT": "TRUE",
            "PERSIST_DIRECTORY": str(at / "data"),
            "ANONYMIZED_TELEMETRY": "FALSE",
            "CHROMA_SERVER_AUTHN_PROVIDER": AUTHN,
            "CHROMA_SERVER_AUTHN_CREDENTIALS_FILE": str(at / "credentials.yaml"),
            "CHROMA_SERVER_AUTHZ_PROVIDER": AUTHZ,
            "CHROMA_SERVER_AUTHZ_CONFIG_FILE": str(at / "authz.yaml"),
            "CHROMA_OVERWRITE_SINGLETON_TENANT_DATABASE_ACCESS_FROM_AUTH": (
                "TRUE" if overwrite_singleton else "FALSE"
            ),
            "HOME": folder,
            "PYTHONUNBUFFERED": "1",
        }
    )
    return env


def write_files(folder: str, users: list[User], roles: dict[str, list[str]]) -> None:
    """The credentials file and the authorization file, in ``folder``."""
    (Path(folder) / "credentials.yaml").write_text(credentials_yaml(users), encoding="utf-8")
    (Path(folder) / "authz.yaml").write_text(authz_yaml(users, roles), encoding="utf-8")


def start(
    users: list[User],
    roles: dict[str, list[str]] | None = None,
    interpreter: str | None = None,
    overwrite_singleton: bool = True,
) -> Server:
    """Writes the auth files, starts uvicorn on chromadb.app:app and waits for its heartbeat."""
    folder = tempfile.mkdtemp(prefix="kbconform-chroma-")
    write_files(folder, users, roles or ROLES)
    port = _free_port()
    log = str(Path(folder) / "server.log")
    with Path(log).open("wb") as out:
        process = subprocess.Popen(
            [
                interpreter or python(),
                "-m",
                "uvicorn",
                "chromadb.app:app",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--log-level",
                "warning",
                "--workers",
                "1",
            ],
            env=server_env(folder, overwrite_singleton),
            cwd=folder,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    server = Server(f"http://127.0.0.1:{port}", folder, process, log, {u.id: u for u in users})
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            text = Path(log).read_text(encoding="utf-8", errors="replace")[-4000:]
            server.stop()
            raise RuntimeError(f"the Chroma server exited ({process.returncode}):\n{text}")
        try:
            status, _ = call(server, "GET", "/api/v2/heartbeat", None, timeout=2)
            if status in (200, 401, 403):
                return server
        except OSError:
            pass
        time.sleep(0.2)
    server.stop()
    raise RuntimeError("the Chroma server did not answer its heartbeat within 60 s")


def call(
    server: Server,
    method: str,
    path: str,
    token: str | None,
    body: Any = None,
    timeout: float = CALL_SECONDS,
    header: str = "Authorization",
) -> tuple[int, Any]:
    """One request with a deadline: (HTTP status, the JSON body or its text)."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(server.url + path, data=data, method=method)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    if token is not None:
        req.add_header(header, f"Bearer {token}" if header == "Authorization" else token)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            status, raw = resp.status, resp.read()
    except urllib.error.HTTPError as e:
        status, raw = e.code, e.read()
    try:
        return status, json.loads(raw) if raw else None
    except ValueError:
        return status, raw.decode("utf-8", "replace")
