"""Conformance reports (report-v1): build, verify, and render as a table, Markdown and a badge.

The suite's test list ships as ``suites/catalogue.json``: every stable test id with its suite,
level, required capabilities and the read facade or spoof mode it runs in. From it and a
manifest follows the exact list of tests a run must have (:func:`expected`); a report lacking
one is incomplete, and ``kbconform verify`` rejects it.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import importlib.metadata
import itertools
import json
import os
import platform
import re
import secrets
import tempfile
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlsplit, urlunsplit

import rfc8785

from kbconform._capabilities import applies, caps, declined
from kbconform._levels import LEVELS
from kbconform._resources import data_dir
from kbconform.errors import ContractViolation, Problem
from kbconform.profiles import LEVEL_MEANINGS, names, profile, profile_of

FAILED = ("fail", "error")
REDACTED = "[redacted]"
_SECRET_KEY = re.compile(r"secret|token|passw(or)?d|api[-_]?key|credential|auth|private[-_]?key|dsn", re.I)


@cache
def catalogue() -> tuple[dict[str, Any], ...]:
    """The installed suites' test list: the shipped ``catalogue.json``, and the entries of every
    profile another package registers (``Profile.catalogue``), sorted by id."""
    data = json.loads((data_dir("suites") / "catalogue.json").read_text(encoding="utf-8"))
    tests = list(data["tests"])
    for name in names():
        declared = profile(name)
        if declared.catalogue is not None:
            tests += [dict(entry, profile=name) for entry in declared.load(declared.catalogue)]
    return tuple(sorted(tests, key=lambda test: str(test["id"])))


def list_hash(tests: Iterable[Mapping[str, Any]]) -> str:
    """``sha256:<hex>`` of the RFC 8785 canonical JSON of a test list."""
    return "sha256:" + hashlib.sha256(rfc8785.dumps(list(tests))).hexdigest()


def catalogue_from(*reports: Mapping[str, Any]) -> dict[str, Any]:
    """The test list full reports of maximal manifests give, one report per isolation profile
    (how catalogue.json is made)."""
    tests = {
        test["id"]: {key: value for key, value in test.items() if key not in ("status", "reason", "message")}
        for report in reports
        for test in report["tests"]
    }
    return {
        "description": "Every stable test id of the kbconform suites, with its suite, level, the "
        "capabilities it requires, the read facade or spoof mode it runs in, its isolation "
        "profile (tenant-namespace when absent), the rule it checks (a section of a spec document "
        "in schemas/) and the section of docs/adapter-guide.md that says what it asks. A run must "
        "report each entry its manifest and level select; testListHash is sha256 of the RFC 8785 "
        "form of the tests array.",
        "tests": sorted(tests.values(), key=lambda test: test["id"]),
    }


#: The largest report ``read`` accepts, in bytes (a full run's report is well under 1 MiB).
MAX_REPORT_BYTES = 64 * 1024 * 1024


def read(source: str | Path | IO[bytes]) -> Any:
    """The JSON value of a report (a path, or a binary stream), read strictly: duplicate keys,
    NaN, lone surrogates, over-long integers and deep nesting are refused, and never more than
    :data:`MAX_REPORT_BYTES` is read. Raises ContractViolation (``KB_REPORT_INVALID``); an
    unreadable path raises OSError."""
    from kbconform.contract import loads

    if isinstance(source, (str, Path)):
        with Path(source).open("rb") as stream:
            data = stream.read(MAX_REPORT_BYTES + 1)
    else:
        data = source.read(MAX_REPORT_BYTES + 1)

    def refuse(problem: Problem) -> ContractViolation:
        return ContractViolation(contract="report-v1", problems=(problem,), code="KB_REPORT_INVALID")

    if len(data) > MAX_REPORT_BYTES:
        raise refuse(Problem("", "size", f"a report of at most {MAX_REPORT_BYTES} bytes", "more"))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise refuse(Problem("", "encoding", "UTF-8 text", f"byte {data[error.start]:#04x}")) from None
    try:
        return loads(text)
    except ContractViolation as error:
        raise ContractViolation(
            contract="report-v1", problems=error.problems, code="KB_REPORT_INVALID"
        ) from None


def unwritable(path: str | Path) -> str | None:
    """Why an output file cannot be written at ``path`` (checked before any work), or None.

    Refused: a directory, a path whose directory does not exist, and a directory in which no
    file may be created (permissions, a read-only file system). A symbolic link is judged by
    where it points, as :func:`write` writes there.
    """
    target = Path(os.path.realpath(path))
    if target.is_dir():
        return f"cannot write {str(path)!r}: it is a directory"
    if not target.parent.is_dir():
        return f"cannot write {str(path)!r}: directory {str(target.parent)!r} does not exist"
    try:
        with tempfile.TemporaryFile(dir=target.parent):
            pass
    except OSError as error:
        return f"cannot write {str(path)!r}: {error.strerror or error}"
    return None


def write(path: str | Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` whole or not at all: a reader never sees half a file.

    The text goes to a new temporary file beside the target, reaches the disk (fsync), then is
    renamed over the target. A symbolic link is followed: the file it points to is replaced
    (beside itself) and the link stays. On any failure the temporary file is removed, the
    target is left as it was, and an :class:`OSError` naming ``path`` is raised (the subclass
    says why: ``IsADirectoryError``, ``FileNotFoundError``, ``PermissionError``, ...).
    """
    data = text.encode("utf-8")
    target = Path(os.path.realpath(path))
    if target.is_dir():
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
    partial = target.with_name(f".{target.name}.{secrets.token_hex(4)}.partial")
    try:
        mode = target.stat().st_mode & 0o7777 if target.exists() else None
        descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except OSError as error:
        raise OSError(error.errno, error.strerror, str(path)) from None
    try:
        with os.fdopen(descriptor, "wb") as file:
            if mode is not None:
                os.fchmod(descriptor, mode)  # replacing a file keeps its permissions
            file.write(data)
            file.flush()
            os.fsync(descriptor)
        partial.replace(target)
    except BaseException as error:
        with contextlib.suppress(OSError):
            partial.unlink()
        if isinstance(error, OSError):
            raise OSError(error.errno, error.strerror, str(path)) from None
        raise
    with contextlib.suppress(OSError):  # the rename itself survives a crash once its directory is synced
        directory = os.open(target.parent, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)


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
            problems=tuple(
                Problem("", "only", "a test id or glob of the catalogue", repr(p)) for p in unmatched
            ),
            code="KB_SELECTION_INVALID",
        )
    return list(chosen)


def unknown_ids(ids: Iterable[str]) -> list[str]:
    """The ``ids`` the installed catalogue does not list, sorted."""
    return sorted(set(ids) - {entry["id"] for entry in catalogue()})


def redact(value: Any) -> Any:
    """``value`` with values under secret-looking keys and passwords inside URLs replaced."""
    if isinstance(value, Mapping):
        return {
            key: REDACTED
            if _SECRET_KEY.search(str(key)) and value[key] not in (None, "")
            else redact(value[key])
            for key in value
        }
    if isinstance(value, list):
        return [redact(item) for item in value]
    if isinstance(value, str) and "://" in value:
        parts = urlsplit(value)
        if parts.password:
            netloc = f"{parts.username}:{REDACTED}@{parts.hostname}" + (
                f":{parts.port}" if parts.port else ""
            )
            return urlunsplit(parts._replace(netloc=netloc))
    return value


#: The most characters of a failing test's ``message`` (report-v1's ``maxLength``).
MAX_MESSAGE = 2000
_ANSI = re.compile(r"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)?|[@-Z\\-_])")
_UNPRINTABLE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]|[\ud800-\udfff]")
_URL_PASSWORD = re.compile(r"(\b[a-z][a-z0-9+.-]*://[^\s/?#@:]*:)[^\s/?#@]+@", re.I)


def secrets_of(value: Any, hidden: bool = False) -> set[str]:
    """The strings :func:`redact` hides in ``value`` (a manifest's config): every string (and
    number) under a secret-looking key, and every password inside a URL."""
    found: set[str] = set()
    if isinstance(value, Mapping):
        for key, item in value.items():
            secret = bool(_SECRET_KEY.search(str(key))) and item not in (None, "")
            found |= secrets_of(item, hidden or secret)
    elif isinstance(value, list):
        for item in value:
            found |= secrets_of(item, hidden)
    elif isinstance(value, str):
        if hidden:
            found.add(value)
        elif "://" in value:
            password = urlsplit(value).password
            if password:
                found.add(password)
    elif isinstance(value, (int, float)) and not isinstance(value, bool) and hidden:
        found.add(str(value))
    return {secret for secret in found if secret}


def _escaped(match: re.Match[str]) -> str:
    code = ord(match[0])
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def message(text: str, hidden: Iterable[str] = ()) -> str | None:
    """A failing test's message as a report records it, or None when nothing is left: terminal
    colour sequences dropped, every ``hidden`` string (:func:`secrets_of` the config) and every
    password inside a URL replaced by ``[redacted]``, control characters other than newline and
    tab and lone surrogates shown as ``\\xNN`` / ``\\uNNNN``, blank space around it trimmed, and
    cut to :data:`MAX_MESSAGE` characters, the last of them saying how many more there were."""
    shown = _hide(_ANSI.sub("", text), sorted(set(hidden), key=len, reverse=True))
    shown = _UNPRINTABLE.sub(_escaped, shown).strip()
    if len(shown) > MAX_MESSAGE:
        room = MAX_MESSAGE - len(f" \u2026 ({len(shown):,} more characters)")
        shown = f"{shown[:room]} \u2026 ({len(shown) - room:,} more characters)"
    return shown or None


def _hide(text: str, hidden: list[str]) -> str:
    """``text`` with each ``hidden`` string (longest first) and every URL password replaced by
    ``[redacted]``."""
    for secret in hidden:
        text = text.replace(secret, REDACTED)
    return _URL_PASSWORD.sub(rf"\g<1>{REDACTED}@", text)


def _with_message(entry: Mapping[str, Any], hidden: Iterable[str]) -> dict[str, Any]:
    """A result as the report lists it: a failing or erroring test's ``message`` cleaned by
    :func:`message` and its ``transcript`` scrubbed by :func:`_scrubbed`; any other test
    carries neither."""
    kept = {key: value for key, value in entry.items() if key not in ("message", "transcript")}
    given = entry.get("message")
    if kept.get("status") in FAILED and isinstance(given, str):
        shown = message(given, hidden)
        if shown is not None:
            kept["message"] = shown
    recorded = entry.get("transcript")
    if kept.get("status") in FAILED and isinstance(recorded, list) and recorded:
        kept["transcript"] = _scrubbed(recorded, sorted(set(hidden), key=len, reverse=True))
    return kept


def _scrubbed(value: Any, hidden: list[str]) -> Any:
    """``value`` (a transcript) with every ``hidden`` string and URL password inside its string
    values replaced by ``[redacted]``; keys and structure as they are."""
    if isinstance(value, str):
        return _hide(value, hidden)
    if isinstance(value, Mapping):
        return {key: _scrubbed(item, hidden) for key, item in value.items()}
    if isinstance(value, list):
        return [_scrubbed(item, hidden) for item in value]
    return value


def levels(
    tests: Iterable[Mapping[str, Any]], manifest: Mapping[str, Any], *, partial: bool = False
) -> dict[str, dict[str, Any]]:
    """Counts per level; a level is earned when it has a passing test and every test in it and in
    every lower level passed or was skipped for a capability ``manifest`` declines by design.
    Such a capability never caps a level: the level names it (``declined``), for the verdict
    rests on that design. A skip for a declined probe (``Profile.probes``) or for no declined
    capability counts against the level (:func:`kbconform._capabilities.caps`). A ``partial``
    run (of a selection of tests) earns no level."""
    counts: dict[str, Counter[str]] = {level: Counter() for level in LEVELS}
    designed: dict[str, set[str]] = {level: set() for level in LEVELS}
    for test in tests:
        level, status, required = test["level"], test["status"], test.get("requires", ())
        counts[level][status] += 1
        if status == "skip" and not caps(manifest, required):
            counts[level]["by design"] += 1
            designed[level] |= set(declined(manifest, required))
    verdicts: dict[str, dict[str, Any]] = {}
    clean_below = not partial
    for level in LEVELS:
        count = counts[level]
        clean = count["pass"] + count["by design"] == sum(count[s] for s in ("pass", "fail", "error", "skip"))
        verdicts[level] = {
            "earned": clean_below and clean and count["pass"] > 0,
            **{status: count[status] for status in ("pass", "fail", "error", "skip")},
            "declined": sorted(designed[level]),
        }
        clean_below = clean_below and clean
    return verdicts


def status_changes(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[tuple[str, Any, Any]]:
    """Each name whose value differs between ``before`` and ``after`` (a test's status, a
    level's verdict), with both values, sorted by name; ``absent`` where one lacks it."""
    return [
        (name, before.get(name, "absent"), after.get(name, "absent"))
        for name in sorted(set(before) | set(after))
        if before.get(name) != after.get(name)
    ]


def selection(report: Mapping[str, Any]) -> list[str] | None:
    """The test ids a partial run selected, or None for a full run."""
    chosen = report["execution"].get("selection")
    return None if chosen is None else list(chosen)


def build(
    *,
    adapter: str,
    manifest: Mapping[str, Any],
    seed: int,
    profile: str,
    level: str,
    results: Iterable[Mapping[str, Any]],
    execution: Mapping[str, Any],
    harness: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The report of a run: ``results`` are the entries the plugin recorded. ``harness`` says
    how a harness-v1 harness was reached (``adapter`` is then its command or URL). Every expected test
    without a result is added as an error. ``execution["selection"]`` (None: every test) names
    the tests a partial run selected: only they are expected, and no level is earned."""
    chosen = execution.get("selection")
    hidden = secrets_of(manifest.get("config"))
    tests = {entry["id"]: _with_message(entry, hidden) for entry in results}
    wanted = expected(manifest, level, chosen)
    missing = sorted(entry["id"] for entry in wanted if entry["id"] not in tests)
    why = (
        f"did not run: the run stopped after {execution['maxfail']} failing tests (--maxfail)"
        if stopped(execution, tests.values())
        else "did not run: not collected, deselected, or the run stopped before it"
    )
    for entry in wanted:
        if entry["id"] in missing:
            tests[entry["id"]] = {**entry, "status": "error", "reason": why}
    known = {entry["id"] for entry in catalogue()}
    listed = sorted(tests.values(), key=lambda entry: entry["id"])
    shown = {**manifest, **({"config": redact(manifest["config"])} if "config" in manifest else {})}
    return {
        "reportVersion": "1",
        "suiteVersion": suite_version(),
        "testListHash": list_hash(catalogue()),
        "manifest": shown,
        "config": {
            "adapter": redact(adapter),
            **({"harness": redact(dict(harness))} if harness is not None else {}),
            **({"backend": shown["config"]} if "config" in shown else {}),
        },
        "seed": seed,
        "profile": profile,
        "level": level,
        "environment": {
            "python": platform.python_version(),
            "platform": platform.platform(terse=True),
            **{name: importlib.metadata.version(name) for name in ("pytest", "hypothesis")},
        },
        "execution": {**execution, "selection": None if chosen is None else sorted(set(chosen))},
        "levels": levels(listed, manifest, partial=chosen is not None),
        "completeness": {"missing": missing, "unknown": sorted(set(tests) - known)},
        "tests": listed,
    }


def stopped(execution: Mapping[str, Any], tests: Iterable[Mapping[str, Any]]) -> bool:
    """Whether a run stopped at its ``maxfail`` (pytest's ``--maxfail``; ``kbconform run
    --fail-fast`` is 1): it has that many failing ``tests`` (those that ran), so the tests it did
    not reach are missing by design, not by accident."""
    limit = execution.get("maxfail") or 0
    return limit > 0 and sum(1 for test in tests if test.get("status") in FAILED) >= limit


def reached(report: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The tests a built report's run reached: every test not recorded as missing."""
    missing = set(report["completeness"]["missing"])
    return [test for test in report["tests"] if test["id"] not in missing]


def failing(report: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The tests a built report's run failed or erred at: of a run stopped at its maxfail, only
    those it reached (the rest did not run)."""
    judged = reached(report) if halted(report) else report["tests"]
    return [test for test in judged if test["status"] in FAILED]


def halted(report: Mapping[str, Any]) -> bool:
    """Whether a built report's run stopped at its ``maxfail`` (:func:`stopped`, over the tests
    it reached): its missing tests were not reached, by design."""
    return bool(report["completeness"]["missing"]) and stopped(report["execution"], reached(report))


def verify(report: object) -> None:
    """Raise ContractViolation (``KB_REPORT_INVALID``) unless ``report`` is a valid report-v1 of
    the installed suites (version and test-list hash) from a complete run: every test its
    manifest and level select (of a partial run: and its selection names), no other, none
    recorded as missing, and the levels its tests earn (none, for a partial run). A report of a
    failing run can be valid: this checks the evidence, not the verdict; :func:`selection` says
    whether it is partial."""
    from kbconform.adapter import Manifest
    from kbconform.contract import validate

    inner = False  # the manifest is checked as its profile says (adapter-manifest-v1 if built in)
    try:
        validate(report, "report-v1")
        assert isinstance(report, Mapping)
        inner = True
        Manifest.from_mapping(report["manifest"])
    except ContractViolation as error:
        moved = tuple(
            Problem(f"/manifest{p.pointer}" if inner else p.pointer, p.keyword, p.expected, p.got)
            for p in error.problems
        )
        raise ContractViolation(contract="report-v1", problems=moved, code="KB_REPORT_INVALID") from None
    problems: list[Problem] = []

    def differs(pointer: str, keyword: str, want: str, got: str) -> None:
        problems.append(Problem(pointer, keyword, want, got))

    if report["suiteVersion"] != suite_version():
        differs(
            "/suiteVersion",
            "suiteVersion",
            f"{suite_version()} (the installed suites)",
            report["suiteVersion"],
        )
    if report["testListHash"] != list_hash(catalogue()):
        want = f"{list_hash(catalogue())} (the installed test list)"
        differs("/testListHash", "testListHash", want, report["testListHash"])
    ids = [test["id"] for test in report["tests"]]
    repeated = sorted(i for i, n in Counter(ids).items() if n > 1)
    if repeated:
        differs("/tests", "tests", "each stable id once", f"repeated: {', '.join(repeated)}")
    chosen = selection(report)
    if chosen is not None:
        strangers = unknown_ids(chosen)
        if strangers:
            want = "a selection of tests the suite lists"
            differs("/execution/selection", "selection", want, f"unknown: {', '.join(strangers)}")
    wanted = {entry["id"]: entry for entry in expected(report["manifest"], report["level"], chosen)}
    missing = sorted(set(wanted) - set(ids))
    if missing:
        want = "every test of the suite" if chosen is None else "every selected test"
        differs("/tests", "completeness", want, f"missing: {', '.join(missing)}")
    unknown = sorted(set(ids) - set(wanted))
    if unknown:
        want = f"only tests the suite lists for level {report['level']} and this manifest" + (
            "" if chosen is None else ", of those selected"
        )
        differs("/tests", "completeness", want, f"unknown: {', '.join(unknown)}")
    recorded = report["completeness"]["missing"] + report["completeness"]["unknown"]
    if halted(report):  # a run that stopped at its maxfail is evidence of failing
        recorded = report["completeness"]["unknown"]
    if recorded:
        differs(
            "/completeness",
            "completeness",
            "a complete run",
            f"tests not run or not listed: {', '.join(recorded)}",
        )
    for index, test in enumerate(report["tests"]):
        entry = wanted.get(test["id"])
        if entry is not None and (test["suite"], test["level"]) != (entry["suite"], entry["level"]):
            want = f"suite {entry['suite']} at {entry['level']}"
            differs(f"/tests/{index}", "tests", want, f"suite {test['suite']} at {test['level']}")
    # each test's capabilities as the catalogue lists them, not as the report says
    catalogued = [
        {**test, "requires": wanted[test["id"]].get("requires", [])}
        for test in report["tests"]
        if test["id"] in wanted
    ]
    earned = levels(catalogued, report["manifest"], partial=chosen is not None)
    if report["levels"] != earned:
        changed = [lv for lv in LEVELS if report["levels"].get(lv) != earned[lv]]
        differs(
            "/levels",
            "levels",
            "the verdicts its tests give: " + "; ".join(_verdict(lv, earned[lv]) for lv in changed),
            "the report claims: " + "; ".join(_verdict(lv, report["levels"].get(lv)) for lv in changed),
        )
    if problems:
        raise ContractViolation(contract="report-v1", problems=tuple(problems), code="KB_REPORT_INVALID")


def _verdict(level: str, verdict: Mapping[str, Any] | None) -> str:
    """A level's verdict in words, every count shown: ``L2 earned (pass 3, fail 0, ...)``."""
    if not isinstance(verdict, Mapping):
        return f"{level} absent"
    counts = ", ".join(f"{status} {verdict.get(status)}" for status in _SHOWN)
    said = "earned" if verdict.get("earned") is True else "not earned"
    return f"{level} {said} ({counts}){declined_words(verdict.get('declined') or ())}"


def declined_words(names: Iterable[str]) -> str:
    """``(declined: workspace-scan, sync)``: the declined capabilities a verdict rests on, as
    every rendering says them after the level; "" for none."""
    chosen = list(names)
    return f" (declined: {', '.join(chosen)})" if chosen else ""


def _word(level: str, verdict: Mapping[str, Any]) -> str:
    """``L3 earned``, ``L3 not earned``, or ``L3 earned (declined: workspace-scan)``."""
    said = f"{level} {'earned' if verdict['earned'] else 'not earned'}"
    return said + declined_words(verdict.get("declined") or ())


def rests_on(report: Mapping[str, Any]) -> tuple[str, ...]:
    """The capabilities the manifest declines that skipped a test at or below the highest level
    earned: the design that level's verdict rests on (none when no level is earned)."""
    verdicts = level_verdicts(report)
    top = _highest(verdicts)
    if top is None:
        return ()
    below = (verdicts[lv] for lv in LEVELS[: LEVELS.index(top) + 1] if lv in verdicts)
    return tuple(sorted({name for verdict in below for name in verdict["declined"]}))


# -- rendering --------------------------------------------------------------------------------

_SHOWN = ("pass", "fail", "error", "skip")


def _rows(report: Mapping[str, Any]) -> tuple[list[tuple[str, str]], Counter[tuple[str, str, str]]]:
    counts: Counter[tuple[str, str, str]] = Counter(
        (t["level"], t["suite"], t["status"]) for t in report.get("tests", ())
    )
    return sorted({(level, suite) for level, suite, _ in counts}), counts


def catalogued_levels(report: Mapping[str, Any]) -> tuple[str, ...]:
    """The levels the catalogue has tests at for this run (its isolation profile, manifest and
    level, and of a partial run its selection): the only levels a report may name."""
    found = {entry["level"] for entry in expected(report["manifest"], report["level"], selection(report))}
    return tuple(level for level in LEVELS if level in found)


def level_verdicts(report: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Per level the catalogue has tests at for this run, the verdict the report's own test
    statuses give, each test counted at its catalogued level (a test the catalogue expects and
    the report lacks counts as an error; one it does not list counts not at all). Computed, never
    read from the report's ``levels``: a level with no catalogue test is never named, let alone
    earned."""
    wanted = {
        entry["id"]: entry for entry in expected(report["manifest"], report["level"], selection(report))
    }
    given = {test.get("id"): test.get("status") for test in report.get("tests", ())}
    tests = [{**entry, "status": given.get(stable, "error")} for stable, entry in wanted.items()]
    verdicts = levels(tests, report["manifest"], partial=selection(report) is not None)
    return {level: verdicts[level] for level in catalogued_levels(report)}


def earned(report: Mapping[str, Any]) -> str | None:
    """The highest level earned (by :func:`level_verdicts`), or None."""
    return _highest(level_verdicts(report))


def _highest(verdicts: Mapping[str, Mapping[str, Any]]) -> str | None:
    won = [level for level, verdict in verdicts.items() if verdict["earned"]]
    return max(won, key=LEVELS.index) if won else None


def design(report: Mapping[str, Any]) -> tuple[str, ...]:
    """The policy choices the report's manifest declares (``Profile.design``): what its verdict
    is judged against, shown beside the level."""
    manifest = report["manifest"]
    name = profile_of(manifest)
    return profile(name).design(manifest) if name in names() else ()


def design_line(report: Mapping[str, Any]) -> str:
    """``judged against its declared design: ...`` (empty when the profile declares none)."""
    chosen = design(report)
    return f"judged against its declared design: {'; '.join(chosen)}" if chosen else ""


def level_line(report: Mapping[str, Any]) -> str:
    """One line: what each level of this run means, and how a level is earned (with what a
    declined capability does to it, and the profile's probes that are the exception)."""
    name = profile_of(report["manifest"])
    known = profile(name) if name in names() else None
    meanings = known.levels if known is not None else LEVEL_MEANINGS
    shown = "; ".join(f"{level} {meanings[level]}" for level in catalogued_levels(report))
    probes = known.probes if known is not None else ()
    but = f" (but {', '.join(probes)}, without which a rule cannot be observed)" if probes else ""
    return (
        f"levels: {shown}. A level is earned when every test in it and below passes; a capability"
        f" the manifest declines skips its tests, is named beside the level and never caps it{but}."
    )


def table(report: Mapping[str, Any]) -> str:
    """Counts per level and suite, then the level verdicts."""
    groups, counts = _rows(report)
    lines = [f"{'level':<6} {'suite':<20} " + " ".join(f"{s:>5}" for s in _SHOWN)]
    for level, suite in groups:
        lines.append(f"{level:<6} {suite:<20} " + " ".join(f"{counts[(level, suite, s)]:>5}" for s in _SHOWN))
    verdicts = ", ".join(
        _word(level, v) for level, v in report["levels"].items() if sum(v[s] for s in _SHOWN)
    )
    lines.append(f"\nlevels: {verdicts or 'no tests ran'}; highest earned: {earned(report) or 'none'}")
    if design(report):
        lines.append(design_line(report))
    missing = report["completeness"]["missing"]
    if halted(report):
        lines.append(
            f"stopped after {report['execution']['maxfail']} failing tests: {len(missing)} not reached"
        )
    elif missing:
        lines.append(f"incomplete: {len(missing)} suite tests did not run")
    chosen = selection(report)
    if chosen is not None:
        lines.append(f"partial: a run of {len(chosen)} selected tests, which earns no level")
    return "\n".join(lines)


def summary(report: Mapping[str, Any]) -> str:
    """Markdown for a CI step summary."""
    manifest = report["manifest"]
    groups, counts = _rows(report)
    failing = [t for t in report["tests"] if t["status"] in FAILED]
    skipped = [t for t in report["tests"] if t["status"] == "skip"]
    lines = [
        "## kbconform conformance",
        "",
        f"**{manifest['adapter']['name']} {manifest['adapter']['version']}** on "
        f"**{manifest['backend']['name']} {manifest['backend']['version']}**: "
        f"highest level earned **{earned(report) or 'none'}**; "
        f"{len(failing)} failing, {len(skipped)} skipped of {len(report['tests'])} tests.",
        "",
        f"Suites {report['suiteVersion']} (`{report['testListHash'][:19]}`), level {report['level']}, "
        f"profile {report['profile']}, seed `{report['seed']}`."
        + (f" {design_line(report).capitalize()}." if design(report) else "")
        + (
            ""
            if selection(report) is None
            else f" A partial run of {len(selection(report) or ())} selected tests: it earns no level."
        ),
        "",
        "Levels: "
        + (
            ", ".join(_word(level, verdict) for level, verdict in level_verdicts(report).items())
            or "none with tests in this run"
        )
        + ".",
        "",
        "| level | suite | " + " | ".join(_SHOWN) + " |",
        "|---|---|" + "---:|" * len(_SHOWN),
    ]
    lines += [
        f"| {level} | {suite} | " + " | ".join(str(counts[(level, suite, s)]) for s in _SHOWN) + " |"
        for level, suite in groups
    ]
    if failing:
        lines += ["", "### Failing", ""] + [_failing(t) for t in failing]
    if skipped:
        lines += ["", "### Skipped (declined in the manifest)", ""]
        lines += [f"- `{t['id']}`: {_plain(str(t.get('reason', '')))}" for t in skipped]
    return "\n".join(lines) + "\n"


#: The most characters of a failing test's message the Markdown summary shows (its first line).
SUMMARY_MESSAGE = 200
_MARKDOWN = re.compile(r"[\\`*_{}\[\]<>|~#!&]")


def not_implemented(tests: Iterable[Mapping[str, Any]]) -> list[tuple[str, list[Mapping[str, Any]]]]:
    """The tests that ended at a call the backend has not implemented yet (``notImplemented``),
    grouped by that call: the call most tests ended at first, then by name."""
    by_call: dict[str, list[Mapping[str, Any]]] = {}
    for test in tests:
        if "notImplemented" in test:
            by_call.setdefault(str(test["notImplemented"]), []).append(test)
    return sorted(by_call.items(), key=lambda kv: (-len(kv[1]), kv[0]))


#: An adapter factory, ``module:attribute``.
_FACTORY = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*")


def served_adapter(config: Mapping[str, Any]) -> str | None:
    """The Python adapter (``module:factory``) a report's run tested, in process or served by
    ``kbconform serve`` (as ``kbconform run --adapter`` serves it); None for a harness."""
    target = str(config.get("adapter", ""))
    if _FACTORY.fullmatch(target):
        return target
    harness = config.get("harness")
    command = harness.get("command") if isinstance(harness, Mapping) else None
    words = command.split() if isinstance(command, str) else []
    for before, word in itertools.pairwise(words):
        if before == "serve" and _FACTORY.fullmatch(word):
            return word
    return None


def _quoted(word: str) -> str:
    return word if re.fullmatch(r"[\w@%+=:,./-]+", word) else "'" + word.replace("'", "'\\''") + "'"


def _target(config: Mapping[str, Any], url: str) -> list[str]:
    """The arguments naming what a report's run tested, for ``kbconform run`` or ``replay``
    (``url``: the option naming a harness-v1 server); empty when the report names nothing a
    command can reach."""
    harness = config.get("harness")
    adapter = served_adapter(config)
    if adapter is not None:
        return ["--adapter", adapter]
    if isinstance(harness, Mapping) and "url" in harness:
        return [url, str(harness["url"])]
    if isinstance(harness, Mapping) and "command" in harness:
        return ["--harness", str(harness["command"])]
    return []


def rerun_command(report: Mapping[str, Any], test: Mapping[str, Any]) -> str:
    """The command that runs ``test`` again against what the report's run tested, with its seed
    and profile (a failure reproduces from them)."""
    target = _target(report["config"], "--harness-url") or ["--adapter", str(report["config"]["adapter"])]
    words = ["kbconform", "run", *target, "--only", str(test["id"]), "--seed", str(report["seed"])]
    if report.get("profile") not in (None, "quick"):
        words += ["--profile", str(report["profile"])]
    return " ".join(map(_quoted, words))


def replay_command(
    report: Mapping[str, Any], test: Mapping[str, Any], path: str = "REPORT.json"
) -> str | None:
    """The command that sends ``test``'s recorded harness-v1 exchanges (its ``transcript``) to
    the backend again (``kbconform replay``), with the report at ``path``; None for a test
    that has no transcript."""
    target = _target(report["config"], "--url")
    if not test.get("transcript") or not target:
        return None
    return " ".join(map(_quoted, ["kbconform", "replay", path, "--test", str(test["id"]), *target]))


def unshrunk(report: Mapping[str, Any]) -> bool:
    """Whether the run reported each failing example as first found, not shrunk (``--no-shrink``;
    an older report, without ``execution.shrink``, shrank)."""
    return report["execution"].get("shrink", True) is False


#: Said of a run that did not shrink, where its failures are shown.
UNSHRUNK = (
    "failing examples were not shrunk (--no-shrink): each is the first found; rerun without it "
    "for the shortest"
)


#: The OWASP Top 10 for LLM Applications 2025 category of every kbconform rule: each is an
#: access rule of a vector store or knowledge base (unauthorized access and data leakage,
#: cross-context leaks, writes into another tenant's scope). The SARIF log tags each rule with
#: it, and the HTML report names it beside each failure's rule.
OWASP = "OWASP LLM08:2025 Vector and Embedding Weaknesses"

#: Said of a failing test whose shrinking stopped at the run's budget (``shrinkStopped``).
SHRINK_STOPPED = (
    "shrinking stopped at the run's shrink budget: a shorter failing example may exist "
    "(--shrink-budget SECONDS)"
)

#: How many failing tests a terminal names one by one (the report holds every one).
FAILURES_SHOWN = 20


def failure_lines(tests: Sequence[Mapping[str, Any]], shown: int = FAILURES_SHOWN) -> list[str]:
    """Lines naming the first ``shown`` of ``tests`` (failing ones, none ended at a call not
    implemented yet), each as its status, id, level, suite and the first line of its message,
    then, when the test declares them, the rule it checks (its spec section in schemas/) and
    the adapter guide's section that says what it asks, and whether its shrinking stopped at
    the budget; and a line counting the rest."""
    lines = []
    for test in tests[:shown]:
        said = first_line(test) or str(test.get("reason", ""))
        lines.append(f"  {test['status'].upper()} {test['id']} ({test['level']} {test['suite']}): {said}")
        where = [f"rule: schemas/{test['rule']}"] if test.get("rule") else []
        where += [f"guide: docs/adapter-guide.md#{test['guide']}"] if test.get("guide") else []
        if where:
            lines.append("      " + "; ".join(where))
        if test.get("shrinkStopped"):
            lines.append(f"      {SHRINK_STOPPED}")
    if len(tests) > shown:
        lines.append(
            f"  and {len(tests) - shown} more failing tests: the report (--report) has every message"
        )
    return lines


def first_line(test: Mapping[str, Any]) -> str:
    """The first non-empty line of a test's message, at most :data:`SUMMARY_MESSAGE`
    characters (empty when it has none)."""
    given = test.get("message")
    if not isinstance(given, str):
        return ""
    first = next((part.strip() for part in (message(given) or "").splitlines() if part.strip()), "")
    return first[: SUMMARY_MESSAGE - 1] + "\u2026" if len(first) > SUMMARY_MESSAGE else first


def _failing(test: Mapping[str, Any]) -> str:
    """A failing test's line in the summary: its id, status and the first line of its message
    (:func:`first_line`), as plain text: every character Markdown or HTML would read as markup
    is escaped, so a message cannot add a link, an element or a cell."""
    line = f"- `{test['id']}` ({test['status']})"
    shown = _plain(first_line(test))
    return f"{line}: {shown}" if shown else line


def _plain(text: str) -> str:
    """``text`` with every character Markdown or HTML would read as markup escaped, on one line."""
    return _MARKDOWN.sub(lambda match: "\\" + match[0], " ".join(text.split()))


def badge(report: Mapping[str, Any]) -> dict[str, Any]:
    """A shields.io endpoint badge: the highest level earned, the declined capabilities its
    verdict rests on (:func:`rests_on`) and any failures; red on a failure, yellow when a
    declined feature skipped a test, green otherwise."""
    failing = sum(1 for t in report["tests"] if t["status"] in FAILED)
    level = earned(report)
    message = f"{level}" if level else "no level"
    message += declined_words(rests_on(report))
    if failing:
        message += f" | {failing} failing"
    skipped = any(t["status"] == "skip" for t in report["tests"])
    color = "red" if failing else ("yellow" if skipped or not level else "brightgreen")
    return {"schemaVersion": 1, "label": "kbconform", "message": message, "color": color}
