"""``kbconform new-adapter``: a working skeleton of an adapter for the tenant-namespace profile.

The skeleton is four files: the adapter module (an adapter and a backend class, every facade
with its docstring and raising a not-implemented error that names it), its manifest (valid
adapter-manifest-v1, every optional capability declined with a reason), a pytest configuration
(``kbconform_adapter = NAME:factory``) and a GitHub Actions workflow running ``kbconform run``.
Existing files are never overwritten: every target is checked first, the files are written into
a temporary directory beside them, then each is linked into place (a link never replaces a
file); on any failure what was placed is removed again, so nothing is left half-written.

Standard library only.
"""

from __future__ import annotations

import contextlib
import errno
import importlib.util
import json
import keyword
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kbconform.cli._scaffold_templates import MODULE, PYTEST_INI, WORKFLOW

EXISTS = "KB_SCAFFOLD_EXISTS"
INVALID_NAME = "KB_SCAFFOLD_NAME_INVALID"
UNWRITABLE = "KB_SCAFFOLD_UNWRITABLE"

_NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")


class ScaffoldError(Exception):
    """A skeleton that cannot be written; nothing was written. ``code`` is stable."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(code, message)
        self.code, self.message = code, message

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


@dataclass(frozen=True, slots=True)
class Written:
    """One file of the skeleton: its path relative to the target directory, and what it is."""

    path: str
    what: str


def check_name(name: str) -> str:
    """``name`` if it can be the adapter's module name; else raise :class:`ScaffoldError`.

    A module name of lower-case ASCII letters, digits and underscores (at most 64), not a Python
    keyword, and not a module Python already finds (a standard library or installed module of
    that name would be shadowed by, or shadow, the adapter).
    """
    if not _NAME.fullmatch(name) or keyword.iskeyword(name):
        raise ScaffoldError(
            INVALID_NAME,
            "expected a Python module name for the adapter: lower-case ASCII letters, digits and "
            f"underscores, starting with a letter, at most 64 characters (e.g. qdrant_adapter); got {name!r}",
        )
    if name in sys.stdlib_module_names or name in sys.builtin_module_names or _found(name):
        raise ScaffoldError(
            INVALID_NAME,
            f"expected a name no standard or installed module has (one would shadow the other); got "
            f"{name!r}, which Python already imports from elsewhere: pick another, e.g. {name}_adapter",
        )
    return name


def _found(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return True


#: The placeholder's text for callers at once, until the author declares them.
CONCURRENCY_UNSAID = (
    'not declared yet: "threads" when it serves callers at once, as most servers do (schemas/concurrency.md)'
)


def skeleton_manifest(profile_name: str, adapter: str, backend: str) -> dict[str, Any]:
    """A new backend's manifest for the profile ``profile_name``: valid, every optional feature
    its branch of adapter-manifest-v1 names declined with a placeholder reason the author
    replaces (the profile's ``skeleton`` gives the reason, else the feature's description), and
    callers at once likewise (``{"serial": placeholder}``, until it says ``"threads"`` or why not);
    LookupError for a profile that is not registered or has no skeleton."""
    from kbconform.contract import manifest_branch
    from kbconform.profiles import PLACEHOLDER, profile

    skeleton = json.loads(json.dumps(profile(profile_name).skeleton))
    if not skeleton:
        raise LookupError(f"the profile {profile_name} gives no manifest skeleton")
    branch = manifest_branch(profile_name) or {}
    named = branch.get("features", {}).get("properties", {})
    given = skeleton.get("features", {})
    skeleton["features"] = {
        feature: PLACEHOLDER
        + (given.get(feature) or f"not offered yet ({named[feature].get('description', feature)})")
        for feature in (*given, *(feature for feature in named if feature not in given))
    }
    if "concurrency" in branch and "concurrency" not in skeleton:
        skeleton["concurrency"] = {"serial": PLACEHOLDER + CONCURRENCY_UNSAID}
    return {
        "manifestVersion": "1",
        "adapter": {"name": adapter, "version": "0.1.0"},
        "backend": {"name": backend, "version": "unknown: set the backend's version"},
        **skeleton,
    }


def install_source(
    version: str, direct_url: str | None, checkout: Callable[[str], tuple[str, str] | None] | None = None
) -> tuple[str, str]:
    """How a CI job installs the kit that wrote the skeleton, and why: the exact commit of the
    repository it came from (PEP 610's ``direct_url.json`` of a VCS install, or the origin and
    commit of the local git checkout it was installed from, as ``checkout`` reads them), else the
    release from a package index. A kit from a local path with no reachable origin gives no
    source: the workflow then stops at its install step, saying which variable to set."""
    release = (f"kbconform=={version}", "the release this skeleton was written with, from a package index")
    if direct_url is None:
        return release
    try:
        origin = json.loads(direct_url)
    except ValueError:
        return release
    url, vcs = origin.get("url"), origin.get("vcs_info") or {}
    if isinstance(url, str) and vcs.get("vcs") == "git" and isinstance(vcs.get("commit_id"), str):
        return f"kbconform @ git+{url}@{vcs['commit_id']}", "the commit this skeleton was written with"
    if isinstance(url, str) and url.startswith(("https://", "http://")):
        return f"kbconform @ {url}", "the archive this skeleton was written with"
    local = url if isinstance(url, str) else "a local path"
    found = (checkout or _checkout)(local) if local.startswith("file://") else None
    if found is not None:
        remote, commit = found
        return (
            f"kbconform @ git+{remote}@{commit}",
            f"the commit of the checkout this skeleton was written with ({local}): push it, or set "
            "the repository variable KBCONFORM_INSTALL",
        )
    return (
        "",
        f"this skeleton was written by a kit installed from {local}, which CI cannot reach: set the "
        "repository variable KBCONFORM_INSTALL to a git URL (kbconform @ git+https://...@COMMIT), a "
        "wheel in your repository, or a package index's release",
    )


def _checkout(url: str) -> tuple[str, str] | None:
    """The origin (an https or ssh URL pip can clone) and HEAD commit of the git checkout at the
    ``file://`` URL ``url``, or None (no git, no checkout, no such origin; a deadline each)."""
    from urllib.parse import unquote, urlparse

    where = unquote(urlparse(url).path)

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(
                ["git", "-C", where, *args], capture_output=True, text=True, timeout=10, check=False
            )
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    remote, commit = git("remote", "get-url", "origin"), git("rev-parse", "HEAD")
    if not remote or not commit or not re.fullmatch(r"[0-9a-f]{40}", commit):
        return None
    scp = re.fullmatch(r"([\w.-]+@[\w.-]+):(?!//)(.+)", remote)
    if scp:  # git@host:owner/name, which pip reads only as ssh://git@host/owner/name
        remote = f"ssh://{scp.group(1)}/{scp.group(2)}"
    return (remote, commit) if remote.startswith(("https://", "ssh://")) else None


def _direct_url() -> str | None:
    """The installed kit's PEP 610 ``direct_url.json``, or None (installed from an index)."""
    from importlib import metadata

    try:
        return metadata.distribution("kbconform").read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        return None


def files(name: str, version: str, profile_name: str | None = None) -> dict[str, str]:
    """The skeleton of the adapter ``name`` for the isolation profile ``profile_name``: relative
    path -> text."""
    base = name.removesuffix("_adapter") or name
    camel = "".join(part.capitalize() for part in base.split("_") if part) or "My"
    install, why = install_source(version, _direct_url())
    fill = {
        "@module@": name,
        "@Camel@": camel,
        "@version@": version,
        "@spec@": f"{name}:factory",
        "@install@": install,
        "@install_why@": why,
    }

    def render(template: str) -> str:
        for token, value in fill.items():
            template = template.replace(token, value)
        return template

    from kbconform.profiles import DEFAULT

    profile_name = profile_name or DEFAULT
    manifest = skeleton_manifest(profile_name, name.replace("_", "-"), base.replace("_", "-"))
    # the default profile's skeleton is the adapter guide's, written out by hand; another
    # profile's is written from its own protocol
    return {
        f"{name}.py": render(MODULE if profile_name == DEFAULT else _protocol_module(profile_name, manifest)),
        f"{name}.manifest.json": json.dumps(manifest, indent=2) + "\n",
        "pytest.ini": render(PYTEST_INI),
        ".github/workflows/kbconform.yml": render(WORKFLOW),
    }


_WHAT = {
    ".py": "the adapter and the backend: implement each facade",
    ".manifest.json": "what the backend declares: every optional capability declined",
    "pytest.ini": "pytest --kbconform-adapter set to the factory",
    "kbconform.yml": "the CI gate (GitHub Actions): kbconform run, JUnit XML, step summary",
}


def _protocol_module(profile_name: str, manifest: dict[str, Any]) -> str:
    """The adapter module of a profile other than tenant-namespace, from its backend protocol."""
    from kbconform.adapter import Manifest
    from kbconform.cli import _scaffold_protocol
    from kbconform.profiles import profile

    protocol = _scaffold_protocol.backend_protocol(profile_name, Manifest.declared(manifest))
    rule = profile(profile_name).rule or f"{profile_name}.md"
    return _scaffold_protocol.module(profile_name, protocol, rule.partition("#")[0])


def write(name: str, directory: str | Path, version: str, profile_name: str | None = None) -> list[Written]:
    """Write the skeleton of ``name`` into ``directory`` (made if missing); return what was written.

    Raises :class:`ScaffoldError` when the name is not usable, any of the files exists already
    (nothing is written), or the directory cannot be written.
    """
    check_name(name)
    return place(files(name, version, profile_name), Path(directory), _WHAT)


def place(texts: dict[str, str], target: Path, what: dict[str, str]) -> list[Written]:
    """Write ``texts`` (relative path -> text) into ``target`` (made if missing), all or none;
    each written file described by the ``what`` entry its path ends with. Raises
    :class:`ScaffoldError` when one of the files exists already (nothing is written) or the
    directory cannot be written."""
    existing = [path for path in texts if (target / path).exists() or (target / path).is_symlink()]
    if existing:
        raise ScaffoldError(
            EXISTS,
            f"expected none of the skeleton's files in {str(target)!r}; found {', '.join(existing)}. "
            "Nothing was written: remove them, or give another --dir",
        )
    try:
        target.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".kbconform-new-", dir=target))
    except OSError as error:
        reason = error.strerror or error
        raise ScaffoldError(UNWRITABLE, f"cannot write into {str(target)!r}: {reason}") from None
    placed: list[Path] = []
    made: list[Path] = []
    try:
        for path, text in texts.items():
            staged = staging / path
            staged.parent.mkdir(parents=True, exist_ok=True)
            staged.write_text(text, encoding="utf-8")
        for path in texts:
            final = target / path
            for parent in reversed(final.relative_to(target).parents[:-1]):
                if not (target / parent).is_dir():
                    (target / parent).mkdir()
                    made.append(target / parent)
            _place(staging / path, final)
            placed.append(final)
    except OSError as error:
        for final in placed:
            with contextlib.suppress(OSError):
                final.unlink()
        for folder in reversed(made):
            with contextlib.suppress(OSError):
                folder.rmdir()
        code = EXISTS if isinstance(error, FileExistsError) else UNWRITABLE
        where, reason = error.filename or str(target), error.strerror or error
        raise ScaffoldError(code, f"cannot write {where!r}: {reason}; nothing was written") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return [Written(path, next(w for end, w in what.items() if path.endswith(end))) for path in texts]


def _place(staged: Path, final: Path) -> None:
    """Put ``staged`` at ``final``, never replacing a file there (FileExistsError instead)."""
    try:
        os.link(staged, final)
    except FileExistsError:
        raise
    except OSError as error:  # a file system without hard links: an exclusive create, then copy
        if error.errno not in (errno.EPERM, errno.ENOTSUP, errno.EXDEV, errno.EMLINK):
            raise
        with final.open("xb") as file:
            file.write(staged.read_bytes())
