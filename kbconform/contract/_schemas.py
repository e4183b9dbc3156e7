"""The contract's JSON Schemas: loading, the ``referencing`` registry, and bundling."""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cache
from types import MappingProxyType
from typing import Any

import referencing
import referencing._core
import referencing.jsonschema

from kbconform._resources import data_dir

BASE_URI = "https://kbconform.dev/schemas/"
SUFFIX = ".schema.json"


@cache
def schema_names() -> tuple[str, ...]:
    """The names of every schema kbconform ships, such as ``parsed-chunk-v1``."""
    return tuple(sorted(path.name[: -len(SUFFIX)] for path in data_dir("schemas").glob("*" + SUFFIX)))


def uri(name: str) -> str:
    """The ``$id`` of schema ``name``."""
    return BASE_URI + name + SUFFIX


def check_name(name: str) -> str:
    """Return ``name`` if kbconform ships such a schema, else raise a ``LookupError`` naming them."""
    if name not in schema_names():
        raise LookupError(f"unknown schema {name!r}; expected one of: {', '.join(schema_names())}")
    return name


@cache
def _load_all() -> Mapping[str, Mapping[str, Any]]:
    loaded = {}
    for name in schema_names():
        with (data_dir("schemas") / (name + SUFFIX)).open(encoding="utf-8") as file:
            loaded[name] = json.load(file)
    return MappingProxyType(loaded)


def load(name: str) -> Mapping[str, Any]:
    """The parsed schema ``name`` (shared: do not mutate it)."""
    return _load_all()[check_name(name)]


def text(name: str) -> str:
    """The schema file of ``name`` exactly as shipped."""
    return (data_dir("schemas") / (check_name(name) + SUFFIX)).read_text(encoding="utf-8")


@cache
def registry() -> referencing.Registry[Any]:
    """An immutable ``referencing`` registry holding every kbconform schema under its ``$id``."""
    resources = [
        (uri(name), referencing.jsonschema.DRAFT202012.create_resource(schema))
        for name, schema in _load_all().items()
    ]
    return referencing.Registry().with_resources(resources).crawl()


def bundled(name: str) -> dict[str, Any]:
    """Schema ``name`` made self-contained: every cross-schema ``$ref`` inlined.

    For tools that cannot resolve references (generators, other languages' validators).
    """
    resolver = registry().resolver(base_uri=uri(name))

    def inline(node: Any, resolver: referencing._core.Resolver[Any]) -> Any:
        if isinstance(node, dict):
            if "$ref" in node and not node["$ref"].startswith("#"):
                resolved = resolver.lookup(node["$ref"])
                target = inline(resolved.contents, resolved.resolver)
                rest = {key: value for key, value in node.items() if key != "$ref"}
                return {**target, **rest} if rest else target
            return {key: inline(value, resolver) for key, value in node.items()}
        if isinstance(node, list):
            return [inline(item, resolver) for item in node]
        return node

    return inline(dict(load(name)), resolver)  # type: ignore[no-any-return]
