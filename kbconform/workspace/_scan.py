"""Turn a workspace into parsed-chunk-v1 records, deterministically.

1. Walk the workspace in sorted order. Only regular files are read: symbolic links are not
   followed, so a workspace cannot pull in files from outside itself, and FIFOs, sockets and
   devices are never opened (reading one could block forever); ``.git`` directories are not
   entered.
2. Each file belongs to the first source, in registry order, whose paths own it.
3. Source by source (registry order), file by file (sorted by path), the source's parser turns
   the file (UTF-8, line endings normalized to ``\\n``, a leading byte-order mark dropped) into
   chunks, and each chunk becomes a record stamped with the client's claimed identity. A file
   larger than the configuration's ``max_file_bytes`` (16 MiB by default) is refused unread.
4. Every record is validated against parsed-chunk-v1. Chunks with identical hash inputs are one
   chunk (same id in every namespace): the first is kept.

Any failure (undecodable file, a parser error, an invalid record) raises
:class:`ContractViolation` with contract ``workspace`` naming the file; nothing is skipped.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from wcmatch import glob

from kbconform.contract import IDENTITY_RULES, load, validate
from kbconform.errors import ContractViolation, Problem
from kbconform.identity import legacy_id
from kbconform.registry import Chunk, Paths
from kbconform.workspace._config import MAX_FILE_BYTES, Config

_SCHEMA_VERSION = "1.0.0"
_CONTRACT = "workspace"


def _error(pointer: str, keyword: str, expected: str, got: str) -> ContractViolation:
    return ContractViolation(contract=_CONTRACT, problems=(Problem(pointer, keyword, expected, got),))


def _regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(path.lstat().st_mode)
    except OSError:  # gone since the directory was listed
        return False


def walk(root: Path) -> Iterator[str]:
    """Every regular file under ``root`` as a '/'-separated relative path, in sorted order.

    Symbolic links, FIFOs, sockets and devices are left out.
    """
    for directory, subdirectories, files in os.walk(root):
        here = Path(directory)
        subdirectories[:] = sorted(
            name for name in subdirectories if name != ".git" and not (here / name).is_symlink()
        )
        relative = here.relative_to(root).as_posix()
        for name in sorted(files):
            if _regular(here / name):
                yield name if relative == "." else f"{relative}/{name}"


def _matcher(paths: Paths) -> glob.WcMatcher[str]:
    return glob.compile(list(paths.include), flags=glob.GLOBSTAR, exclude=list(paths.exclude) or None)


def assign(files: list[str], config: Config) -> dict[str, list[str]]:
    """The files each source owns: a file goes to the first source (registry order) that matches."""
    matchers = {name: _matcher(config.paths[name]) for name in config.registry.source_names()}
    owned: dict[str, list[str]] = {name: [] for name in matchers}
    for path in files:
        for name, matcher in matchers.items():
            if matcher.match(path):
                owned[name].append(path)
                break
    return owned


def _check_identity(identity: Mapping[str, str]) -> None:
    definitions = load("identity-tuple-v1")["$defs"]
    for key, value in identity.items():
        definition = definitions[key]
        valid = value in definition["enum"] if "enum" in definition else _passes(key, value)
        if not valid:
            raise _error(f"/{key}", key, definition["description"], repr(value))


def _passes(key: str, value: str) -> bool:
    try:
        IDENTITY_RULES[key](value)
    except ValueError:
        return False
    return True


def _read(root: Path, path: str, limit: int) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes, never following a link or blocking."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0)
    try:
        descriptor = os.open(root / path, flags)
    except OSError as error:
        raise _error(path, "file", "a readable regular file", error.strerror or str(error)) from None
    with os.fdopen(descriptor, "rb") as file:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode):  # replaced since the walk
            raise _error(path, "file", "a regular file", "something else")
        data = file.read(limit + 1) if status.st_size <= limit else b""
    if status.st_size > limit or len(data) > limit:
        raise _error(
            path, "size", f"a file of at most {limit} bytes (max_file_bytes)", f"{status.st_size} bytes"
        )
    return data


def _decode(root: Path, path: str, limit: int = MAX_FILE_BYTES) -> str:
    data = _read(root, path, limit)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise _error(path, "encoding", "a UTF-8 text file", f"{error.reason} at byte {error.start}") from None
    return text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")


def _record(chunk: Chunk, path: str, parser: Any, identity: Mapping[str, str]) -> dict[str, Any]:
    record: dict[str, Any] = {
        "schemaVersion": _SCHEMA_VERSION,
        **identity,
        "sourcePath": path,
        "parserId": parser.parser_id,
        "parserVersion": parser.version,
        "kind": chunk.kind,
        "name": chunk.name,
        "content": chunk.content,
        "hashInputs": list(chunk.hash_inputs),
    }
    optional = {
        "line_start": chunk.line_start,
        "line_end": chunk.line_end,
        "className": chunk.class_name,
        "extends": chunk.extends,
        "customMeta": dict(chunk.custom_meta) if chunk.custom_meta is not None else None,
    }
    record.update({key: value for key, value in optional.items() if value is not None})
    return record


def scan(
    root: str | Path,
    config: Config | None = None,
    *,
    tenant_id: str,
    repo_slug: str,
    root_kind: str = "bare-repo",
) -> list[dict[str, Any]]:
    """The parsed-chunk-v1 records of the workspace at ``root``, claiming ``(tenant_id, repo_slug)``."""
    config = config or Config.default()
    root = Path(root)
    if not root.is_dir():
        raise _error("", "workspace", "a directory", str(root))
    identity = {"tenantId": tenant_id, "repoSlug": repo_slug, "rootKind": root_kind}
    _check_identity(identity)
    records: list[dict[str, Any]] = []
    seen: set[str] = set()
    for name, paths in assign(list(walk(root)), config).items():
        parser = config.registry.parsers[config.registry.sources[name].parser_id]
        for path in paths:
            for index, chunk in enumerate(parser.parse(path, _decode(root, path, config.max_file_bytes))):
                if not isinstance(chunk, Chunk):
                    raise _error(
                        f"{path}#{index}", "protocol", "a kbconform.registry.Chunk", type(chunk).__name__
                    )
                record = _record(chunk, path, parser, identity)
                try:
                    validate(record, "parsed-chunk-v1")
                    key = legacy_id(record)  # hashInputs naming reserved or missing fields fail here
                except ContractViolation as error:
                    raise ContractViolation(
                        contract=_CONTRACT,
                        problems=tuple(
                            Problem(f"{path}#{index}{p.pointer}", p.keyword, p.expected, p.got)
                            for p in error.problems
                        ),
                    ) from None
                if key not in seen:
                    seen.add(key)
                    records.append(record)
    return records
