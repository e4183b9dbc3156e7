"""An isolation profile registered from outside the kit: ``notes``, tenants' notes in a
store that keeps each tenant's apart. It exists to show that an isolation model is a plug-in:
these files and one entry point (``kbconform.profiles``: ``notes = tests.notes_profile:PROFILE``)
are all it takes for the plugin, ``kbconform run`` and harness-v1 to judge a backend by it. It
is registered as the kit's own profiles are: a descriptor (:data:`PROFILE`, plain data) naming
its implementation (``implementation.py``: protocol, world, wire table, its suite and the
catalogue of its tests, ``suite/catalogue.json``), loaded when a run asks for it.

The rules: ``create_tenant(tenant)`` (the operator) makes a tenant; ``add_note(tenant, text)``
stores a note of that tenant and returns its id; ``notes(tenant)`` returns exactly that tenant's
notes. A caller that is not a created tenant's id (None, a non-string, an unknown or empty id) is
no identity: ``Unauthenticated``. With ``fault-injection``, ``store_fails()`` is consulted before
every store call; a failing store raises ``BackendUnavailable``.
"""

from __future__ import annotations

from kbconform.profiles import Profile

PROFILE = Profile(
    name="notes",
    capabilities=("fault-injection",),
    operations=("createNoteTenant", "addNote", "readNotes"),
    implementation="tests.notes_profile.implementation:IMPLEMENTATION",
    skeleton={
        "isolationProfile": "notes",
        "readFacades": ["notes"],
        "features": {"fault-injection": "not offered yet: the store cannot be switched off by the suites"},
    },
)
