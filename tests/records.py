"""Records the tests build on."""

from __future__ import annotations

from typing import Any

#: The smallest valid parsed-chunk-v1 record.
MINIMAL_CHUNK: dict[str, Any] = {
    "schemaVersion": "1.0.0",
    "tenantId": "client-tenant",
    "repoSlug": "client-org/main-app",
    "rootKind": "bare-repo",
    "sourcePath": "src/main.js",
    "content": "",
    "hashInputs": ["content"],
    "parserId": "js-module",
    "parserVersion": "0.1.0",
    "kind": "module-context",
    "name": "main",
}
