"""The kb-grant profile's parts (:class:`~kbconform.profiles.Implementation`), each imported
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

NAME = "kb-grant"


class KbGrant:
    def facades(self, manifest: Manifest, /) -> Sequence[tuple[str, Any]]:
        from kbconform.profiles.kb_grant._checks import facades

        return facades(manifest)

    def check_manifest(self, data: object, /) -> None:
        from kbconform.profiles.kb_grant._checks import check_manifest

        check_manifest(data)

    def isolation(self, manifest: Manifest, /) -> Isolation:
        from kbconform.profiles.kb_grant.world import GrantIsolation

        return GrantIsolation(manifest)

    def wire(self) -> WireTable:
        from kbconform.profiles.kb_grant._wire import WIRE

        return WIRE

    def suites(self) -> Path:
        from kbconform.conformance import shipped_suites

        return shipped_suites() / "kb_grant"

    def catalogue(self) -> Sequence[Mapping[str, Any]]:
        from kbconform.conformance import catalogue_entries, shipped_suites

        return catalogue_entries(shipped_suites() / "catalogue.json", NAME)


#: Checked by the type checker against the protocol every profile implements.
IMPLEMENTATION: Implementation = KbGrant()
