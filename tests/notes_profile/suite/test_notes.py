"""The notes profile's own rule: a note is its writer's alone."""

from __future__ import annotations

from typing import Any

import pytest

PROFILES = ("notes",)


@pytest.mark.kbconform(id="notes-01", level="L1")
def test_a_note_is_read_by_its_writer_and_no_other_tenant(kbconform_backend: Any) -> None:
    """Two tenants each add a note: each reads its own (control) and not the other's."""
    backend = kbconform_backend
    for tenant in ("acme", "beta"):
        backend.create_tenant(tenant)
    mine = backend.add_note("acme", "kbn-mine the plan")
    theirs = backend.add_note("beta", "kbn-theirs the keys")
    assert mine != theirs
    assert [note.id for note in backend.notes("acme")] == [mine]
    assert [note.id for note in backend.notes("beta")] == [theirs]
