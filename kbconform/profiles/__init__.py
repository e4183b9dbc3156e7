"""The isolation profiles: one registry, each profile a plug-in (``kbconform.profiles``).

Standard library only at import: a profile's protocol, model, world and wire table load when
asked (:meth:`Profile.load`).
"""

from kbconform.profiles._registry import (
    DEFAULT,
    ENTRY_POINTS,
    LEVEL_MEANINGS,
    Profile,
    built_in,
    capabilities,
    feature_declined,
    names,
    profile,
    profile_of,
)

__all__ = [
    "DEFAULT",
    "ENTRY_POINTS",
    "LEVEL_MEANINGS",
    "Profile",
    "built_in",
    "capabilities",
    "feature_declined",
    "names",
    "profile",
    "profile_of",
]
