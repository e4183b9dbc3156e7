"""The store-tenancy profile's parts (:class:`~kbconform.profiles.Implementation`), each imported
when a run first asks for it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kbconform.profiles import Implementation

if TYPE_CHECKING:
    from kbconform.adapter import Manifest
    from kbconform.conformance import Isolation
    from kbconform.harness import WireTable

NAME = "store-tenancy"


class StoreTenancy:
    def facades(self, manifest: Manifest, /) -> Sequence[tuple[str, Any]]:
        from kbconform.profiles.store_tenancy.protocol import facades

        return facades(manifest)

    def check_manifest(self, data: object, /) -> None:
        from kbconform.adapter import check_schema

        check_schema(data)

    def isolation(self, manifest: Manifest, /) -> Isolation:
        from kbconform.profiles.store_tenancy.world import TenancyIsolation

        return TenancyIsolation(manifest)

    def wire(self) -> WireTable:
        from kbconform.profiles.store_tenancy._wire import WIRE

        return WIRE

    def suites(self) -> Path:
        from kbconform.conformance import shipped_suites

        return shipped_suites() / "store_tenancy"

    def catalogue(self) -> Sequence[Mapping[str, Any]]:
        from kbconform.conformance import catalogue_entries, shipped_suites

        return catalogue_entries(shipped_suites() / "catalogue.json", NAME)


#: Checked by the type checker against the protocol every profile implements.
IMPLEMENTATION: Implementation = StoreTenancy()
