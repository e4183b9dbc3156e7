"""The installed suites' test list (``suites/catalogue.json`` and plug-in profiles' entries),
its hash, and the tests a run must report (:func:`expected`) or selects (:func:`matching`)."""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import re
from collections.abc import Iterable, Mapping
from functools import cache
from typing import Any

import rfc8785

from kbconform._capabilities import applies
from kbconform.errors import ContractViolation, Problem
from kbconform.profiles import names, profile


@cache
def catalogue() -> tuple[dict[str, Any], ...]:
    """The installed suites' test list: every registered isolation profile's catalogue entries
    (``Profile.entries``: a built-in profile's from the shipped ``catalogue.json``, a plug-in's
    from its own), sorted by id."""
    tests = [entry for name in names() for entry in profile(name).entries()]
    return tuple(sorted(tests, key=lambda test: str(test["id"])))


def list_hash(tests: Iterable[Mapping[str, Any]]) -> str:
    """``sha256:<hex>`` of the RFC 8785 canonical JSON of a test list."""
    return "sha256:" + hashlib.sha256(rfc8785.dumps(list(tests))).hexdigest()


#: What a report's test entry says of its run, beside what its catalogue entry declares.
RUN_FIELDS = (
    "status",
    "reason",
    "message",
    "transcript",
    "duration",
    "calls",
    "caller",
    "effect",
    "operation",
    "direction",
    "raised",
)


def catalogue_from(*reports: Mapping[str, Any]) -> dict[str, Any]:
    """The test list full reports of maximal manifests give, one report per isolation profile
    (how catalogue.json is made)."""
    tests = {
        test["id"]: {key: value for key, value in test.items() if key not in RUN_FIELDS}
        for report in reports
        for test in report["tests"]
    }
    return {
        "description": "Every stable test id of the kbconform suites, with its suite, level, the "
        "capabilities it requires, the read facade or spoof mode it runs in, its isolation "
        "profile (tenant-namespace when absent), the rule it checks (a section of a spec document "
        "in schemas/: the rule's own anchor where the document gives each rule one, its rules "
        "section for a program of calls held to every rule after each step) and the section of "
        "docs/adapter-guide.md that says what it asks. A run must report each entry its manifest "
        "and level select; testListHash is sha256 of the RFC 8785 form of the tests array.",
        "tests": sorted(tests.values(), key=lambda test: test["id"]),
    }


def render_catalogue(catalogue: Mapping[str, Any]) -> str:
    """catalogue.json's text: one test per line, so a change to the suites reads as a diff."""
    lines = ",\n".join(
        "    " + json.dumps(test, sort_keys=True, ensure_ascii=False) for test in catalogue["tests"]
    )
    description = json.dumps(catalogue["description"], ensure_ascii=False)
    return f'{{\n  "description": {description},\n  "tests": [\n{lines}\n  ]\n}}\n'


def suite_version() -> str:
    return importlib.metadata.version("kbconform")


def expected(
    manifest: Mapping[str, Any], level: str, selected: Iterable[str] | None = None
) -> list[dict[str, Any]]:
    """The catalogue entries a run at ``level`` against ``manifest`` must report; of a partial
    run, those of them it ``selected``."""
    chosen = None if selected is None else set(selected)
    return [
        dict(entry)
        for entry in catalogue()
        if applies(entry, manifest, level) and (chosen is None or entry["id"] in chosen)
    ]


#: What a selection pattern must be.
GLOB_HELP = "a test id or glob of the catalogue (* and ? are wildcards; [ is part of an id: leak-01[list])"


def matching(patterns: Iterable[str]) -> list[str]:
    """The catalogue ids each of ``patterns`` names: an id exactly, or a glob pattern
    (``leak-*``, ``iso-0?[get]``: ``[`` of an id is literal). ContractViolation
    (``KB_SELECTION_INVALID``) for a pattern that names none."""
    ids = [str(entry["id"]) for entry in catalogue()]
    chosen: dict[str, None] = {}
    unmatched = []
    for pattern in patterns:
        if pattern in ids:
            chosen[pattern] = None
            continue
        glob = re.compile("".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern))
        found = [stable for stable in ids if glob.fullmatch(stable)]
        if not found:
            unmatched.append(pattern)
        chosen.update(dict.fromkeys(found))
    if unmatched:
        raise ContractViolation(
            contract="selection",
            problems=tuple(Problem("", "only", GLOB_HELP, repr(p)) for p in unmatched),
            code="KB_SELECTION_INVALID",
        )
    return list(chosen)


def unknown_ids(ids: Iterable[str]) -> list[str]:
    """The ``ids`` the installed catalogue does not list, sorted."""
    return sorted(set(ids) - {entry["id"] for entry in catalogue()})


#: The OWASP Top 10 for LLM Applications 2025 category of every kbconform rule: each is an
#: access rule of a vector store or knowledge base (unauthorized access and data leakage,
#: cross-context leaks, writes into another tenant's scope). The SARIF log tags each rule with
#: it, and the HTML report names it beside each failure's rule.
OWASP = "OWASP LLM08:2025 Vector and Embedding Weaknesses"
