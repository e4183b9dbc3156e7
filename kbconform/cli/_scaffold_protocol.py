"""``kbconform new-adapter --isolation-profile P`` for a profile other than tenant-namespace: the
adapter module written from the profile's own backend protocol, so every profile, a plug-in's
included, gets a skeleton that matches what its suites call.

The backend class has each method of the protocol, with the protocol's own signature and
docstring, raising a not-implemented error that names it; the names its signatures use are
imported from where the protocol module has them.
"""

from __future__ import annotations

import inspect
import re
import textwrap
from typing import Any

HEADER = '''\
"""@module@: a kbconform adapter (@profile@ profile), written by `kbconform new-adapter`.

Fill in the backend's methods one at a time, and after each run the suites from this directory:

    kbconform run --adapter @spec@

A method not implemented yet raises NotImplementedError saying so: the tests that call it end
there at once, and the run prints one line for each. Each docstring below is the protocol's own
(@protocol@); the rules are the profile's spec (@rule@). What the backend offers is declared in
@module@.manifest.json: every optional feature starts declined with a placeholder reason, which
the run names until you offer the feature or give the real reason. Check the types with

    mypy --strict @module@.py
"""

from __future__ import annotations

import json
@imports@

MANIFEST = Path(__file__).with_name("@module@.manifest.json")


def _not_implemented(method: str) -> NotImplementedError:
    """The error of a method not implemented yet: every test that calls it ends there, and the
    run counts them by method."""
    return NotImplementedError(f"{method} in @module@.py: see its docstring")


class @Camel@Backend:
    """One fresh, empty backend (@protocol_name@)."""

    def __init__(self, options: BackendOptions) -> None:
        #: options.store_fails: the suites' store-fault switch (feature fault-injection), or None
        self.options = options
@methods@

class @Camel@Adapter:
    """Declares the manifest and opens fresh, empty backends."""

    def __init__(self) -> None:
        self.manifest: Mapping[str, Any] = json.loads(MANIFEST.read_text(encoding="utf-8"))

    def open(self, options: BackendOptions, /) -> @protocol_name@:
        """A new backend holding nothing, independent of every other one opened (typed as the
        protocol, so mypy checks the backend class against it)."""
        return @Camel@Backend(options)

    def close(self, backend: Any, /) -> None:
        """Release what open took (once per backend)."""
        assert isinstance(backend, @Camel@Backend)

    def shutdown(self) -> None:
        """Release what the adapter holds (servers, clients); called once, after the run."""


def factory() -> @Camel@Adapter:
    """The factory: kbconform run --adapter @spec@."""
    return @Camel@Adapter()
'''


def _method(source: str, name: str) -> str:
    """A protocol method's source as a skeleton's: its signature and docstring, its body a
    not-implemented error naming it."""
    lines = textwrap.dedent(source).splitlines()
    kept = [line for line in lines if not line.lstrip().startswith("@")]
    text = "\n".join(kept).rstrip()
    if text.endswith("..."):
        text = text[: -len("...")].rstrip()
    body = f'raise _not_implemented("{name}")'
    if text.endswith(":"):  # a one-line ``def f(...) -> T: ...``
        return f"{text}\n    {body}\n"
    return f"{text}\n    {body}\n"


def _names(protocol: type) -> dict[str, str]:
    """Each name the protocol's signatures use, with the module to import it from."""
    module = inspect.getmodule(protocol)
    used: dict[str, str] = {}
    for name, member in vars(protocol).items():
        if not callable(member) or name.startswith("_"):
            continue
        signature = inspect.getsource(member).split('"""', 1)[0]
        for token in re.findall(r"\b[A-Za-z_]\w*\b", signature):
            found = getattr(module, token, None)
            home = getattr(found, "__module__", None)
            if token in {"Any", "Protocol"} or (home and home != "builtins" and inspect.isclass(found)):
                used[token] = "typing" if token == "Any" else str(home)
    used.setdefault("Any", "typing")
    used.setdefault("Mapping", "collections.abc")
    used["Path"] = "pathlib"
    used["BackendOptions"] = "kbconform.adapter"
    used[protocol.__qualname__] = protocol.__module__
    return used


def _imports(used: dict[str, str]) -> str:
    """The from-imports of ``used``: the standard library's, then the kit's, each group sorted."""
    homes: dict[str, list[str]] = {}
    for name, home in used.items():
        homes.setdefault(home, []).append(name)
    lines = {home: f"from {home} import {', '.join(sorted(names))}" for home, names in homes.items()}
    standard = [lines[home] for home in sorted(lines) if not home.startswith("kbconform")]
    kit = [lines[home] for home in sorted(lines) if home.startswith("kbconform")]
    return "\n".join(standard) + "\n\n" + "\n".join(kit)


def module(profile_name: str, protocol: type, rule: str) -> str:
    """The adapter module's template for ``profile_name``, from its backend ``protocol``: the
    ``@module@``, ``@Camel@`` and ``@spec@`` tokens left for the scaffold to fill."""
    members = [
        (name, member)
        for name, member in vars(protocol).items()
        if callable(member) and not name.startswith("_")
    ]
    # a method named list would shadow the builtin in the class body for the ones after it
    members.sort(key=lambda item: item[0] == "list")
    methods = "\n".join(
        textwrap.indent(_method(inspect.getsource(member), name), "    ") for name, member in members
    )
    fill = {
        "@profile@": profile_name,
        "@protocol@": f"{protocol.__module__}.{protocol.__qualname__}",
        "@protocol_name@": protocol.__qualname__,
        "@rule@": f"schemas/{rule}",
        "@imports@": _imports(_names(protocol)),
        "@methods@": "\n" + methods,
    }
    text = HEADER
    for token, value in fill.items():
        text = text.replace(token, value)
    return text


def backend_protocol(profile_name: str, manifest: Any) -> type:
    """The backend protocol a profile's suites call, the first of its facades."""
    from kbconform.profiles import profile

    return profile(profile_name).facades(manifest)[0][1]  # type: ignore[no-any-return]
