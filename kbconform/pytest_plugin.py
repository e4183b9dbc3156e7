"""The kbconform pytest plugin: run the conformance suites against any adapter.

``pytest --kbconform-adapter=my_backend.conformance:adapter`` adds the suites to the run (only
the suites, unless test paths are given too). Options live in one group with the prefix
``--kbconform-``; the adapter and the profile can also be set in the ini file
(``kbconform_adapter``, ``kbconform_profile``). This module imports only pytest and the standard
library: the adapter, the suites' support code and Hypothesis load when an adapter is set.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import json
import os
import random
import textwrap
from collections.abc import Generator, Iterator
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from kbconform._levels import LEVELS, RANK

if TYPE_CHECKING:
    from kbconform.adapter import Backend
    from kbconform.conformance import Canaries, Principals, Run

_RUN = pytest.StashKey["Run"]()
_RESULTS = pytest.StashKey[dict[str, dict[str, Any]]]()
_DECLINED = pytest.StashKey[dict[str, str]]()
_REPORT = pytest.StashKey[dict[str, Any]]()
_SPEC = pytest.StashKey[str]()
_HARNESS = pytest.StashKey["dict[str, str] | None"]()
_SELECTION = pytest.StashKey["frozenset[str] | None"]()
#: Why suite tests were deselected, by reason, with how many (said after collection).
_DESELECTED = pytest.StashKey[dict[str, int]]()
#: Why the run ended before every test ran (the backend stopped answering), once it did.
_STOPPED = pytest.StashKey[str]()
#: Whether Hypothesis stopped shrinking a test's failure at the run's budget.
_SHRINK_STOPPED = pytest.StashKey[bool]()
#: Catalogue mode: the profile, its maximal manifest (every value of every axis) and the file.
_CATALOGUE = pytest.StashKey["tuple[str, dict[str, Any], Path]"]()
_PROPERTY = "kbconform"
#: The terminal's category for a suite test that ended at a call the backend has not
#: implemented yet: counted apart from the failures, one line for each call.
_MISSING_CATEGORY = "not implemented"
# The plugin's fixtures: a suite test must get these, not an override from a conftest or plugin.
_OWN_FIXTURES = (
    "kbconform_run",
    "kbconform_open",
    "kbconform_backend",
    "kbconform_principals",
    "kbconform_canaries",
    "kbconform_isolation",
    "kbconform_world",
)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("kbconform", "kbconform conformance suites")
    group.addoption(
        "--kbconform-adapter",
        metavar="MODULE:FACTORY",
        help="run the conformance suites against the adapter this factory returns",
    )
    group.addoption(
        "--kbconform-harness",
        metavar="COMMAND",
        help="run the suites against the harness this command starts (harness-v1 on its stdio; "
        "the command is split as a shell would)",
    )
    group.addoption(
        "--kbconform-harness-url",
        metavar="URL",
        help="run the suites against the harness-v1 server at this URL (http://127.0.0.1:PORT)",
    )
    group.addoption(
        "--kbconform-harness-log",
        metavar="PATH",
        help="write the stdio harness's stderr (its log) here (default: a temporary file)",
    )
    group.addoption(
        "--kbconform-level",
        choices=LEVELS,
        default=None,
        help="run suite tests up to this conformance level (default: L4, all)",
    )
    group.addoption(
        "--kbconform-seed",
        type=int,
        default=None,
        help="seed for canary data and Hypothesis (default: random, printed in the header)",
    )
    group.addoption(
        "--kbconform-profile",
        choices=("quick", "thorough"),
        default=None,
        help="Hypothesis profile for the property tests: quick (CI) or thorough (nightly)",
    )
    group.addoption("--kbconform-report", metavar="PATH", help="write a JSON results report here")
    group.addoption(
        "--kbconform-call-timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="deadline for each call into the adapter; a call that overruns fails its test (default: 60)",
    )
    group.addoption(
        "--kbconform-only",
        action="append",
        default=None,
        metavar="ID",
        help="run only the suite tests with this stable id or glob pattern (repeatable; e.g. "
        "'leak-01[query]', 'leak-*'); the report says the run is partial, and it earns no level",
    )
    group.addoption(
        "--kbconform-no-shrink",
        action="store_true",
        default=False,
        help="report the first failing example Hypothesis finds without shrinking it (faster when "
        "only the verdict matters, as in a mutant's run)",
    )
    group.addoption(
        "--kbconform-shrink-budget",
        type=float,
        default=None,
        metavar="SECONDS",
        help="how long Hypothesis may shrink one test's failing example (default: 60); past it, "
        "the example found so far is reported and the report says it may not be the shortest",
    )
    group.addoption(
        "--kbconform-catalogue",
        metavar="PATH",
        help="run no test: write the catalogue entries the suites declare for one isolation "
        "profile (--kbconform-catalogue-profile) here, as a JSON list",
    )
    group.addoption(
        "--kbconform-catalogue-profile",
        metavar="NAME",
        default=None,
        help="the built-in isolation profile --kbconform-catalogue lists (default tenant-namespace)",
    )
    parser.addini("kbconform_adapter", "default for --kbconform-adapter (MODULE:FACTORY)", default="")
    parser.addini("kbconform_profile", "default for --kbconform-profile (quick or thorough)", default="quick")
    parser.addini("kbconform_call_timeout", "default for --kbconform-call-timeout (seconds)", default="")


def _suites_dir() -> Path:
    from kbconform._resources import data_dir

    return data_dir("suites")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "kbconform(id, level, requires=None, rule=None, guide=None): a conformance suite test with a "
        "stable id, its level (L0-L4), the capability (or tuple of capabilities) it needs, the rule "
        "it checks (a spec section, DOC.md#anchor) and the adapter guide's section saying what it "
        "asks (an anchor); rule and guide may map profile names to values",
    )
    command, url = config.getoption("kbconform_harness"), config.getoption("kbconform_harness_url")
    spec = config.getoption("kbconform_adapter") or (
        None if command or url else config.getini("kbconform_adapter")
    )
    given = [name for name, value in (("adapter", spec), ("harness", command), ("harness-url", url)) if value]
    if len(given) > 1:
        raise pytest.UsageError(
            "kbconform: give one of --kbconform-adapter, --kbconform-harness and --kbconform-harness-url; "
            f"got {', '.join(given)}"
        )
    written = config.getoption("kbconform_catalogue")
    if written:
        if given:
            raise pytest.UsageError(
                "kbconform: --kbconform-catalogue runs no backend; give no adapter or harness"
            )
        _catalogue_mode(config, Path(written))
        return
    if not given:
        return
    from kbconform.conformance import Run
    from kbconform.errors import ContractViolation

    profile = config.getoption("kbconform_profile") or config.getini("kbconform_profile")
    if profile not in ("quick", "thorough"):
        raise pytest.UsageError(f"kbconform_profile: expected 'quick' or 'thorough'; got {profile!r}")
    worker = getattr(config, "workerinput", None)  # a pytest-xdist worker: the controller's seed
    seed = worker["kbconform_seed"] if worker is not None else config.getoption("kbconform_seed")
    if seed is None:
        seed = random.SystemRandom().randrange(2**32)
    timeout = _call_timeout(config)
    target = config.getoption("kbconform_report")
    if target and not hasattr(config, "workerinput"):
        from kbconform.report import unwritable

        problem = unwritable(target)
        if problem is not None:  # refused now, not after the whole run
            raise pytest.UsageError(f"--kbconform-report: {problem}")
    from kbconform.adapter import load_adapter
    from kbconform.conformance import DeadlineExceeded
    from kbconform.harness import START_TIMEOUT, HarnessBroken, connect

    settings: dict[str, Any] = {
        "seed": seed,
        "profile": profile,
        "level": config.getoption("kbconform_level") or "L4",
        "call_timeout": timeout,
        "shrink": not config.getoption("kbconform_no_shrink"),
        "shrink_budget": _shrink_budget(config),
    }
    label = f"--kbconform-{given[0]}={spec or command or url}"
    try:
        if spec:
            run = Run.start(f"loading the adapter {spec}", partial(load_adapter, spec), **settings)
        else:
            log = config.getoption("kbconform_harness_log")
            reach = partial(
                connect, command=command, url=url, log=Path(log) if log else None, call_timeout=timeout
            )
            # Each request has the call deadline in the transport, which names the call and stops
            # the harness; the run's own deadline covers a restart (a harness's start) besides.
            run = Run.start(
                f"starting the harness {command or url}", reach, start_timeout=START_TIMEOUT, **settings
            )
    except (ContractViolation, DeadlineExceeded, HarnessBroken) as error:
        raise pytest.UsageError(f"{label}: {error}") from None
    config.stash[_RUN] = run
    config.stash[_SPEC] = spec or command or url
    config.stash[_HARNESS] = (
        None
        if spec
        else {"transport": "stdio", "command": command}
        if command
        else {"transport": "http", "url": url}
    )
    config.stash[_SELECTION] = _selection(config)
    config.stash[_RESULTS] = {}
    config.stash[_DECLINED] = {}
    config.pluginmanager.register(_Gatherer(config.stash[_RESULTS]), "kbconform-gatherer")
    paths = _suite_paths(run.manifest.profile)
    if config.args_source != pytest.Config.ArgsSource.ARGS:
        config.args[:] = _modules(config.stash[_SELECTION], paths) or paths
    else:  # the caller's own tests, and the suites unless it named some of them
        named = [Path(arg.split("::")[0]).resolve() for arg in config.args]
        bases = [Path(path).parent if path.endswith(".py") else Path(path) for path in paths]
        if not any(arg.is_relative_to(base) for arg in named for base in bases):
            config.args.extend(paths)


def _suite_paths(name: str) -> list[str]:
    """Where a run of the isolation profile ``name`` collects its suite tests: the shared ones
    (the test modules at the top of the shipped suites) and the profile's own, which are the
    folder of the shipped suites named as the profile (``tenant_namespace/``) for a built-in
    profile, or its ``suites`` package for a plug-in."""
    from kbconform.profiles import profile

    shipped = _suites_dir()
    own = profile(name).suites_dir() or shipped / name.replace("-", "_")
    return [*(str(path) for path in sorted(shipped.glob("test_*.py"))), *([str(own)] if own.is_dir() else [])]


def _catalogue_mode(config: pytest.Config, written: Path) -> None:
    """Collect the suites of one built-in profile against its maximal manifest (every read
    facade and spoof mode its branch of adapter-manifest-v1 names) and write what their marks
    declare: the catalogue, from the declarations rather than from any backend's run."""
    from kbconform.contract import load
    from kbconform.profiles import DEFAULT, names

    name = config.getoption("kbconform_catalogue_profile") or DEFAULT
    branches = [
        branch
        for branch in load("adapter-manifest-v1")["$defs"].values()
        if branch.get("properties", {}).get("isolationProfile", {}).get("const") == name
    ]
    if name not in names() or len(branches) != 1:
        raise pytest.UsageError(
            f"kbconform: --kbconform-catalogue-profile: expected a built-in profile with a branch of "
            f"adapter-manifest-v1; got {name!r}"
        )
    fields = branches[0]["properties"]
    maximal: dict[str, Any] = {"isolationProfile": name}
    for axis in ("readFacades", "spoofModes"):
        if axis in fields:
            maximal[axis] = list(fields[axis]["items"]["enum"])
    config.stash[_CATALOGUE] = (name, maximal, written)
    if config.args_source != pytest.Config.ArgsSource.ARGS:
        config.args[:] = [str(_suites_dir())]


def _selection(config: pytest.Config) -> frozenset[str] | None:
    """The stable ids ``--kbconform-only`` selects (None: every test); an id the installed
    catalogue lacks is a usage error."""
    chosen = config.getoption("kbconform_only")
    if chosen is None:
        return None
    from kbconform.errors import ContractViolation
    from kbconform.report import matching, suite_version

    try:
        return frozenset(matching(chosen))
    except ContractViolation as error:
        raise pytest.UsageError(
            f"--kbconform-only: not a test id or glob of the suites {suite_version()} "
            "(suites/catalogue.json): " + ", ".join(problem.got for problem in error.problems)
        ) from None


def _modules(chosen: frozenset[str] | None, paths: list[str]) -> list[str]:
    """The suite modules under ``paths`` holding the ``chosen`` tests (none for a full run, or
    when one is not found there): a partial run collects only those, which spares it importing
    the others."""
    if chosen is None:
        return []
    from kbconform.report import catalogue

    suites = {entry["suite"] for entry in catalogue() if entry["id"] in chosen}
    found = {
        Path(module).stem: module
        for path in paths
        for module in ([path] if path.endswith(".py") else map(str, sorted(Path(path).glob("test_*.py"))))
    }
    files = [found.get(f"test_{suite.replace('-', '_')}") for suite in sorted(suites)]
    return [file for file in files if file is not None] if all(files) else []


def _call_timeout(config: pytest.Config) -> float:
    from kbconform.conformance import DEFAULT_CALL_TIMEOUT

    given = config.getoption("kbconform_call_timeout")
    if given is None:
        text = config.getini("kbconform_call_timeout") or str(DEFAULT_CALL_TIMEOUT)
        try:
            given = float(text)
        except ValueError:
            given = float("nan")
    if not 0 < given < float("inf"):
        raise pytest.UsageError(
            f"kbconform call timeout: expected a positive number of seconds; got {given!r}"
        )
    return float(given)


def _shrink_budget(config: pytest.Config) -> float:
    from kbconform.conformance import DEFAULT_SHRINK_BUDGET

    given = config.getoption("kbconform_shrink_budget")
    budget = DEFAULT_SHRINK_BUDGET if given is None else given
    if not 0 < budget < float("inf"):
        raise pytest.UsageError(
            f"--kbconform-shrink-budget: expected a positive number of seconds; got {budget!r}"
        )
    return float(budget)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """pytest-xdist: every worker runs with the controller's seed."""
    run = node.config.stash.get(_RUN, None)
    if run is not None:
        node.workerinput["kbconform_seed"] = run.seed


def pytest_unconfigure(config: pytest.Config) -> None:
    run = config.stash.get(_RUN, None)
    if run is not None:
        run.shutdown()


def pytest_report_header(config: pytest.Config) -> list[str]:
    run = config.stash.get(_RUN, None)
    if run is None:
        return []
    versions = run.manifest.versions
    return [
        f"kbconform suites {importlib.metadata.version('kbconform')}; adapter {versions['adapter']}; "
        f"backend {versions['backend']}",
        f"kbconform level {run.level}, profile {run.profile}, seed {run.seed} "
        f"(reproduce with --kbconform-seed={run.seed})",
    ]


def _case(item: pytest.Item) -> pytest.Mark | None:
    return item.get_closest_marker("kbconform")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """``kbconform_facade`` runs once per declared read facade, ``kbconform_spoof_mode`` per mode
    (:data:`kbconform._capabilities.AXES`)."""
    from kbconform._capabilities import AXES

    run = metafunc.config.stash.get(_RUN, None)
    listing = metafunc.config.stash.get(_CATALOGUE, None)
    for axis in AXES:
        if axis.fixture in metafunc.fixturenames:
            manifest = run.manifest.raw if run else listing[1] if listing else None
            metafunc.parametrize(axis.fixture, axis.values(manifest), ids=list(axis.ids(manifest)))


def _requires(mark: pytest.Mark) -> tuple[str, ...]:
    required = mark.kwargs.get("requires") or ()
    return (required,) if isinstance(required, str) else tuple(required)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Keep the suite tests up to the run's level (and of its selection), refuse shared ids and
    overridden fixtures, and skip, with the manifest's reason, each test needing a capability
    the manifest declines."""
    if _CATALOGUE in config.stash:
        _write_catalogue(config, items)
        return
    run = config.stash.get(_RUN, None)
    if run is None:
        return
    from kbconform._capabilities import skip_reason
    from kbconform.profiles import capabilities

    chosen = config.stash[_SELECTION]
    limit = LEVELS.index(run.level)
    keep: list[pytest.Item] = []
    drop: list[pytest.Item] = []
    seen: dict[str, str] = {}
    reasons = config.stash.setdefault(_DESELECTED, {})
    for item in items:
        mark = _case(item)
        if mark is None:
            keep.append(item)
            continue
        level, stable = mark.kwargs["level"], _stable_id(item, mark)
        if stable in seen:
            raise pytest.UsageError(f"kbconform: {item.nodeid} and {seen[stable]} share the id {stable!r}")
        seen[stable] = item.nodeid
        _check_fixtures(item)
        why = (
            f"of another isolation profile than {run.manifest.profile}"
            if run.manifest.profile not in _profiles(item)
            else f"above level {run.level}"
            if LEVELS.index(level) > limit
            else "not selected by --kbconform-only"
            if chosen is not None and stable not in chosen
            else None
        )
        if why is not None:
            reasons[why] = reasons.get(why, 0) + 1
            drop.append(item)
            continue
        keep.append(item)
        required = _requires(mark)
        for capability in required:
            if capability not in capabilities():
                raise pytest.UsageError(
                    f"kbconform: {item.nodeid} requires {capability!r}; "
                    f"expected one of {', '.join(capabilities())}"
                )
        reason = skip_reason(run.manifest.raw, required)
        if reason is not None:
            config.stash[_DECLINED][item.nodeid] = reason
            item.add_marker(pytest.mark.skip(reason=reason))
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def _write_catalogue(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Catalogue mode: write the entry of every suite test of the profile; run none."""
    name, _, written = config.stash[_CATALOGUE]
    entries: dict[str, dict[str, Any]] = {}
    for item in items:
        mark = _case(item)
        if mark is None or name not in _profiles(item):
            continue
        entry = _entry(item, mark)
        if entry["id"] in entries:
            raise pytest.UsageError(f"kbconform: two suite tests share the id {entry['id']!r}")
        del entry["status"]
        entries[entry["id"]] = entry
    written.write_text(json.dumps(sorted(entries.values(), key=lambda e: e["id"])), encoding="utf-8")
    config.hook.pytest_deselected(items=list(items))
    items.clear()


def pytest_report_collectionfinish(config: pytest.Config) -> list[str]:
    """What the suite tests pytest counts as deselected are: tests of another isolation
    profile, above the run's level, or left out of a selection."""
    reasons = config.stash.get(_DESELECTED, {})
    if not reasons:
        return []
    said = "; ".join(f"{count} {why}" for why, count in sorted(reasons.items()))
    return [f"kbconform deselected {sum(reasons.values())} suite tests: {said}"]


def _profiles(item: pytest.Item) -> tuple[str, ...]:
    """The isolation profiles a suite test is written for: its module's ``PROFILES`` (``("*",)``:
    every registered profile, as the shared isolation suite). A test of another profile than the
    manifest's is never asked of the backend (deselected, not skipped)."""
    from kbconform.profiles import names

    declared = getattr(getattr(item, "module", None), "PROFILES", None)
    if declared == ("*",):
        return names()
    if not isinstance(declared, tuple) or not declared or not set(declared) <= set(names()):
        raise pytest.UsageError(
            f"kbconform: {item.nodeid}: a suite module declares PROFILES, a tuple of "
            f"{', '.join(names())} (or ('*',): every profile); got {declared!r}"
        )
    return declared


def _check_fixtures(item: pytest.Item) -> None:
    info = getattr(item, "_fixtureinfo", None)
    for name in _OWN_FIXTURES:
        definitions = info.name2fixturedefs.get(name) if info is not None else None
        if definitions and definitions[-1].func.__module__ != __name__:
            raise pytest.UsageError(
                f"kbconform: {item.nodeid} would get the fixture {name} from "
                f"{definitions[-1].func.__module__}; the suites run only with the plugin's own fixtures"
            )


def _stable_id(item: pytest.Item, mark: pytest.Mark) -> str:
    callspec = getattr(item, "callspec", None)
    return str(mark.kwargs["id"]) + (f"[{callspec.id}]" if callspec is not None else "")


def _status(report: pytest.TestReport) -> str:
    if report.skipped:
        return "skip"
    if report.failed:
        return "fail" if report.when == "call" else "error"
    return "pass" if report.when == "call" else "disabled"


#: The most characters of a failure's text a result carries to the report, which keeps far fewer.
_FAILURE_TEXT = 100_000


def _failure(report: pytest.TestReport) -> str:
    """Why a test failed, as pytest tells it: the message of the exception that ended it, else
    the ``E`` lines of the failure as pytest renders it, else the whole of that text."""
    longrepr = report.longrepr
    crash = getattr(getattr(longrepr, "reprcrash", None), "message", None)
    if isinstance(crash, str) and crash.strip():
        return crash[:_FAILURE_TEXT]
    rendered = longrepr if isinstance(longrepr, str) else report.longreprtext
    lines = [line[1:] for line in rendered.splitlines() if line.startswith("E ")]
    return (textwrap.dedent("\n".join(lines)) if lines else rendered)[:_FAILURE_TEXT]


def _entry(item: pytest.Item, mark: pytest.Mark) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "id": _stable_id(item, mark),
        "suite": item.path.stem.removeprefix("test_").replace("_", "-"),
        "level": mark.kwargs["level"],
        "status": "disabled",
    }
    required = _requires(mark)
    if required:
        entry["requires"] = list(required)
    from kbconform.profiles import DEFAULT

    run = item.config.stash.get(_RUN, None)
    listing = item.config.stash.get(_CATALOGUE, None)
    name = run.manifest.profile if run is not None else listing[0] if listing is not None else DEFAULT
    if name != DEFAULT:
        entry["profile"] = name
    for key in ("rule", "guide"):  # one value, or one per profile (a test of several profiles)
        declared = mark.kwargs.get(key)
        value = declared.get(name) if isinstance(declared, dict) else declared
        if value:
            entry[key] = str(value)
    from kbconform._capabilities import AXES

    params = getattr(getattr(item, "callspec", None), "params", {})
    for axis in AXES:
        if axis.fixture in params:
            entry[axis.key] = params[axis.fixture]
    return entry


def _hold_honest(item: pytest.Item, report: pytest.TestReport, stable: str) -> None:
    """A suite test's outcome is its own: only the manifest's declined capabilities skip one.

    Any other skip (a skip mark, ``pytest.skip``, a skipping fixture) and any xfail mark turn
    the result into a failure: an expected failure is still a failure, and an unexpected pass
    means the mark is stale.
    """
    was_xfail = getattr(report, "wasxfail", None)
    if was_xfail is not None:
        del report.wasxfail
        how = "failed as expected" if report.skipped else "passed unexpectedly"
        why = f"it is marked xfail ({was_xfail or 'no reason'}) and {how}"
    elif report.skipped and item.nodeid not in item.config.stash[_DECLINED]:
        longrepr = report.longrepr
        why = f"it was skipped ({longrepr[2] if isinstance(longrepr, tuple) else longrepr})"
    else:
        return
    report.outcome = "failed"
    report.longrepr = (
        f"kbconform: {stable} failed because {why}. A suite test may be skipped only when the "
        "manifest declines a capability it requires, and may not be marked xfail."
    )


def _transcript(config: pytest.Config) -> Any:
    """The transcript the run's adapter records (a harness-v1 adapter's), or None."""
    run = config.stash.get(_RUN, None)
    return getattr(run.adapter, "transcript", None) if run is not None else None


def pytest_runtest_setup(item: pytest.Item) -> None:
    transcript = _transcript(item.config)
    if transcript is not None and _case(item) is not None:
        transcript.begin_test()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    if _case(item) is None:
        return (yield)
    from kbconform.conformance import ending_tests

    transcript = _transcript(item.config)
    if transcript is not None:
        transcript.begin_call()
    run = item.config.stash.get(_RUN, None)
    shrinking: contextlib.AbstractContextManager[list[str]] = (
        run.shrinking() if run is not None else contextlib.nullcontext([])
    )
    with ending_tests(), shrinking as stopped:  # a facade not implemented yet ends the test at once
        try:
            return (yield)
        finally:
            item.stash[_SHRINK_STOPPED] = bool(stopped)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    mark = _case(item)
    if mark is None or _RUN not in item.config.stash:
        return report
    _bound_output(item, report)
    printed = item.config.stash[_RUN].take_output()
    if printed:
        report.sections.append((f"kbconform: what the adapter printed ({report.when})", printed))
    entry = _entry(item, mark)
    _hold_honest(item, report, entry["id"])
    unimplemented = _not_implemented(report, call)
    entry["status"] = _status(report)
    if entry["status"] == "skip":
        entry["reason"] = item.config.stash[_DECLINED][item.nodeid]
    elif entry["status"] in ("fail", "error"):
        entry["message"] = _failure(report)  # the report cleans, redacts and bounds it
        if unimplemented is not None:
            entry["notImplemented"] = unimplemented
        if item.stash.get(_SHRINK_STOPPED, False):
            entry["shrinkStopped"] = True
        transcript = _transcript(item.config)
        if transcript is not None and transcript.exchanges:
            entry["transcript"] = transcript.lines()
        _stop_if_dead(item, call)
    # The result travels with the report (to the pytest-xdist controller, when there is one) in
    # a list of its own: ``user_properties`` is shared by the item's reports.
    report.user_properties = [*report.user_properties, (_PROPERTY, entry)]
    return report


def _not_implemented(report: pytest.TestReport, call: pytest.CallInfo[None]) -> str | None:
    """The call a failed test ended at because it is not implemented yet (in the test or a
    fixture; :class:`~kbconform.conformance.Unimplemented`), its failure cut to one line and
    no traceback; None for any other outcome."""
    from kbconform.conformance import NotImplementedFacade, Unimplemented

    if not report.failed or call.excinfo is None:
        return None
    missing = call.excinfo.value
    if isinstance(missing, NotImplementedFacade):
        missing = missing.missing
    if not isinstance(missing, Unimplemented):
        return None
    report.longrepr = str(missing)
    return missing.call


def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config) -> Any:
    """A test that ended at a facade not implemented yet is counted apart from the failures
    (the run still fails): the terminal prints one line for each facade, not a traceback for
    each test."""
    if report.failed and any(
        name == _PROPERTY and isinstance(entry, dict) and "notImplemented" in entry
        for name, entry in getattr(report, "user_properties", ())  # a CollectReport has none
    ):
        return _MISSING_CATEGORY, "N", ("NOT IMPLEMENTED", {"red": True})
    return None


def _stop_if_dead(item: pytest.Item, call: pytest.CallInfo[None]) -> None:
    """A test ended by a call past its deadline (or a harness that broke): probe the adapter
    (:meth:`~kbconform.conformance.Run.probe`). When it does not answer either, the run stops
    here, and every test that did not run is an error saying why: a dead backend costs two
    deadlines, not one per test."""
    from kbconform.conformance import DeadlineExceeded
    from kbconform.harness import HarnessBroken

    if call.excinfo is None or not call.excinfo.errisinstance((DeadlineExceeded, HarnessBroken)):
        return
    if _STOPPED in item.config.stash:
        return
    silent = item.config.stash[_RUN].probe()
    if silent is None:
        return
    mark = _case(item)
    after = _stable_id(item, mark) if mark is not None else item.nodeid
    why = (
        f"not run: the backend stopped answering ({call.excinfo.value}; then opening a fresh "
        f"backend failed too: {silent}), so the run ended after {after}"
    )
    item.config.stash[_STOPPED] = why
    item.session.shouldstop = f"kbconform: {why}"


class _Gatherer:
    """Gathers each suite test's result where the report is built: this process, or the
    pytest-xdist controller, which receives every worker's reports."""

    def __init__(self, results: dict[str, dict[str, Any]]) -> None:
        self.results = results

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        for name, entry in report.user_properties:
            if name != _PROPERTY or not isinstance(entry, dict):
                continue
            known = self.results.get(report.nodeid)
            if known is None or RANK[entry["status"]] > RANK[known["status"]]:  # only moves up
                self.results[report.nodeid] = dict(entry)


def _bound_output(item: pytest.Item, report: pytest.TestReport) -> None:
    """Keep a bounded head and tail of each captured section (what the adapter prints during a
    call is bounded already; this covers what escapes it, such as an abandoned call's thread)."""
    from kbconform.conformance._deadline import Tail

    def cut(text: str) -> str:
        tail = Tail()
        tail.write(text)
        return tail.take()

    report.sections = [(key, cut(text)) for key, text in report.sections]
    kept = getattr(item, "_report_sections", None)  # pytest keeps every phase's capture here too
    if isinstance(kept, list):
        kept[:] = [(when, key, cut(text)) for when, key, text in kept]


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Build the report; a suite test that did not run fails the run (completeness)."""
    config = session.config
    run = config.stash.get(_RUN, None)
    if run is None or config.option.collectonly or hasattr(config, "workerinput"):
        return  # a pytest-xdist worker's results go to the controller, which reports
    from kbconform import report as reports

    stopped = config.stash.get(_STOPPED, None)
    if stopped is not None:  # every test the run did not reach is an error saying why
        results = config.stash[_RESULTS]
        ran = {result["id"] for result in results.values()}
        chosen = _applicable(run, config.stash[_SELECTION])
        for entry in reports.expected(run.manifest.raw, run.level, chosen):
            if entry["id"] not in ran:
                results[f"not run: {entry['id']}"] = {**entry, "status": "error", "message": stopped}
    report = reports.build(
        adapter=config.stash[_SPEC],
        harness=config.stash[_HARNESS],
        manifest=run.manifest.raw,
        seed=run.seed,
        profile=run.profile,
        level=run.level,
        results=config.stash[_RESULTS].values(),
        execution=_execution(config, run.call_timeout, _applicable(run, config.stash[_SELECTION])),
    )
    config.stash[_REPORT] = report
    completeness = report["completeness"]
    if (completeness["missing"] or completeness["unknown"]) and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    path = config.getoption("kbconform_report")
    if path:
        reports.write(
            path, json.dumps(report, indent=2) + "\n"
        )  # keys in order: a transcript's requests as sent


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
        if module is None or module.startswith("_pytest.") or module == __name__ or id(plugin) in distributed:
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
        "shrinkBudget": _shrink_budget(config),
    }


def _listing(ids: list[str], shown: int = 12) -> str:
    return ", ".join(ids[:shown]) + (f" and {len(ids) - shown} more" if len(ids) > shown else "")


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    report = config.stash.get(_REPORT, None)
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
    failing = [t for t in reports.failing(report) if "notImplemented" not in t]
    if failing:
        terminalreporter.section("kbconform: failing tests", sep="=", red=True)
        for line in reports.failure_lines(failing):
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


# -- fixtures ---------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def kbconform_run(pytestconfig: pytest.Config) -> Run:
    """The run: adapter, manifest, seed, profile and level."""
    run = pytestconfig.stash.get(_RUN, None)
    if run is None:
        raise pytest.UsageError(
            "kbconform: no adapter configured; pass --kbconform-adapter=MODULE:FACTORY "
            "or set kbconform_adapter in the ini file"
        )
    return run


@pytest.fixture
def kbconform_open(kbconform_run: Run) -> Iterator[Any]:
    """Open more fresh backends (``kbconform_open(BackendOptions(...))``); all closed afterwards."""
    opened: list[Backend] = []

    def open_backend(options: Any = None) -> Backend:
        backend = kbconform_run.open(options)
        opened.append(backend)
        return backend

    yield open_backend
    for backend in opened:
        kbconform_run.close(backend)


@pytest.fixture
def kbconform_backend(kbconform_open: Any) -> Backend:
    """A fresh, empty backend in the manifest's first spoof mode."""
    backend: Backend = kbconform_open()
    return backend


@pytest.fixture
def kbconform_principals(kbconform_run: Run) -> Principals:
    """acme, beta, loner, operator, and the shared namespace's writer and member."""
    from kbconform.conformance import Principals

    return Principals.for_manifest(kbconform_run.manifest)


@pytest.fixture
def kbconform_canaries(
    request: pytest.FixtureRequest,
    kbconform_run: Run,
    kbconform_backend: Backend,
    kbconform_principals: Principals,
) -> Canaries:
    """``kbconform_backend`` seeded with canary chunks per tenant, and the model of them."""
    from kbconform.conformance import seed_canaries

    mark = _case(request.node)
    name = _stable_id(request.node, mark) if mark is not None else request.node.nodeid
    return seed_canaries(kbconform_backend, kbconform_principals, kbconform_run.rng(name))


if TYPE_CHECKING:
    from kbconform.conformance import Isolation, World


@pytest.fixture
def kbconform_isolation(kbconform_run: Run) -> Isolation:
    """The manifest's isolation profile: how its world is seeded, read and opened with faults."""
    from kbconform.conformance import isolation_for

    return isolation_for(kbconform_run.manifest)


@pytest.fixture
def kbconform_world(
    request: pytest.FixtureRequest,
    kbconform_run: Run,
    kbconform_backend: Backend,
    kbconform_isolation: Isolation,
) -> World:
    """``kbconform_backend`` seeded with the isolation profile's world, and the model of it."""
    mark = _case(request.node)
    name = _stable_id(request.node, mark) if mark is not None else request.node.nodeid
    return kbconform_isolation.seed(kbconform_backend, kbconform_run.rng(name))
