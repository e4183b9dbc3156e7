"""docs/adapter-guide.md cannot drift from the catalogue, the protocol or the errors.

The guide's tables are its data: :func:`guide_problems` reads the Markdown and lists every way
it disagrees with ``suites/catalogue.json`` (a test id it names that does not exist; a suite test
of the tenant-namespace profile it never names; a capability whose gated tests differ), with the
protocols (a facade without its table), with the code (an error code nothing defines, an error
class shown with another class's code) and with the profiles (one without its section and spec
doc). Each check has a control: the same checker on a guide with one thing broken.
"""

from __future__ import annotations

import ast
import functools
import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from mypy import api

import kbconform.errors
from kbconform._capabilities import CAPABILITIES
from kbconform.adapter import Adapter
from kbconform.contract import validate
from kbconform.profiles import DEFAULT, built_in
from kbconform.profiles.kb_grant.protocol import KbGrantBackend
from kbconform.profiles.project_pool.protocol import ProjectPoolBackend
from kbconform.profiles.tenant_namespace.protocol import (
    Backend,
    SupportsAsk,
    SupportsCount,
    SupportsMaintain,
    SupportsScan,
    SupportsSync,
)

ROOT = Path(__file__).resolve().parent.parent
GUIDE = ROOT / "docs" / "adapter-guide.md"

#: A stable test id as the guide writes it: ``leak-03``, or one parametrization, ``leak-01[count]``.
_ID = re.compile(r"\b([a-z]+-\d{2})\b(\[[^\]\n]+\])?")
_CODE = re.compile(r"\bKB_[A-Z_]+\b")
_CLASS_AND_CODE = re.compile(r"`(\w+)` \(`(KB_[A-Z_]+)`")
_FACADE_HEADING = re.compile(r"^### `(\w+)\(", re.MULTILINE)


@dataclass(frozen=True)
class Facts:
    """What the guide is checked against."""

    catalogue: tuple[dict[str, object], ...]
    facades: tuple[str, ...]
    #: The facades of each profile other than the default, which its section's table must list.
    profile_facades: dict[str, tuple[str, ...]]
    codes: frozenset[str]
    profiles: tuple[str, ...]


def _methods(*protocols: type) -> tuple[str, ...]:
    return tuple(
        name
        for protocol in protocols
        for name, value in vars(protocol).items()
        if callable(value) and not name.startswith("_")
    )


def _codes_in_source() -> frozenset[str]:
    """Every ``"KB_..."`` string literal in the kit, and every error class's code."""
    found = set()
    for path in (ROOT / "kbconform").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                found.update(m for m in _CODE.findall(node.value) if m == node.value)
    return frozenset(found)


@functools.cache  # the kit's sources parsed once a run, not once a test
def facts() -> Facts:
    catalogue = json.loads((ROOT / "suites" / "catalogue.json").read_text(encoding="utf-8"))["tests"]
    return Facts(
        catalogue=tuple(catalogue),
        facades=_methods(Backend, SupportsCount, SupportsAsk, SupportsScan, SupportsSync, SupportsMaintain),
        profile_facades={
            "project-pool": _methods(ProjectPoolBackend),
            "kb-grant": _methods(KbGrantBackend),
        },
        codes=_codes_in_source(),
        profiles=tuple(built_in()),
    )


def _base(test_id: str) -> str:
    return test_id.split("[", 1)[0]


def _sections(text: str) -> dict[str, str]:
    """The text under each ``## `` heading, by heading."""
    parts = re.split(r"^## (.+)$", text, flags=re.MULTILINE)
    return {parts[i].strip(): parts[i + 1] for i in range(1, len(parts) - 1, 2)}


def _cells(row: str) -> list[str]:
    return [cell.strip() for cell in row.strip().strip("|").split("|")]


def _ids(text: str) -> set[str]:
    return {base + (param or "") for base, param in _ID.findall(text)}


def guide_problems(text: str, facts: Facts) -> list[str]:
    """Every way ``text`` (the guide) disagrees with ``facts``; empty when it agrees."""
    problems: list[str] = []
    full = {str(entry["id"]) for entry in facts.catalogue}
    bases = {_base(test_id) for test_id in full}
    for named in sorted(_ids(text)):
        if named not in (full if "[" in named else bases):
            problems.append(f"{named} is no test id of suites/catalogue.json")

    sections = _sections(text)
    [tenant] = [body for heading, body in sections.items() if DEFAULT in heading]
    rows = "\n".join(line for line in tenant.splitlines() if line.startswith("|"))
    named_in_rows = {_base(test_id) for test_id in _ids(rows)}
    for entry in facts.catalogue:
        test_id = _base(str(entry["id"]))
        if entry.get("profile", DEFAULT) == DEFAULT and test_id not in named_in_rows:
            problems.append(f"{test_id} ({DEFAULT}) is tied to no rule of the {DEFAULT} tables")

    tables = set(_FACADE_HEADING.findall(tenant))
    for facade in facts.facades:
        if facade not in tables:
            problems.append(f"the {DEFAULT} facade {facade} has no table (### `{facade}(...)`)")
    for profile in facts.profiles[1:]:
        owned = [body for heading, body in sections.items() if f"{profile} profile" in heading]
        if not owned:
            problems.append(f"the {profile} profile has no section (## The {profile} profile)")
        elif f"schemas/{profile}.md" not in owned[0]:
            problems.append(f"the {profile} section does not name its spec doc schemas/{profile}.md")
        else:
            problems.extend(
                f"the {profile} facade {facade} is not in its table"
                for facade in facts.profile_facades.get(profile, ())
                if f"| `{facade}(" not in owned[0]
            )

    gated: dict[str, set[str]] = {}
    for entry in facts.catalogue:
        if entry.get("profile", DEFAULT) == DEFAULT:
            for capability in entry.get("requires", ()):  # type: ignore[attr-defined]
                gated.setdefault(str(capability), set()).add(_base(str(entry["id"])))
    documented = set()
    for line in text.splitlines():
        cells = _cells(line) if line.startswith("| `") else []
        capability = cells[0].strip("`") if cells else ""
        if capability in CAPABILITIES:
            documented.add(capability)
            listed = {_base(test_id) for test_id in _ids(cells[-1])}
            wanted = sorted(gated.get(capability, set()))
            if listed != set(wanted):
                problems.append(f"{capability} gates {wanted}, the guide says {sorted(listed)}")
    problems.extend(
        f"{capability} has no row of what it gates" for capability in sorted(set(gated) - documented)
    )

    for code in sorted(set(_CODE.findall(text)) - facts.codes):
        problems.append(f"{code} is no error code of the kit")
    for name, code in _CLASS_AND_CODE.findall(text):
        error = getattr(kbconform.errors, name, None)
        if name in kbconform.errors.__all__ and name != "ContractViolation" and error.code != code:  # type: ignore[union-attr]
            problems.append(f"{name} has code {error.code}, the guide says {code}")  # type: ignore[union-attr]
    return problems


def test_the_guide_agrees_with_the_catalogue_the_protocols_and_the_errors() -> None:
    """Every id exists, every tenant-namespace test is tied to a rule, every facade has its table,
    every capability gates what the catalogue says, every code exists."""
    assert guide_problems(GUIDE.read_text(encoding="utf-8"), facts()) == []


def _broken(text: str, old: str, new: str) -> str:
    assert old in text, f"the guide no longer holds {old!r}: update this control"
    return text.replace(old, new)


@pytest.mark.parametrize(
    ("old", "new", "problem"),
    [
        pytest.param("delete-09", "delete-99", "delete-99 is no test id", id="an unknown id"),
        pytest.param(
            "delete-09", "delete-02", "delete-09 (tenant-namespace) is tied to no rule", id="a removed id"
        ),
        pytest.param(
            "leak-11[count]", "leak-11[sum]", "leak-11[sum] is no test id", id="an unknown parameter"
        ),
        pytest.param(
            "### `restore(", "### `put_back(", "facade restore has no table", id="a facade without a table"
        ),
        pytest.param(
            "| `client-where` | a reason string in `features` | leak-03, leak-10 |",
            "| `client-where` | a reason string in `features` | leak-03 |",
            "client-where gates ['leak-03', 'leak-10']",
            id="a capability's gated tests",
        ),
        pytest.param(
            "`KB_MANIFEST_INVALID`",
            "`KB_MANIFEST_BROKEN`",
            "KB_MANIFEST_BROKEN is no error code",
            id="an unknown code",
        ),
        pytest.param(
            "`NotFound` (`KB_NOT_FOUND`)",
            "`NotFound` (`KB_FORBIDDEN`)",
            "NotFound has code KB_NOT_FOUND",
            id="a class with another's code",
        ),
        pytest.param(
            "schemas/project-pool.md",
            "schemas/pool.md",
            "does not name its spec doc",
            id="a profile without its spec doc",
        ),
        pytest.param(
            "| `remove_session(session)`",
            "| `drop_session(session)`",
            "remove_session is not in its table",
            id="a pool facade left out",
        ),
        pytest.param(
            "| `move_kb(caller, kb, store)`",
            "| `relocate_kb(caller, kb, store)`",
            "the kb-grant facade move_kb is not in its table",
            id="a kb-grant facade left out",
        ),
    ],
)
def test_the_checker_fails_a_guide_with_one_thing_broken(old: str, new: str, problem: str) -> None:
    """Control: each kind of drift, made in a copy of the guide, is reported."""
    problems = guide_problems(_broken(GUIDE.read_text(encoding="utf-8"), old, new), facts())
    assert any(problem in found for found in problems), problems


def test_the_checker_asks_every_profile_for_a_section() -> None:
    """Control: a profile the guide does not know (a new one) is reported, so a new profile is
    documented; the tenant-namespace rule is scoped to its own ids and ignores the new one's."""
    known = facts()
    grown = Facts(
        catalogue=(*known.catalogue, {"id": "zeta-01", "level": "L1", "suite": "zeta", "profile": "zeta"}),
        facades=known.facades,
        profile_facades=known.profile_facades,
        codes=known.codes,
        profiles=(*known.profiles, "zeta"),
    )
    assert guide_problems(GUIDE.read_text(encoding="utf-8"), grown) == [
        "the zeta profile has no section (## The zeta profile)"
    ]


def test_the_readme_links_the_guide() -> None:
    """README.md's table of what is here names the guide."""
    assert "docs/adapter-guide.md" in (ROOT / "README.md").read_text(encoding="utf-8")


def _skeleton() -> str:
    text = GUIDE.read_text(encoding="utf-8")
    after = text.split("## A skeleton", 1)[1]
    return after.split("```python\n", 1)[1].split("```", 1)[0]


def test_the_skeletons_manifest_is_a_valid_adapter_manifest() -> None:
    """The guide's skeleton declares a valid adapter-manifest-v1 and builds a backend."""
    namespace: dict[str, object] = {}
    exec(compile(_skeleton(), "skeleton.py", "exec"), namespace)  # the guide's own code
    adapter = namespace["adapter"]()  # type: ignore[operator]
    validate(dict(adapter.manifest), "adapter-manifest-v1")
    assert isinstance(adapter, Adapter)
    assert isinstance(adapter.open(namespace["BackendOptions"]()), Backend)  # type: ignore[operator]


def _mypy(code: str, where: Path, cache: Path) -> tuple[str, int]:
    path = where / "skeleton.py"
    path.write_text(code, encoding="utf-8")
    stdout, _, status = api.run(
        [
            "--strict",
            "--cache-dir",
            str(cache),
            "--config-file",
            str(ROOT / "pyproject.toml"),
            str(path),
        ]
    )
    return stdout, status


def test_mypy_strict_accepts_the_skeleton_and_refuses_list_shadowing_the_builtin(
    tmp_path: Path, mypy_cache: Path
) -> None:
    """mypy --strict proves the skeleton satisfies Backend and Adapter; the same skeleton with
    list[...] annotations after `def list` is refused (control: the shadowing the guide warns of)."""
    code = _skeleton()
    output, status = _mypy(code, tmp_path, mypy_cache)
    assert status == 0, output
    shadowed = code.replace("builtins.list[", "list[")
    assert shadowed != code
    output, status = _mypy(shadowed, tmp_path, mypy_cache)
    assert status == 1
    assert "is not valid as a type" in output, output


def _embedding() -> str:
    text = GUIDE.read_text(encoding="utf-8")
    after = text.split("### A store-only backend", 1)[1].split("\n### ", 1)[0]
    return after.split("```python\n", 1)[1].split("```", 1)[0]


def test_the_guides_embedding_is_deterministic_and_finds_a_text_first() -> None:
    """The store-only section's embedding runs as printed: the same text gives the same unit
    vector, each text is nearest to itself among others, and a text of no words is the zero
    vector rather than an error (control: two different texts give different vectors)."""
    namespace: dict[str, object] = {}
    exec(compile(_embedding(), "embedding.py", "exec"), namespace)  # the guide's own code
    embed = namespace["embed"]
    texts = ["deploy the billing service", "rotate the keys", "the shared config file", "Billing"]
    vectors = [embed(t) for t in texts]  # type: ignore[operator]
    assert vectors == [embed(t) for t in texts]  # type: ignore[operator]
    assert len({tuple(v) for v in vectors}) == len(texts)
    for vector in vectors:
        assert len(vector) == namespace["DIMENSIONS"]
        assert abs(sum(x * x for x in vector) - 1.0) < 1e-9
    for i, query in enumerate(vectors):
        scores = [sum(a * b for a, b in zip(query, other, strict=True)) for other in vectors]
        assert max(range(len(texts)), key=scores.__getitem__) == i
    assert embed("") == [0.0] * namespace["DIMENSIONS"]  # type: ignore[operator]
