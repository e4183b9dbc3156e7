"""The kbconform pytest plugin: run the conformance suites against any adapter.

``pytest --kbconform-adapter=my_backend.conformance:adapter`` adds the suites to the run (only
the suites, unless test paths are given too). Options live in one group with the prefix
``--kbconform-``; the adapter and the profile can also be set in the ini file
(``kbconform_adapter``, ``kbconform_profile``). This module imports only pytest and the standard
library: the adapter, the suites' support code and Hypothesis load when an adapter is set.
"""

from __future__ import annotations

import importlib.metadata
import json
import random
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from kbconform.adapter import Backend
    from kbconform.conformance import Canaries, Principals, Run

_RUN = pytest.StashKey["Run"]()
_RESULTS = pytest.StashKey[dict[str, dict[str, Any]]]()
_LEVELS = ("L0", "L1", "L2", "L3", "L4")
_RANK = {"disabled": 0, "skip": 1, "pass": 2, "fail": 3, "error": 4}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("kbconform", "kbconform conformance suites")
    group.addoption(
        "--kbconform-adapter",
        metavar="MODULE:FACTORY",
        help="run the conformance suites against the adapter this factory returns",
    )
    group.addoption(
        "--kbconform-level",
        choices=_LEVELS,
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
    parser.addini("kbconform_adapter", "default for --kbconform-adapter (MODULE:FACTORY)", default="")
    parser.addini("kbconform_profile", "default for --kbconform-profile (quick or thorough)", default="quick")


def _suites_dir() -> Path:
    from kbconform._resources import data_dir

    return data_dir("suites")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "kbconform(id, level, requires=None): a conformance suite test with a stable id, its level "
        "(L0-L4) and the optional feature it needs",
    )
    spec = config.getoption("kbconform_adapter") or config.getini("kbconform_adapter")
    if not spec:
        return
    from kbconform.conformance import Run
    from kbconform.errors import ContractViolation

    profile = config.getoption("kbconform_profile") or config.getini("kbconform_profile")
    if profile not in ("quick", "thorough"):
        raise pytest.UsageError(f"kbconform_profile: expected 'quick' or 'thorough'; got {profile!r}")
    seed = config.getoption("kbconform_seed")
    if seed is None:
        seed = random.SystemRandom().randrange(2**32)
    try:
        run = Run.load(spec, seed=seed, profile=profile, level=config.getoption("kbconform_level") or "L4")
    except ContractViolation as error:
        raise pytest.UsageError(f"--kbconform-adapter={spec}: {error}") from None
    config.stash[_RUN] = run
    config.stash[_RESULTS] = {}
    suites = str(_suites_dir())
    if config.args_source != pytest.Config.ArgsSource.ARGS:
        config.args[:] = [suites]
    elif not any(Path(arg.split("::")[0]).resolve().is_relative_to(suites) for arg in config.args):
        config.args.append(suites)


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
    """``kbconform_facade`` runs once per declared read facade, ``kbconform_spoof_mode`` per mode."""
    run = metafunc.config.stash.get(_RUN, None)
    declared = {
        "kbconform_facade": run.manifest.read_facades if run else ("query", "get", "list"),
        "kbconform_spoof_mode": run.manifest.spoof_modes if run else ("overwrite",),
    }
    for name, values in declared.items():
        if name in metafunc.fixturenames:
            metafunc.parametrize(name, values, ids=list(values))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    run = config.stash.get(_RUN, None)
    if run is None:
        return
    limit = _LEVELS.index(run.level)
    keep: list[pytest.Item] = []
    drop: list[pytest.Item] = []
    seen: dict[str, str] = {}
    for item in items:
        mark = _case(item)
        if mark is None:
            keep.append(item)
            continue
        level, stable = mark.kwargs["level"], _stable_id(item, mark)
        if stable in seen:
            raise pytest.UsageError(f"kbconform: {item.nodeid} and {seen[stable]} share the id {stable!r}")
        seen[stable] = item.nodeid
        if _LEVELS.index(level) > limit:
            drop.append(item)
            continue
        keep.append(item)
        feature = mark.kwargs.get("requires")
        if feature is not None and not run.manifest.supports(feature):
            reason = run.manifest.unsupported_reason(feature)
            item.add_marker(pytest.mark.skip(reason=f"optional feature {feature} not offered: {reason}"))
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def _stable_id(item: pytest.Item, mark: pytest.Mark) -> str:
    callspec = getattr(item, "callspec", None)
    return str(mark.kwargs["id"]) + (f"[{callspec.id}]" if callspec is not None else "")


def _status(report: pytest.TestReport) -> str:
    if report.skipped:
        return "skip"
    if report.failed:
        return "fail" if report.when == "call" else "error"
    return "pass" if report.when == "call" else "disabled"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    mark = _case(item)
    results = item.config.stash.get(_RESULTS, None)
    if mark is not None and results is not None:
        entry = results.setdefault(
            item.nodeid,
            {
                "id": _stable_id(item, mark),
                "suite": item.path.stem.removeprefix("test_").replace("_", "-"),
                "level": mark.kwargs["level"],
                "status": "disabled",
            },
        )
        status = _status(report)
        if _RANK[status] > _RANK[entry["status"]]:  # a result only moves up
            entry["status"] = status
    return report


def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    run, path = config.stash.get(_RUN, None), config.getoption("kbconform_report")
    if run is None or not path:
        return
    report = {
        "suiteVersion": importlib.metadata.version("kbconform"),
        "seed": run.seed,
        "profile": run.profile,
        "level": run.level,
        "manifest": dict(run.manifest.raw),
        "tests": sorted(config.stash[_RESULTS].values(), key=lambda entry: entry["id"]),
    }
    Path(path).write_text(json.dumps(report, indent=2, sort_keys=True) + "\n", encoding="utf-8")


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
