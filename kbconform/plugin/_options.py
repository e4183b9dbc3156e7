"""The plugin's options, and the run they start: the adapter loaded or the harness reached, the
suites added to the collection (or the catalogue listed), the settings checked."""

from __future__ import annotations

import importlib.metadata
import random
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from kbconform._levels import LEVELS
from kbconform.plugin._stash import CATALOGUE, DECLINED, HARNESS, RESULTS, RUN, SELECTION, SPEC
from kbconform.plugin._verdict import Gatherer


def add_options(parser: pytest.Parser) -> None:
    """The plugin's options, in one group with the prefix ``--kbconform-``, and its ini keys."""
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


def start(config: pytest.Config) -> None:
    """Start the run the options ask for (none without an adapter or harness): its settings
    checked, the backend reached, the suites added to the collection; or catalogue mode."""
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
        "shrink_budget": shrink_budget(config),
    }
    label = f"--kbconform-{given[0]}={spec or command or url}"
    try:
        if spec:
            run = Run.start(
                f"loading the adapter {spec}",
                partial(load_adapter, spec),
                load_timeout=START_TIMEOUT,  # importing the backend's libraries is no call
                **settings,
            )
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
    config.stash[RUN] = run
    config.stash[SPEC] = spec or command or url
    config.stash[HARNESS] = (
        None
        if spec
        else {"transport": "stdio", "command": command}
        if command
        else {"transport": "http", "url": url}
    )
    config.stash[SELECTION] = _selection(config)
    config.stash[RESULTS] = {}
    config.stash[DECLINED] = {}
    config.pluginmanager.register(Gatherer(config.stash[RESULTS]), "kbconform-gatherer")
    paths = _suite_paths(run.manifest.profile)
    if config.args_source != pytest.Config.ArgsSource.ARGS:
        config.args[:] = _modules(config.stash[SELECTION], paths) or paths
    else:  # the caller's own tests, and the suites unless it named some of them
        named = [Path(arg.split("::")[0]).resolve() for arg in config.args]
        bases = [Path(path).parent if path.endswith(".py") else Path(path) for path in paths]
        if not any(arg.is_relative_to(base) for arg in named for base in bases):
            config.args.extend(paths)


def _suite_paths(name: str) -> list[str]:
    """Where a run of the isolation profile ``name`` collects its suite tests: the shared ones
    (the test modules at the top of the shipped suites) and the profile's own
    (``Profile.suites_dir``: for a built-in profile the folder of the shipped suites named as
    it, for a plug-in its own), built-ins and plug-ins alike."""
    from kbconform.profiles import profile

    own = profile(name).suites_dir()
    shared = sorted(_suites_dir().glob("test_*.py"))
    return [*(str(path) for path in shared), *([str(own)] if own.is_dir() else [])]


def _catalogue_mode(config: pytest.Config, written: Path) -> None:
    """Collect the suites of one registered isolation profile against its maximal manifest
    (every read facade and spoof mode its branch of adapter-manifest-v1 names, or, for a profile
    without a branch there, the ones its skeleton declares) and write what their marks declare:
    the catalogue, from the declarations rather than from any backend's run."""
    from kbconform.contract import manifest_branch
    from kbconform.profiles import DEFAULT, names, profile

    name = config.getoption("kbconform_catalogue_profile") or DEFAULT
    if name not in names():
        raise pytest.UsageError(
            f"kbconform: --kbconform-catalogue-profile: expected a registered isolation profile "
            f"({', '.join(names())}); got {name!r}"
        )
    branch = manifest_branch(name)
    maximal: dict[str, Any] = {"isolationProfile": name}
    for axis in ("readFacades", "spoofModes"):
        if branch is not None and axis in branch:
            maximal[axis] = list(branch[axis]["items"]["enum"])
        elif branch is None and axis in profile(name).skeleton:
            maximal[axis] = list(profile(name).skeleton[axis])
    config.stash[CATALOGUE] = (name, maximal, written)
    if config.args_source != pytest.Config.ArgsSource.ARGS:
        config.args[:] = _suite_paths(name)


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


def shrink_budget(config: pytest.Config) -> float:
    from kbconform.conformance import DEFAULT_SHRINK_BUDGET

    given = config.getoption("kbconform_shrink_budget")
    budget = DEFAULT_SHRINK_BUDGET if given is None else given
    if not 0 < budget < float("inf"):
        raise pytest.UsageError(
            f"--kbconform-shrink-budget: expected a positive number of seconds; got {budget!r}"
        )
    return float(budget)


def header(config: pytest.Config) -> list[str]:
    """The suites', the adapter's and the backend's versions, and the run's seed."""
    run = config.stash.get(RUN, None)
    if run is None:
        return []
    versions = run.manifest.versions
    return [
        f"kbconform suites {importlib.metadata.version('kbconform')}; adapter {versions['adapter']}; "
        f"backend {versions['backend']}",
        f"kbconform level {run.level}, profile {run.profile}, seed {run.seed} "
        f"(reproduce with --kbconform-seed={run.seed})",
    ]
