"""The reference's layout, held: shared code at the top, one package per isolation profile that
imports no other profile's, and the earlier import paths naming the same objects."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from tests.test_layers import imports

PACKAGE = Path(__file__).resolve().parents[2] / "reference_impl" / "kbconform_reference"
PROFILES = ("namespace", "pool", "grant", "memory", "tenancy")


def _foreign(profile: str, names: set[str]) -> list[str]:
    """The names among ``names`` inside another profile's package than ``profile``'s."""
    others = [f"kbconform_reference.{other}" for other in PROFILES if other != profile]
    return sorted(n for n in names if any(n == o or n.startswith(o + ".") for o in others))


@pytest.mark.parametrize("profile", PROFILES)
def test_no_profile_package_imports_another_profiles(profile: str) -> None:
    """A profile's package imports the shared modules and its own, never another profile's."""
    found = {
        str(path.relative_to(PACKAGE)): _foreign(profile, set(imports(path.read_text(encoding="utf-8"))))
        for path in sorted((PACKAGE / profile).rglob("*.py"))
    }
    assert {path: names for path, names in found.items() if names} == {}


def test_the_profile_rule_finds_a_foreign_import() -> None:
    """Control: an import of another profile's module is found, one of the shared modules is not."""
    source = "from kbconform_reference.grant import service\nfrom kbconform_reference import _vectors\n"
    assert _foreign("pool", set(imports(source))) == [
        "kbconform_reference.grant",
        "kbconform_reference.grant.service",
    ]


@pytest.mark.parametrize(
    ("earlier", "now"),
    [
        ("kbconform_reference.adapter", "kbconform_reference.namespace.adapter"),
        ("kbconform_reference.mutants", "kbconform_reference.namespace.mutants"),
        ("kbconform_reference.stores", "kbconform_reference.namespace.stores"),
        ("kbconform_reference.stores.chroma", "kbconform_reference.namespace.stores.chroma"),
    ],
)
def test_the_earlier_import_paths_name_the_same_objects(earlier: str, now: str) -> None:
    """Every name the earlier module exports is the object of the package it moved to."""
    old, new = importlib.import_module(earlier), importlib.import_module(now)
    exported = [name for name in old.__all__ if hasattr(new, name)]
    assert exported, earlier
    assert {name: getattr(old, name) is getattr(new, name) for name in exported} == dict.fromkeys(
        exported, True
    )


def test_the_default_adapters_are_importable_by_their_documented_names() -> None:
    """kbconform_reference.adapter:memory, :chroma_embedded, :chroma_server and :postgres load."""
    adapter = importlib.import_module("kbconform_reference.adapter")
    for name in ("memory", "chroma_embedded", "chroma_server", "postgres", "memory_shared_for_all"):
        assert callable(getattr(adapter, name)), name
