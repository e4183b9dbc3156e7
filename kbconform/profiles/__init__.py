"""The isolation profiles: one registry, each profile a plug-in (``kbconform.profiles``).

Standard library only at import: a profile's descriptor (:class:`Profile`) is plain data; its
:class:`Implementation` (protocol, model, world and wire table) loads when a run asks for it.
"""

from kbconform.profiles._registry import (
    BUILT_IN,
    DEFAULT,
    ENTRY_POINTS,
    LEVEL_MEANINGS,
    SHARED_CAPABILITIES,
    Implementation,
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
    "BUILT_IN",
    "ENTRY_POINTS",
    "LEVEL_MEANINGS",
    "SHARED_CAPABILITIES",
    "Implementation",
    "Profile",
    "built_in",
    "capabilities",
    "feature_declined",
    "names",
    "profile",
    "profile_of",
]
