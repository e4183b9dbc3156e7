"""Identity: the authenticated principal and tenant-aware chunk ids."""

from kbconform.identity._chunk_id import (
    DEFAULT_NAMESPACE,
    PROFILES,
    RESERVED_FIELDS,
    Namespace,
    Profile,
    chunk_id,
    kbconform_v1_id,
    legacy_id,
    neo_compat_id,
    neo_content_hash,
    neo_ingest_hash,
    neo_stored_id,
)
from kbconform.identity._jsjson import UNDEFINED, stringify
from kbconform.identity._principal import Principal, Role

__all__ = [
    "DEFAULT_NAMESPACE",
    "PROFILES",
    "RESERVED_FIELDS",
    "UNDEFINED",
    "Namespace",
    "Principal",
    "Profile",
    "Role",
    "chunk_id",
    "kbconform_v1_id",
    "legacy_id",
    "neo_compat_id",
    "neo_content_hash",
    "neo_ingest_hash",
    "neo_stored_id",
    "stringify",
]
