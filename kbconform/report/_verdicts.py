"""Levels earned and their words: verdicts per level from test statuses, a partial or stopped
run, the declared design a verdict rests on, and how each rendering says a level."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from kbconform._capabilities import caps, declined
from kbconform._levels import LEVELS, bars_higher, recall_only
from kbconform.profiles import LEVEL_MEANINGS, Declared, names, profile, profile_of
from kbconform.report._catalogue import expected

FAILED = ("fail", "error")
_SHOWN = ("pass", "fail", "error", "skip")


def levels(
    tests: Iterable[Mapping[str, Any]], manifest: Mapping[str, Any], *, partial: bool = False
) -> dict[str, dict[str, Any]]:
    """Counts per level; a level is earned when it has a passing test and every test in it and in
    every lower level passed or was skipped for a capability ``manifest`` declines by design.
    Such a capability never caps a level: the level names it (``declined``), for the verdict
    rests on that design. A skip for a declined probe (``Profile.probes``) or for no declined
    capability counts against the level (:func:`kbconform._capabilities.caps`). A ``partial``
    run (of a selection of tests) earns no level. An L0 not earned bars no higher level of a
    manifest declaring its own looser record schema (:func:`kbconform._levels.bars_higher`).
    A failure whose test said it charges recall alone (:func:`kbconform._levels.recall_only`:
    a read that showed less than its scope and nothing of another's) is a note counted as
    ``recall``, and bars no level."""
    counts: dict[str, Counter[str]] = {level: Counter() for level in LEVELS}
    designed: dict[str, set[str]] = {level: set() for level in LEVELS}
    for test in tests:
        level, status, required = test["level"], test["status"], test.get("requires", ())
        counts[level][status] += 1
        if recall_only(test):
            counts[level]["recall"] += 1
        if status == "skip" and not caps(manifest, required):
            counts[level]["by design"] += 1
            designed[level] |= set(declined(manifest, required))
    verdicts: dict[str, dict[str, Any]] = {}
    clean_below = not partial
    for level in LEVELS:
        count = counts[level]
        noted = count["pass"] + count["by design"] + count["recall"]
        clean = noted == sum(count[s] for s in ("pass", "fail", "error", "skip"))
        verdicts[level] = {
            "earned": clean_below and clean and count["pass"] > 0,
            **{status: count[status] for status in ("pass", "fail", "error", "skip")},
            "declined": sorted(designed[level]),
            **({"recall": count["recall"]} if count["recall"] else {}),
        }
        clean_below = clean_below and (clean or not bars_higher(level, manifest))
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
    given = {test.get("id"): test for test in report.get("tests", ())}
    tests = [
        {
            **entry,
            "status": given.get(stable, {}).get("status", "error"),
            "effect": given.get(stable, {}).get("effect"),
        }
        for stable, entry in wanted.items()
    ]
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


def declared_design(manifest: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Each design choice ``manifest`` declares (``Profile.declared``), as report-v1's
    ``declared`` says it: ``{design, price, honoured}``."""
    name = profile_of(manifest)
    found = profile(name).declared(manifest) if name in names() else ()
    return [{"design": d.design, "price": d.price, "honoured": d.honoured} for d in found]


def price_line(report: Mapping[str, Any]) -> str:
    """``its declared design's price: ...``, each priced declaration in one phrase (empty when
    none is priced): what the level rests on, beside it."""
    said = [
        Declared(**d).line()
        for d in declared_design(report["manifest"])
        if d["price"] is not None or not d["honoured"]
    ]
    return f"its declared design's price: {'; '.join(said)}" if said else ""


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


def turns_line(report: Mapping[str, Any]) -> str:
    """What the concurrency suite's passes mean when the run reached its backend through a
    harness on stdio, which carries one request at a time (``schemas/concurrency.md``): the
    callers took turns, so state kept between requests can show, a race cannot. Empty for any
    other run, or one where no concurrency test ran."""
    harness = report.get("config", {}).get("harness")
    if not (isinstance(harness, Mapping) and "command" in harness):
        return ""
    ran = [
        str(t["id"])
        for t in report["tests"]
        if t.get("suite") == "concurrency" and t["status"] in ("pass", *FAILED)
    ]
    if not ran:
        return ""
    return (
        f"callers at once took turns ({len(ran)} concurrency tests): harness-v1 on stdio carries one "
        "request at a time, so state kept between requests can show and a race cannot; serve the "
        "backend over HTTP (kbconform run --transport http) to judge races"
    )
