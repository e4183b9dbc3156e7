"""The language-neutral contract: schemas, strict JSON reading and validation."""

from kbconform.contract._json import is_plain, plain
from kbconform.contract._jsonio import Item, iter_records, loads
from kbconform.contract._schemas import BASE_URI, bundled, load, registry, schema_names, text, uri, vectors
from kbconform.contract._validate import explain, is_valid, validate

__all__ = [
    "BASE_URI",
    "Item",
    "bundled",
    "explain",
    "is_valid",
    "iter_records",
    "load",
    "loads",
    "registry",
    "schema_names",
    "text",
    "uri",
    "validate",
    "vectors",
    "is_plain",
    "plain",
]
