"""The capability manifest (adapter-manifest-v1), and loading an adapter from ``module:factory``."""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kbconform import _capabilities
from kbconform._capabilities import Capability, Feature
from kbconform.adapter._protocol import Adapter, SpoofMode
from kbconform.contract import validate
from kbconform.errors import ContractViolation, Problem
from kbconform.profiles import profile, profile_of


@dataclass(frozen=True, slots=True)
class Manifest:
    """A validated adapter-manifest-v1 declaration. ``raw`` is the declaration as given."""

    raw: Mapping[str, Any]

    @classmethod
    def from_mapping(cls, data: object) -> Manifest:
        """Validate ``data`` as its isolation profile's manifest (``Profile.check_manifest``);
        raise ContractViolation listing every problem. A profile nobody registered is checked
        against adapter-manifest-v1, which names the profiles it knows."""
        try:
            declared = profile(profile_of(data)) if isinstance(data, Mapping) else None
        except LookupError:
            declared = None
        if declared is None:
            check_schema(data)
        else:
            declared.check_manifest(data)
        assert isinstance(data, Mapping)
        return cls(data)

    @classmethod
    def declared(cls, data: object) -> Manifest:
        """The manifest an adapter declares: :meth:`from_mapping`, its ContractViolation
        re-coded ``KB_ADAPTER_INVALID`` (the adapter's fault, listing every problem)."""
        try:
            return cls.from_mapping(data)
        except ContractViolation as error:
            raise ContractViolation(
                contract="adapter-manifest-v1", problems=error.problems, code="KB_ADAPTER_INVALID"
            ) from None

    @property
    def profile(self) -> str:
        """The isolation profile: ``tenant-namespace`` (the default), or another registered one."""
        return profile_of(self.raw)

    @property
    def stores(self) -> tuple[str, ...]:
        """The ids of the stores a kb-grant backend binds knowledge bases to, in the manifest's order."""
        return tuple(str(store["id"]) for store in self.raw.get("stores", ()))

    @property
    def engines(self) -> dict[str, str]:
        """Each kb-grant store's engine (informative), by store id."""
        return {str(store["id"]): str(store["engine"]) for store in self.raw.get("stores", ())}

    @property
    def models(self) -> dict[str, int]:
        """Each kb-grant embedding model's dimension, by name, in the manifest's order."""
        return {str(model["name"]): int(model["dimension"]) for model in self.raw.get("models", ())}

    @property
    def max_fan_out(self) -> int:
        """How many store groups a kb-grant search asks at once (``maxFanOut``)."""
        return int(self.raw["maxFanOut"])

    @property
    def group_deadline(self) -> float:
        """The deadline of each store group of a kb-grant search, in seconds (``groupDeadlineSeconds``)."""
        return float(self.raw["groupDeadlineSeconds"])

    @property
    def read_facades(self) -> tuple[str, ...]:
        return tuple(self.raw["readFacades"])

    @property
    def spoof_modes(self) -> tuple[SpoofMode, ...]:
        return tuple(self.raw.get("spoofModes", ()))

    @property
    def shared_namespace(self) -> str | None:
        value = self.raw.get("sharedNamespace")
        return str(value) if value is not None else None

    @property
    def shared_for_all(self) -> bool:
        """Whether the backend's design makes the shared namespace readable by every principal
        (``"sharedNamespaceReaders": "every-tenant"``), rather than by those granted it."""
        return self.shared_namespace is not None and self.raw.get("sharedNamespaceReaders") == "every-tenant"

    @property
    def max_write_batch(self) -> int | None:
        """The most records one ingest or sync may carry (``maxWriteBatch``), or None: no limit."""
        value = self.raw.get("maxWriteBatch")
        return int(value) if value is not None else None

    @property
    def page_sizes(self) -> tuple[int, ...] | None:
        """The sizes at which the backend pages the work of one call (``pageSizes``), or None:
        undeclared."""
        value = self.raw.get("pageSizes")
        return tuple(sorted(int(size) for size in value)) if value is not None else None

    @property
    def id_profile(self) -> str | None:
        value = self.raw.get("idProfile")
        return str(value) if value is not None else None

    @property
    def versions(self) -> dict[str, str]:
        """``{"adapter": "name version", "backend": "name version"}``."""
        return {key: f"{self.raw[key]['name']} {self.raw[key]['version']}" for key in ("adapter", "backend")}

    def supports(self, capability: Capability) -> bool:
        """Whether the capability is offered."""
        return self.declines(capability) is None

    def declines(self, capability: Capability) -> str | None:
        """Why the manifest does not offer ``capability``, or None when it does.

        A feature is declined by a reason string in ``features``; the shared namespace and the
        id profile by ``null``; a spoof mode by leaving it out of ``spoofModes``
        (:func:`kbconform._capabilities.declines`, the rule the suites and reports use).
        """
        return _capabilities.declines(self.raw, capability)

    def feature(self, feature: Feature) -> Any:
        """A supported feature's parameters (``True`` for a plain flag)."""
        return self.raw["features"][feature]


def check_schema(data: object) -> None:
    """``data`` is valid by adapter-manifest-v1 (the built-in profiles' manifests), or
    ContractViolation listing every problem."""
    validate(data, "adapter-manifest-v1")


def _adapter_error(keyword: str, expected: str, got: str) -> ContractViolation:
    return ContractViolation(
        contract="adapter", problems=(Problem("", keyword, expected, got),), code="KB_ADAPTER_INVALID"
    )


#: The environment variable naming the directory an adapter module is looked for in first;
#: ``kbconform run`` sets it to the directory it was started in for the processes it starts
#: elsewhere. Unset: the current directory (as ``python -m pytest`` finds a module there).
ADAPTER_DIR = "KBCONFORM_ADAPTER_DIR"


def adapter_directory() -> Path:
    """Where :func:`load_adapter` looks for an adapter module before ``sys.path``."""
    return Path(os.environ.get(ADAPTER_DIR) or Path.cwd())


def load_adapter(spec: str) -> tuple[Adapter, Manifest]:
    """Import ``module:factory``, call the factory, and check the adapter and its manifest.

    Raises :class:`~kbconform.errors.ContractViolation` (code ``KB_ADAPTER_INVALID``) naming
    what was expected: a ``module:factory`` spec, an importable module, a callable factory, an
    object with every :class:`Adapter` member, a valid manifest, and every optional facade the
    manifest declares.
    """
    module_name, sep, attribute = spec.partition(":")
    if not sep or not module_name or not attribute:
        raise _adapter_error("spec", "'module:factory', e.g. 'my_backend.conformance:adapter'", repr(spec))
    here = str(adapter_directory())
    if here not in sys.path:  # the same lookup for kbconform run, kbconform serve and pytest
        sys.path.insert(0, here)
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        expected = (
            f"an importable module {module_name!r}, looked for in {here} and then sys.path (hint: run "
            "from the directory holding it, or add its directory to PYTHONPATH; a module of a "
            "package needs the package installed, e.g. pip install -e . in its project)"
        )
        raise _adapter_error("import", expected, repr(error)) from None
    factory: Any = module
    for part in attribute.split("."):
        factory = getattr(factory, part, None)
    if not callable(factory):
        raise _adapter_error("factory", f"a callable {attribute!r} in {module_name}", repr(factory))
    try:
        adapter = factory()
    except Exception as error:
        raise _adapter_error("factory", f"{spec} to return an adapter", repr(error)) from error
    if not isinstance(adapter, Adapter):
        missing = [m for m in ("manifest", "open", "close", "shutdown") if not hasattr(adapter, m)]
        raise _adapter_error(
            "protocol",
            "an object with manifest, open, close and shutdown (kbconform.adapter.Adapter)",
            f"{type(adapter).__name__} without {', '.join(missing)}",
        )
    return adapter, Manifest.declared(adapter.manifest)


def check_backend(backend: object, manifest: Manifest) -> None:
    """Raise ContractViolation unless ``backend`` has every facade its profile and manifest
    require (``Profile.facades``)."""
    declared = profile(manifest.profile)
    expected = declared.facades(manifest)
    missing = [name for name, kind in expected if not isinstance(backend, kind)]
    if missing:
        raise _adapter_error(
            "protocol",
            "a backend with every facade the protocol and the manifest require",
            f"{type(backend).__name__} lacking: {', '.join(missing)}",
        )
