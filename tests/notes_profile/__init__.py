"""An isolation profile registered from outside the kit: ``notes``, tenants' notes in a
store that keeps each tenant's apart. It exists to show that an isolation model is a plug-in:
these files and one entry point (``kbconform.profiles``: ``notes = tests.notes_profile:PROFILE``)
are all it takes for the plugin, ``kbconform run`` and harness-v1 to judge a backend by it.

The rules: ``create_tenant(tenant)`` (the operator) makes a tenant; ``add_note(tenant, text)``
stores a note of that tenant and returns its id; ``notes(tenant)`` returns exactly that tenant's
notes. A caller that is not a created tenant's id (None, a non-string, an unknown or empty id) is
no identity: ``Unauthenticated``. With ``fault-injection``, ``store_fails()`` is consulted before
every store call; a failing store raises ``BackendUnavailable``.
"""

from __future__ import annotations

from typing import Any

from kbconform.profiles import Profile, feature_declined

#: The catalogue entries of the profile's tests: the shared isolation suite's, by its one read
#: facade, and its own suite's.
CATALOGUE: list[dict[str, Any]] = [
    {"id": "iso-01[notes]", "suite": "isolation", "level": "L1", "facade": "notes"},
    {"id": "iso-02[notes]", "suite": "isolation", "level": "L1", "facade": "notes"},
    {
        "id": "iso-03[notes]",
        "suite": "isolation",
        "level": "L2",
        "facade": "notes",
        "requires": ["fault-injection"],
    },
    {"id": "notes-01", "suite": "notes", "level": "L1"},
]

PROFILE = Profile(
    name="notes",
    capabilities=("fault-injection",),
    declines=feature_declined,
    operations=("createNoteTenant", "addNote", "readNotes"),
    facades="tests.notes_profile.protocol:facades",
    check_manifest="tests.notes_profile.protocol:check_manifest",
    isolation="tests.notes_profile.world:NotesIsolation",
    wire="tests.notes_profile.wire:WIRE",
    suites="tests.notes_profile.suite",
    catalogue="tests.notes_profile:CATALOGUE",
)
