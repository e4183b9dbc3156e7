"""A report read strictly, and any output file written whole or not at all."""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import tempfile
from pathlib import Path
from typing import IO, Any

from kbconform.errors import ContractViolation, Problem

#: The largest report ``read`` accepts, in bytes (a full run's report is well under 1 MiB).
MAX_REPORT_BYTES = 64 * 1024 * 1024


def read(source: str | Path | IO[bytes]) -> Any:
    """The JSON value of a report (a path, or a binary stream), read strictly: duplicate keys,
    NaN, lone surrogates, over-long integers and deep nesting are refused, and never more than
    :data:`MAX_REPORT_BYTES` is read. Raises ContractViolation (``KB_REPORT_INVALID``); an
    unreadable path raises OSError."""
    from kbconform.contract import loads

    if isinstance(source, (str, Path)):
        with Path(source).open("rb") as stream:
            data = stream.read(MAX_REPORT_BYTES + 1)
    else:
        data = source.read(MAX_REPORT_BYTES + 1)

    def refuse(problem: Problem) -> ContractViolation:
        return ContractViolation(contract="report-v1", problems=(problem,), code="KB_REPORT_INVALID")

    if len(data) > MAX_REPORT_BYTES:
        raise refuse(Problem("", "size", f"a report of at most {MAX_REPORT_BYTES} bytes", "more"))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise refuse(Problem("", "encoding", "UTF-8 text", f"byte {data[error.start]:#04x}")) from None
    try:
        return loads(text)
    except ContractViolation as error:
        raise ContractViolation(
            contract="report-v1", problems=error.problems, code="KB_REPORT_INVALID"
        ) from None


def unwritable(path: str | Path) -> str | None:
    """Why an output file cannot be written at ``path`` (checked before any work), or None.

    Refused: a directory, a path whose directory does not exist, and a directory in which no
    file may be created (permissions, a read-only file system). A symbolic link is judged by
    where it points, as :func:`write` writes there.
    """
    target = Path(os.path.realpath(path))
    if target.is_dir():
        return f"cannot write {str(path)!r}: it is a directory"
    if not target.parent.is_dir():
        return f"cannot write {str(path)!r}: directory {str(target.parent)!r} does not exist"
    try:
        with tempfile.TemporaryFile(dir=target.parent):
            pass
    except OSError as error:
        return f"cannot write {str(path)!r}: {error.strerror or error}"
    return None


def write(path: str | Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` whole or not at all: a reader never sees half a file.

    The text goes to a new temporary file beside the target, reaches the disk (fsync), then is
    renamed over the target. A symbolic link is followed: the file it points to is replaced
    (beside itself) and the link stays. On any failure the temporary file is removed, the
    target is left as it was, and an :class:`OSError` naming ``path`` is raised (the subclass
    says why: ``IsADirectoryError``, ``FileNotFoundError``, ``PermissionError``, ...).
    """
    data = text.encode("utf-8")
    target = Path(os.path.realpath(path))
    if target.is_dir():
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
    partial = target.with_name(f".{target.name}.{secrets.token_hex(4)}.partial")
    try:
        mode = target.stat().st_mode & 0o7777 if target.exists() else None
        descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except OSError as error:
        raise OSError(error.errno, error.strerror, str(path)) from None
    try:
        with os.fdopen(descriptor, "wb") as file:
            if mode is not None:
                os.fchmod(descriptor, mode)  # replacing a file keeps its permissions
            file.write(data)
            file.flush()
            os.fsync(descriptor)
        partial.replace(target)
    except BaseException as error:
        with contextlib.suppress(OSError):
            partial.unlink()
        if isinstance(error, OSError):
            raise OSError(error.errno, error.strerror, str(path)) from None
        raise
    with contextlib.suppress(OSError):  # the rename itself survives a crash once its directory is synced
        directory = os.open(target.parent, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)
