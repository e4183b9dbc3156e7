"""The contract's JSON Schemas: loading, the ``referencing`` registry, and bundling."""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Mapping
from functools import cache
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from kbconform._resources import data_dir

if TYPE_CHECKING:  # loaded by registry(): reading a schema needs no resolver
    import referencing
    import referencing._core

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


def manifest_branch(profile: str) -> Mapping[str, Any] | None:
    """The properties adapter-manifest-v1 gives a manifest of the isolation profile ``profile``
    (its branch whose ``isolationProfile`` is that constant), or None for a profile the schema
    has no branch for (one registered by another package, with a schema of its own)."""
    for branch in load("adapter-manifest-v1")["$defs"].values():
        properties = branch.get("properties", {})
        if properties.get("isolationProfile", {}).get("const") == profile:
            return properties  # type: ignore[no-any-return]
    return None


def text(name: str) -> str:
    """The schema file of ``name`` exactly as shipped."""
    return (data_dir("schemas") / (check_name(name) + SUFFIX)).read_text(encoding="utf-8")


@cache
def vectors(name: str) -> Any:
    """The test vectors of the schema ``name`` (``schemas/vectors/NAME.json``): groups of cases,
    each with its instance and whether it is valid."""
    path = data_dir("schemas") / "vectors" / f"{check_name(name)}.json"
    return json.loads(path.read_text(encoding="utf-8"))


def registry() -> referencing.Registry[Any]:
    """An immutable ``referencing`` registry holding every kbconform schema under its ``$id``."""
    import referencing.jsonschema

    resources = [
        (uri(name), referencing.jsonschema.DRAFT202012.create_resource(schema))
        for name, schema in _load_all().items()
    ]
    return referencing.Registry().with_resources(resources).crawl()


def bundled(name: str) -> dict[str, Any]:
    """Schema ``name`` made self-contained: every cross-schema ``$ref`` inlined.

    For tools that cannot resolve references (generators, other languages' validators). An
    inlined schema loses its ``$id``, ``$schema`` and ``$defs``; what its own local references
    point at (``#/$defs/...``, possibly recursive) moves into the bundle's ``$defs`` as
    ``<schema>.<definition>``, and those references follow it there.
    """
    hoisted: dict[str, Any] = {}

    def local(reference: str, base: str) -> str:
        """The bundle's ``$defs`` key for local ``reference`` of the schema at ``base``."""
        pointer = reference[1:].replace("/$defs/", ".").replace("/", ".")
        return base.removeprefix(BASE_URI).removesuffix(SUFFIX) + pointer

    def inline(node: Any, resolver: referencing._core.Resolver[Any], base: str | None) -> Any:
        # base: the URI of the other schema ``node`` was inlined from; None within ``name`` itself.
        if isinstance(node, dict):
            reference = node.get("$ref")
            rest = {key: inline(value, resolver, base) for key, value in node.items() if key != "$ref"}
            if isinstance(reference, str) and not reference.startswith("#"):
                resolved = resolver.lookup(reference)
                source = urllib.parse.urldefrag(urllib.parse.urljoin(base or uri(name), reference)).url
                target = inline(resolved.contents, resolved.resolver, source)
                if isinstance(target, dict):
                    target = {key: value for key, value in target.items() if key not in _DOCUMENT_KEYS}
                return {**target, **rest} if rest else target
            if isinstance(reference, str) and base is not None:
                key = local(reference, base)
                if key not in hoisted:
                    hoisted[key] = None  # taken: a recursive reference stops here
                    resolved = resolver.lookup(reference)
                    target = inline(resolved.contents, resolved.resolver, base)
                    if isinstance(target, dict):
                        target = {key: value for key, value in target.items() if key not in _DOCUMENT_KEYS}
                    hoisted[key] = target
                return {"$ref": "#/$defs/" + key, **rest}
            return rest if reference is None else {"$ref": reference, **rest}
        if isinstance(node, list):
            return [inline(item, resolver, base) for item in node]
        return node

    schema: dict[str, Any] = inline(dict(load(name)), registry().resolver(base_uri=uri(name)), None)
    if hoisted:
        schema["$defs"] = {**schema.get("$defs", {}), **hoisted}
    return schema


#: What an inlined schema drops: it is no longer a document of its own.
_DOCUMENT_KEYS = frozenset({"$id", "$schema", "$defs"})
