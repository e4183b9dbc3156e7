"""harness-v1's HTTP transport as an OpenAPI 3.1 document, generated from the harness-v1 schema.

Never edited by hand: ``schemas/harness-v1.openapi.json`` is :func:`render` of this, and
``tests/harness/test_openapi.py`` fails when the two differ (rewrite the file with
``kbconform schema harness-v1 --openapi > schemas/harness-v1.openapi.json``, or
``KBCONFORM_UPDATE_OPENAPI=1 python -m pytest tests/harness/test_openapi.py``).

One ``POST /v1/{op}`` per operation (operationId: the op); its body is the request message of
that op (``op`` its name, ``params`` its ``<op>Params``); a ``200`` answers with the response
message (its ``result`` the op's ``<op>Result``, or its ``error``), a ``400`` with an error
response (``KB_HARNESS_REQUEST_INVALID``). Links chain the stateful flow: the backend handle
``open`` returns goes into the ``params.backend`` of every operation on a backend, and the first
id ``ingest`` returns into the ``params.id`` of ``get`` (with the ingest's backend and principal).
In the project-pool profile, the project ``createProject`` made goes into ``startSession`` and
``assignSession``, and the session ``startSession`` started into every operation on a session. In
the kb-grant profile, the tenant ``createTenant`` made is the caller of ``createKb`` and
``listKbs``, and the knowledge base ``createKb`` made, with its caller, goes into every operation
on a knowledge base (``copyKb``'s ``source``).
"""

from __future__ import annotations

import copy
import json
from typing import Any

from kbconform.contract import bundled
from kbconform.harness._wire import OPERATIONS, PROTOCOL, REQUEST_INVALID

OPENAPI_VERSION = "3.1.0"
DIALECT = "https://json-schema.org/draft/2020-12/schema"
MEDIA_TYPE = "application/json"
_DEFS, _COMPONENTS = "#/$defs/", "#/components/schemas/"


def _components(node: Any) -> Any:
    """``node`` with every ``#/$defs/x`` reference made ``#/components/schemas/x``."""
    if isinstance(node, dict):
        moved = {key: _components(value) for key, value in node.items()}
        reference = moved.get("$ref")
        if isinstance(reference, str) and reference.startswith(_DEFS):
            moved["$ref"] = _COMPONENTS + reference.removeprefix(_DEFS)
        return moved
    if isinstance(node, list):
        return [_components(item) for item in node]
    return node


def _ref(name: str, description: str | None = None) -> dict[str, Any]:
    return {"$ref": _COMPONENTS + name, **({"description": description} if description else {})}


def _takes_backend(defs: dict[str, Any], op: str) -> bool:
    return "backend" in defs[f"{op}Params"].get("properties", {})


def _request(defs: dict[str, Any], op: str) -> dict[str, Any]:
    """The request message of ``op``: ``$defs/request`` with its ``op`` fixed and its ``params``
    the op's params (the schema's per-op conditions, resolved for this op)."""
    request = defs["request"]
    properties = dict(request["properties"])
    properties["op"] = {"const": op, "description": f"the operation {op}, as in the path"}
    properties["params"] = _ref(f"{op}Params", f"The params of {op}.")
    return {
        "description": f"a request {{id, op, params}} of {op}",
        "type": request["type"],
        "additionalProperties": request["additionalProperties"],
        "required": request["required"],
        "properties": properties,
    }


def _response(defs: dict[str, Any], op: str) -> dict[str, Any]:
    """The response message answering a valid request of ``op``: ``$defs/response`` with its
    ``id`` the request's (an integer: never null) and its ``result`` the op's result
    (``$defs/<op>Result``); its ``error`` stays ``$defs/error``."""
    response: dict[str, Any] = copy.deepcopy(defs["response"])
    response["properties"]["id"] = {
        **defs["request"]["properties"]["id"],
        "description": "an integer >= 0: the id of the request answered",
    }
    response["description"] = f"a response {{id, result}} or {{id, error}} to a request of {op}"
    response["properties"]["result"] = _ref(f"{op}Result", f"The result of {op}.")
    return response


def _error_response(defs: dict[str, Any]) -> dict[str, Any]:
    """An error response to a body that is not a valid request: ``$defs/response`` with an
    ``error`` of code ``KB_HARNESS_REQUEST_INVALID`` and no ``result``."""
    response: dict[str, Any] = copy.deepcopy(defs["response"])
    response["description"] = (
        f"an error response {{id, error}} with code {REQUEST_INVALID}: its id echoes the request's "
        "when that is an integer >= 0, else it is null"
    )
    response["required"] = sorted({*response["required"], "error"})
    response["properties"].pop("result")
    response["properties"]["error"] = {
        "allOf": [_ref("error")],
        "properties": {"code": {"const": REQUEST_INVALID}},
        "description": "Why the body is not a valid request.",
    }
    response.pop("allOf", None)  # exactly one of result and error: the error
    return response


def _link(target: str, description: str, **params: str) -> dict[str, Any]:
    """A link to ``target`` on the backend of the request answered, its ``params`` (each a
    runtime expression) filled in."""
    return {
        "operationId": target,
        "requestBody": {"params": {"backend": "{$request.body#/params/backend}", **params}},
        "description": description,
    }


def _links(defs: dict[str, Any], op: str) -> dict[str, Any]:
    """The links a ``200`` answer of ``op`` offers. Each fills the target's body through the
    link's ``requestBody``: an object of the body's shape whose strings are runtime expressions
    embedded as ``{$...}``; Schemathesis, in its stateful phase, evaluates each and merges the
    object into the body it generates for the target (keeping the fields the link leaves out)."""
    if op == "open":
        return {
            f"{target}OnTheBackend": _link(
                target, f"{target} on the backend open returned", backend="{$response.body#/result/backend}"
            )
            for target in OPERATIONS
            if _takes_backend(defs, target)
        }
    if op == "ingest":
        return {
            "getTheFirstIngested": _link(
                "get",
                "get the first chunk ingest stored, on its backend, as the principal who wrote it",
                principal="{$request.body#/params/principal}",
                id="{$response.body#/result/ids/0}",
            )
        }
    if op in _INTO:
        name, what, targets, params = _INTO[op]
        return {f"{target}{name}": _link(target, f"{target} {what}", **params) for target in targets}
    if op == "createKb":
        return {
            f"{target}OfTheKb": _link(
                target,
                f"{target} of the knowledge base createKb made, as its owner, on its backend",
                caller="{$request.body#/params/caller}",
                **{key: "{$response.body#/result/id}"},
            )
            for target, key in _ON_A_KB.items()
        }
    return {}


#: The operations whose params name a session: startSession links to each.
_ON_A_SESSION = (
    "assignSession",
    "removeSession",
    "writeEpisode",
    "extractEntities",
    "searchEpisodes",
    "searchEntities",
)


#: The operations on a knowledge base, and the param naming it: createKb links to each.
_ON_A_KB = {
    "shareKb": "kb",
    "revokeKb": "kb",
    "ingestDocuments": "kb",
    "getKb": "kb",
    "deleteKb": "kb",
    "copyKb": "source",
    "moveKb": "kb",
}


#: The ops whose request names what the links of their answer carry into each target: the
#: links' name and description (each after the target's), the targets, and the params filled.
_INTO: dict[str, tuple[str, str, tuple[str, ...], dict[str, str]]] = {
    "createProject": (
        "InTheProject",
        "into the project createProject made, on its backend",
        ("startSession", "assignSession"),
        {"project": "{$request.body#/params/project}"},
    ),
    "startSession": (
        "OfTheSession",
        "of the session startSession started, on its backend",
        _ON_A_SESSION,
        {"session": "{$request.body#/params/session}"},
    ),
    "createTenant": (
        "AsTheTenant",
        "as the tenant createTenant made, on its backend",
        ("createKb", "listKbs"),
        {"caller": "{$request.body#/params/tenant}"},
    ),
}


def _operation(defs: dict[str, Any], op: str) -> dict[str, Any]:
    params = defs[f"{op}Params"]
    ok: dict[str, Any] = {
        "description": (
            f"The response message: {op}'s result, or the error the call ended with (a backend's "
            "refusal included)."
        ),
        "content": {MEDIA_TYPE: {"schema": _ref(f"{op}Response")}},
    }
    links = _links(defs, op)
    if links:
        ok["links"] = links
    return {
        "operationId": op,
        "summary": params["description"],
        "requestBody": {
            "required": True,
            "content": {MEDIA_TYPE: {"schema": _ref(f"{op}Request")}},
        },
        "responses": {
            "200": ok,
            "400": {
                "description": (
                    "The body is not a valid request of this operation (not JSON, not a request "
                    "of harness-v1, another op than the path's), or one the harness cannot carry "
                    "out (an operation of another isolation profile than the manifest's; a backend "
                    "handle that open did not return or close released; a fault plan for a backend "
                    "opened without faults)."
                ),
                "content": {MEDIA_TYPE: {"schema": _ref("requestInvalid")}},
            },
        },
    }


def openapi() -> dict[str, Any]:
    """The OpenAPI 3.1 document of harness-v1 over HTTP, built from the bundled harness-v1 schema."""
    schema = bundled(PROTOCOL)
    defs: dict[str, Any] = schema["$defs"]
    assert all(f"{op}Params" in defs and f"{op}Result" in defs for op in OPERATIONS)
    components = _components(defs)
    for op in OPERATIONS:
        components[f"{op}Request"] = _request(components, op)
        components[f"{op}Response"] = _response(components, op)
    components["requestInvalid"] = _error_response(components)
    return {
        "openapi": OPENAPI_VERSION,
        "jsonSchemaDialect": DIALECT,
        "info": {
            "title": "harness-v1 over HTTP",
            "version": "1",
            "description": (
                "A harness serving harness-v1 (schemas/harness-v1.md) over HTTP on 127.0.0.1: each "
                "request message is the body of POST /v1/{op}. Generated from "
                f"{schema['$id']}; do not edit."
            ),
        },
        "paths": {f"/v1/{op}": {"post": _operation(defs, op)} for op in OPERATIONS},
        "components": {"schemas": components},
    }


def render() -> str:
    """:func:`openapi` as the text of ``schemas/harness-v1.openapi.json``."""
    return json.dumps(openapi(), indent=2, ensure_ascii=False) + "\n"
