"""The kbconform pytest plugin: run the conformance suites against any adapter.

``pytest --kbconform-adapter=my_backend.conformance:adapter`` adds the suites to the run (only
the suites, unless test paths are given too). Options live in one group with the prefix
``--kbconform-``; the adapter and the profile can also be set in the ini file
(``kbconform_adapter``, ``kbconform_profile``). This module holds the hooks only: the options
and the run they start are in :mod:`kbconform.plugin._options`, the collection in
``_collection``, each test's verdict in ``_verdict``, the report in ``_session`` and the
fixtures in ``_fixtures``. It imports only pytest and the standard library: the adapter, the
suites' support code and Hypothesis load when an adapter is set.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest

from kbconform.plugin import _collection, _options, _session, _verdict
from kbconform.plugin._fixtures import (
    answered,
    kbconform_backend,
    kbconform_canaries,
    kbconform_isolation,
    kbconform_open,
    kbconform_principals,
    kbconform_run,
    kbconform_world,
)
from kbconform.plugin._stash import RUN

# The fixtures are found here, where pytest looks for a plugin's fixtures.
__all__ = [
    "kbconform_backend",
    "kbconform_canaries",
    "kbconform_isolation",
    "kbconform_open",
    "kbconform_principals",
    "kbconform_run",
    "kbconform_world",
]


def pytest_addoption(parser: pytest.Parser) -> None:
    _options.add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "kbconform(id, level, requires=None, rule=None, guide=None): a conformance suite test with a "
        "stable id, its level (L0-L4), the capability (or tuple of capabilities) it needs, the rule "
        "it checks (a spec section, DOC.md#anchor) and the adapter guide's section saying what it "
        "asks (an anchor); rule and guide may map profile names to values, or to functions of the "
        "test's stable id (a profile's own rule per test)",
    )
    _options.start(config)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """pytest-xdist: every worker runs with the controller's seed."""
    run = node.config.stash.get(RUN, None)
    if run is not None:
        node.workerinput["kbconform_seed"] = run.seed


def pytest_unconfigure(config: pytest.Config) -> None:
    run = config.stash.get(RUN, None)
    if run is not None:
        run.shutdown()


def pytest_report_header(config: pytest.Config) -> list[str]:
    return _options.header(config)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    _collection.parametrize(metafunc)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    _collection.select(config, items)


def pytest_report_collectionfinish(config: pytest.Config) -> list[str]:
    return _collection.deselected(config)


def pytest_runtest_setup(item: pytest.Item) -> None:
    _verdict.begin(item)


@pytest.hookimpl(wrapper=True)
def pytest_fixture_setup(fixturedef: Any, request: pytest.FixtureRequest) -> Generator[None, Any, Any]:
    with answered():
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    with _verdict.calling(item):
        return (yield)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    return _verdict.judge(item, call, report)


def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config) -> Any:
    return _verdict.teststatus(report)


def pytest_sessionfinish(session: pytest.Session) -> None:
    _session.finish(session)


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    _session.summary(terminalreporter, config)
