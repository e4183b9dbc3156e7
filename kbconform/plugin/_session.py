"""The end of a run: the report built from the gathered results (completeness, how the suites
ran) and written, and the terminal's summary of it."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

from kbconform.plugin._options import shrink_budget
from kbconform.plugin._stash import (
    DECLINED,
    HARNESS,
    REPORT,
    RESULTS,
    RUN,
    SELECTION,
    SPEC,
    STOPPED,
    case,
    stable_id,
)

#: The plugin's hooks module, as pytest loads it: the one plugin the report does not list.
_HOOKS = "kbconform.pytest_plugin"


def finish(session: pytest.Session) -> None:
    """Build the report; a suite test that did not run fails the run (completeness)."""
    config = session.config
    run = config.stash.get(RUN, None)
    if run is None or config.option.collectonly or hasattr(config, "workerinput"):
        return  # a pytest-xdist worker's results go to the controller, which reports
    from kbconform import report as reports

    stopped = config.stash.get(STOPPED, None)
    if stopped is not None:  # every test the run did not reach is an error saying why
        results = config.stash[RESULTS]
        ran = {result["id"] for result in results.values()}
        chosen = _applicable(run, config.stash[SELECTION])
        declined = _declined(session)
        for entry in reports.expected(run.manifest.raw, run.level, chosen):
            if entry["id"] in declined:  # skipped all the same: the manifest declines it
                unrun = {**entry, "status": "skip", "reason": declined[entry["id"]]}
            else:
                unrun = {**entry, "status": "error", "reason": stopped, "message": stopped}
            if entry["id"] not in ran:
                results[f"not run: {entry['id']}"] = unrun
    report = reports.build(
        adapter=config.stash[SPEC],
        harness=config.stash[HARNESS],
        manifest=run.manifest.raw,
        seed=run.seed,
        profile=run.profile,
        level=run.level,
        results=config.stash[RESULTS].values(),
        execution=_execution(config, run.call_timeout, _applicable(run, config.stash[SELECTION])),
    )
    config.stash[REPORT] = report
    completeness = report["completeness"]
    if (completeness["missing"] or completeness["unknown"]) and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    path = config.getoption("kbconform_report")
    if path:
        reports.write(
            path, json.dumps(report, indent=2) + "\n"
        )  # keys in order: a transcript's requests as sent


def _declined(session: pytest.Session) -> dict[str, str]:
    """The stable ids of the collected suite tests the manifest declines, with the reason."""
    reasons = session.config.stash[DECLINED]
    found: dict[str, str] = {}
    for item in session.items:
        mark = case(item)
        if mark is not None and item.nodeid in reasons:
            found[stable_id(item, mark)] = reasons[item.nodeid]
    return found


def _applicable(run: Any, chosen: frozenset[str] | None) -> frozenset[str] | None:
    """Of a selection (made against the whole catalogue, every profile's), the ids this run's
    manifest and level select: what the partial run is of."""
    if chosen is None:
        return None
    from kbconform import report as reports

    return frozenset(e["id"] for e in reports.expected(run.manifest.raw, run.level, chosen))


def _execution(config: pytest.Config, call_timeout: float, chosen: frozenset[str] | None) -> dict[str, Any]:
    """How the suites ran: every plugin pytest loaded besides its own, whether installed plugins
    were loaded automatically, the number of pytest-xdist workers, the call deadline, after how
    many failing tests the run stops (pytest's ``--maxfail``, 0: never), the tests a partial
    run selected (None: all), and whether a failing example was shrunk (``--kbconform-no-shrink``:
    not; the failing example reported is the first found)."""
    plugins: set[str] = set()
    distributed = set()
    for plugin, dist in config.pluginmanager.list_plugin_distinfo():
        plugins.add(f"{dist.project_name} {dist.version}")
        distributed.add(id(plugin))
    for name, plugin in config.pluginmanager.list_name_plugin():
        module = getattr(plugin, "__name__", None) if plugin is not None else None
        if module is None or module.startswith("_pytest.") or module == _HOOKS or id(plugin) in distributed:
            continue  # pytest's own, objects registered for one session, distributions above
        plugins.add(f"{module} ({getattr(plugin, '__file__', None) or name})")
    autoload = not os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD") and not getattr(
        config.option, "disable_plugin_autoload", False
    )
    workers = (
        getattr(config.option, "numprocesses", None) if config.pluginmanager.hasplugin("dsession") else 0
    )
    return {
        "pluginAutoload": autoload,
        "plugins": sorted(plugins),
        "workers": int(workers or 0),
        "callTimeout": call_timeout,
        "maxfail": int(getattr(config.option, "maxfail", 0) or 0),
        "selection": None if chosen is None else sorted(chosen),
        "shrink": not config.getoption("kbconform_no_shrink"),
        "shrinkBudget": shrink_budget(config),
    }


def _listing(ids: list[str], shown: int = 12) -> str:
    return ", ".join(ids[:shown]) + (f" and {len(ids) - shown} more" if len(ids) > shown else "")


def summary(terminalreporter: Any, config: pytest.Config) -> None:
    """What the report says, at the end of the terminal's output: calls not implemented yet,
    the failing tests as causes (each test once), a run stopped or incomplete, unknown tests,
    a partial run, the table with its legend, and the slowest tests."""
    report = config.stash.get(REPORT, None)
    if report is None:
        return
    from kbconform import report as reports

    completeness = report["completeness"]
    unimplemented = reports.not_implemented(report["tests"])
    if unimplemented:
        terminalreporter.section("kbconform: not implemented yet", sep="=", red=True)
        for call, tests in unimplemented:
            terminalreporter.line(f"{len(tests)} tests ended at {call}: {tests[0].get('message', '')}")
    halted = reports.halted(report)
    grouped = reports.cause_lines(report)
    if grouped:
        terminalreporter.section("kbconform: causes", sep="=", red=True)
        for line in grouped:
            terminalreporter.line(line)
        if reports.unshrunk(report):
            terminalreporter.line(f"  {reports.UNSHRUNK}")
    if halted:
        terminalreporter.section("kbconform: stopped", sep="=", red=True)
        terminalreporter.line(
            f"the run stopped after {report['execution']['maxfail']} failing tests (--maxfail); "
            f"{len(completeness['missing'])} suite tests were not reached: "
            + _listing(completeness["missing"])
        )
    elif completeness["missing"]:
        terminalreporter.section("kbconform: incomplete run", sep="=", red=True)
        terminalreporter.line(
            f"{len(completeness['missing'])} suite tests did not run (deselected, renamed, removed, "
            "or the run stopped first); the run fails: " + _listing(completeness["missing"])
        )
    if completeness["unknown"]:
        terminalreporter.section("kbconform: unknown tests", sep="=", red=True)
        terminalreporter.line(
            f"suite tests absent from the test list of suites {report['suiteVersion']}: "
            + _listing(completeness["unknown"])
        )
    chosen = reports.selection(report)
    if chosen is not None:
        terminalreporter.section("kbconform: partial run", sep="=", yellow=True)
        terminalreporter.line(
            f"only the {len(chosen)} tests --kbconform-only selected ran: the report says so, and "
            "it earns no level: " + _listing(chosen)
        )
    terminalreporter.section("kbconform", sep="-")
    terminalreporter.line(reports.table(report))
    slowest = reports.slowest_line(report)
    if slowest:
        terminalreporter.line(slowest)
