"""The isolation-profile registry: every profile reached through it, and a plug-in profile
registered by an installed package."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kbconform import profiles
from kbconform.adapter import Manifest
from kbconform.harness import WireTable

KIT = Path(profiles.__file__).parent.parent


def _name_comparisons(source: str, names: tuple[str, ...]) -> list[int]:
    """The lines of ``source`` that compare something with one of ``names`` (``==``, ``!=``,
    ``in``, ``not in``), the shape of an ``if profile == ...`` branch."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            for operand in operands:
                values = operand.elts if isinstance(operand, ast.Tuple | ast.List | ast.Set) else [operand]
                if any(isinstance(v, ast.Constant) and v.value in names for v in values):
                    found.append(node.lineno)
    return found


def test_no_kit_module_outside_the_registry_compares_a_profile_name() -> None:
    """Per-profile behaviour is reached through ``kbconform.profiles``: no module of the kit
    outside it branches on a profile's name (control: the check finds such a branch)."""
    names = profiles.names()
    control = 'if manifest.profile == "kb-grant":\n    pass\nok = p in ("project-pool",)\n'
    assert _name_comparisons(control, names) == [1, 3]
    branches = {
        str(path.relative_to(KIT)): lines
        for path in sorted(KIT.rglob("*.py"))
        if "profiles" not in path.relative_to(KIT).parts
        for lines in [_name_comparisons(path.read_text(encoding="utf-8"), names)]
        if lines
    }
    assert branches == {}


@pytest.mark.parametrize("name", list(profiles.built_in()))
def test_every_built_in_profile_loads_each_part_of_its_implementation(name: str) -> None:
    """A built-in profile's implementation has every part: its skeleton manifest is valid by
    its check and gives its isolation and facades, its wire table answers exactly its
    operations, its suite folder exists and its catalogue entries are its own, the shared
    suite's among them."""
    declared = profiles.profile(name)
    assert isinstance(declared.parts(), profiles.Implementation)
    skeleton = {
        "manifestVersion": "1",
        "adapter": {"name": "a", "version": "0"},
        "backend": {"name": "b", "version": "0"},
        **declared.skeleton,
    }
    declared.check_manifest(skeleton)
    manifest = Manifest.from_mapping(skeleton)
    assert hasattr(declared.isolation(manifest), "seed")
    assert [kind for _, kind in declared.facades(manifest)]
    assert isinstance(declared.wire, WireTable)
    assert set(declared.wire.handlers) == set(declared.operations)
    assert set(declared.facade_ids) <= {"search", "get", "list", "query", "count", "ask"}
    assert sorted(declared.suites_dir().glob("test_*.py"))
    entries = declared.entries()
    assert {entry.get("profile", profiles.DEFAULT) for entry in entries} == {name}
    assert {"isolation"} < {entry["suite"] for entry in entries}


@pytest.mark.parametrize("name", list(profiles.built_in()))
def test_the_earlier_named_parts_still_load(name: str) -> None:
    """``Profile.load`` of a part, as callers wrote it before the typed accessors, gives the
    part; a built-in profile names no catalogue beside the shipped one (a plug-in's is its
    entries)."""
    declared = profiles.profile(name)
    assert declared.load(declared.wire) is declared.wire
    assert declared.load(declared.check_manifest) == declared.check_manifest
    assert declared.catalogue is None
    assert declared.load("kbconform.profiles:DEFAULT") == profiles.DEFAULT


def test_the_registry_imports_no_profile_and_no_profile_imports_its_private_module() -> None:
    """Every profile registers the same way (a ``module:attribute`` the registry loads): the
    registry imports no profile's package, and each built-in profile imports the registry's
    public names only, as a plug-in does (no import circle)."""
    registry = (KIT / "profiles" / "_registry.py").read_text(encoding="utf-8")
    assert "import kbconform.profiles." not in registry
    assert "from kbconform.profiles." not in registry
    for name in profiles.built_in():
        init = KIT / "profiles" / name.replace("-", "_") / "__init__.py"
        source = init.read_text(encoding="utf-8")
        assert re.search(r"^from kbconform\.profiles import .*\bProfile\b", source, re.MULTILINE), init
        assert "_registry" not in source, init


def _declared(module: Path) -> tuple[str, ...]:
    """A suite module's ``PROFILES``, read from its source."""
    for node in ast.parse(module.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["PROFILES"]:
            return tuple(ast.literal_eval(node.value))
    return ()


def suite_layout_problems(suites: Path, names: tuple[str, ...]) -> list[str]:
    """Where the shipped suites' folders and their modules' ``PROFILES`` disagree: a folder that
    is no built-in profile's, a module declaring other profiles than its folder's, a shared
    module (at the top) not written for every profile, a profile without its folder."""
    problems = []
    folders = {path.name for path in suites.iterdir() if path.is_dir() and path.name != "__pycache__"}
    for folder in sorted(folders - {name.replace("-", "_") for name in names}):
        problems.append(f"{folder}/ is no built-in profile's folder")
    for name in names:
        folder = suites / name.replace("-", "_")
        modules = sorted(folder.glob("test_*.py")) if folder.is_dir() else []
        if not modules:
            problems.append(f"{name} has no suite module in {folder.name}/")
        problems += [
            f"{folder.name}/{m.name} declares {_declared(m)}" for m in modules if _declared(m) != (name,)
        ]
    problems += [
        f"{m.name} declares {_declared(m)}"
        for m in sorted(suites.glob("test_*.py"))
        if _declared(m) != ("*",)
    ]
    return problems


def test_each_suite_module_is_in_the_folder_of_the_profile_it_declares(tmp_path: Path) -> None:
    from kbconform._resources import data_dir

    names = profiles.names()
    assert suite_layout_problems(data_dir("suites"), names) == []
    # control: a copy with a module moved to another profile's folder, a stray folder, a shared
    # module of one profile and one profile's folder emptied
    import shutil

    copy = tmp_path / "suites"
    shutil.copytree(data_dir("suites"), copy)
    (copy / "tenant_namespace" / "test_spoof.py").rename(copy / "project_pool" / "test_spoof.py")
    (copy / "vector_graph").mkdir()
    (copy / "test_lone.py").write_text('PROFILES = ("kb-grant",)\n', encoding="utf-8")
    for module in (copy / "kb_grant").glob("test_*.py"):
        module.unlink()
    assert suite_layout_problems(copy, names) == [
        "vector_graph/ is no built-in profile's folder",
        "project_pool/test_spoof.py declares ('tenant-namespace',)",
        "kb-grant has no suite module in kb_grant/",
        "test_lone.py declares ('kb-grant',)",
    ]


def test_a_wire_table_that_misses_an_operation_is_refused_by_the_dispatcher(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A profile whose wire table answers other operations than it declares cannot be served:
    the Dispatcher raises KB_ADAPTER_INVALID naming them (control: the real profile serves)."""
    import dataclasses

    from kbconform.adapter import Manifest
    from kbconform.errors import ContractViolation
    from kbconform.harness import Dispatcher, _server
    from kbconform_reference.adapter import memory

    adapter = memory()
    manifest = Manifest.declared(adapter.manifest)
    Dispatcher(adapter, manifest)
    declared = profiles.profile(manifest.profile)
    wider = dataclasses.replace(declared, operations=(*declared.operations, "reindex"))
    monkeypatch.setattr(_server, "profile", lambda name: wider)
    with pytest.raises(ContractViolation) as refused:
        Dispatcher(adapter, manifest)
    assert refused.value.code == "KB_ADAPTER_INVALID"
    assert "reindex" in str(refused.value)


def test_operations_are_each_one_profiles() -> None:
    """No harness-v1 operation belongs to two profiles: a request names its profile."""
    operations = [op for name in profiles.names() for op in profiles.profile(name).operations]
    assert len(operations) == len(set(operations))


def test_the_typed_capability_lists_are_the_registrys_and_the_schemas() -> None:
    """``kbconform.adapter.CAPABILITIES`` (a Literal, so a manifest's ``supports`` is typed) names
    exactly the built-in profiles' capabilities, and ``FEATURES`` exactly the optional features
    of the tenant-namespace branch of adapter-manifest-v1: one list cannot grow alone."""
    from kbconform.adapter import CAPABILITIES, FEATURES
    from kbconform.contract import load

    registered = {c for profile in profiles.built_in().values() for c in profile.capabilities}
    assert set(CAPABILITIES) == registered | set(profiles.SHARED_CAPABILITIES)
    branches = load("adapter-manifest-v1")["$defs"].values()
    [tenant] = [
        b
        for b in branches
        if b.get("properties", {}).get("isolationProfile", {}).get("const") == "tenant-namespace"
    ]
    assert set(FEATURES) == set(tenant["properties"]["features"]["properties"])
    assert set(FEATURES) < set(CAPABILITIES)


def test_an_unknown_profile_is_refused_naming_the_registered_ones() -> None:
    """Asking for a profile nobody registered is a LookupError that lists the known ones."""
    with pytest.raises(
        LookupError, match="tenant-namespace, project-pool, kb-grant, memory-scope, store-tenancy"
    ):
        profiles.profile("store-native")
    assert profiles.profile("kb-grant").name == "kb-grant"  # control


def test_a_capability_outside_the_manifests_profile_is_declined() -> None:
    """A kb-grant test's capability is declined for a tenant-namespace manifest, by the
    profile's own rule; within its profile it is decided by the manifest."""
    from kbconform._capabilities import declines

    tenant = {"features": {"fault-injection": True}}  # no isolationProfile: the default
    assert declines(tenant, "multi-store") == "not part of the tenant-namespace profile"
    assert declines(tenant, "fault-injection") is None


PLUGIN = """
from kbconform.profiles import Profile

PROFILE = Profile(
    name="store-native",
    capabilities=("fault-injection",),
    operations=("putThing",),
    implementation="store_native:IMPLEMENTATION",
)


class StoreNative:
    def check_manifest(self, data):
        if data.get("backendName") != "native":
            raise ValueError("not a store-native manifest")


IMPLEMENTATION = StoreNative()
"""


def test_an_installed_package_registers_its_profile_by_entry_point(tmp_path: Path) -> None:
    """A package naming a Profile in the entry-point group ``kbconform.profiles`` adds it to the
    registry, after the built-in ones, and its manifest is checked by its own rule; without
    the entry point it is unknown (control)."""
    (tmp_path / "store_native.py").write_text(PLUGIN, encoding="utf-8")
    info = tmp_path / "store_native-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: store-native\nVersion: 0.1\n")
    probe = textwrap.dedent(
        """
        import json
        from kbconform import profiles
        from kbconform.adapter import Manifest
        result = {"names": profiles.names()}
        try:
            Manifest.from_mapping({"isolationProfile": "store-native", "backendName": "native"})
            result["manifest"] = "valid"
        except Exception as error:
            result["manifest"] = type(error).__name__
        print(json.dumps(result))
        """
    )

    def run() -> dict[str, object]:
        env = {"PYTHONPATH": str(tmp_path), "PATH": ""}
        done = subprocess.run(
            [sys.executable, "-c", probe], capture_output=True, text=True, check=True, env=env, timeout=120
        )
        loaded: dict[str, object] = json.loads(done.stdout)
        return loaded

    unregistered = run()
    assert unregistered == {
        "names": ["tenant-namespace", "project-pool", "kb-grant", "memory-scope", "store-tenancy"],
        "manifest": "ContractViolation",
    }
    (info / "entry_points.txt").write_text("[kbconform.profiles]\nstore-native = store_native:PROFILE\n")
    registered = run()
    assert registered == {
        "names": [
            "tenant-namespace",
            "project-pool",
            "kb-grant",
            "memory-scope",
            "store-tenancy",
            "store-native",
        ],
        "manifest": "valid",
    }


def test_importing_the_registry_imports_nothing_heavy() -> None:
    """``kbconform.profiles`` is standard library only: the plugin and the report load it."""
    probe = (
        "import sys, kbconform.profiles as p; p.names(); "
        "print([m for m in ('pydantic', 'jsonschema', 'hypothesis', 'kbconform.adapter') "
        "if m in sys.modules])"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.strip() == "[]"
