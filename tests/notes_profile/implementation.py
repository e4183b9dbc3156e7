"""The notes profile's parts (:class:`~kbconform.profiles.Implementation`), each imported when a
run first asks for it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kbconform.profiles import Implementation

if TYPE_CHECKING:
    from kbconform.adapter import Manifest
    from kbconform.conformance import Isolation
    from kbconform.harness import WireTable

NAME = "notes"
#: The profile's own suite tests and, beside them, their catalogue (generated from their marks).
SUITES = Path(__file__).resolve().parent / "suite"


class Notes:
    def facades(self, manifest: Manifest, /) -> Sequence[tuple[str, Any]]:
        from tests.notes_profile.protocol import facades

        return facades(manifest)

    def check_manifest(self, data: object, /) -> None:
        from tests.notes_profile.protocol import check_manifest

        check_manifest(data)

    def isolation(self, manifest: Manifest, /) -> Isolation:
        from tests.notes_profile.world import NotesIsolation

        return NotesIsolation(manifest)

    def wire(self) -> WireTable:
        from tests.notes_profile.wire import WIRE

        return WIRE

    def suites(self) -> Path:
        return SUITES

    def catalogue(self) -> Sequence[Mapping[str, Any]]:
        from kbconform.conformance import catalogue_entries

        return catalogue_entries(SUITES / "catalogue.json", NAME)


#: Checked by the type checker against the protocol every profile implements.
IMPLEMENTATION: Implementation = Notes()
