"""Shared test configuration.

Hypothesis profiles: ``default`` (fit for CI) and ``thorough`` (nightly); choose one with
``pytest --hypothesis-profile=thorough``. A failing example prints its seed and a
``@reproduce_failure`` line.
"""

import os
import tempfile
from collections.abc import Generator
from pathlib import Path

import pytest
from hypothesis import settings

from tests import scheduling

settings.register_profile("default", max_examples=100, deadline=None, print_blob=True)
settings.register_profile("thorough", max_examples=2000, deadline=None, print_blob=True)
settings.load_profile("default")

_PLUGIN_SUITES = Path(__file__).parent / "notes_profile" / "suite"


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """tests/notes_profile/suite/ holds a plug-in profile's suite tests: a run of the suites
    (an adapter or harness given, as tests/test_plugin_profile.py starts, or the catalogue
    listed) collects them, the project's own test run never does."""
    if not collection_path.is_relative_to(_PLUGIN_SUITES):
        return None
    judging = any(
        config.getoption(name, None)
        for name in ("kbconform_adapter", "kbconform_harness", "kbconform_harness_url", "kbconform_catalogue")
    )
    return None if judging else True


def pytest_configure(config: pytest.Config) -> None:
    """Where bytecode is not written (``PYTHONDONTWRITEBYTECODE``), the processes this run
    starts (its xdist workers, and the hundreds of kbconform runs, served adapters and harnesses
    the tests start) write it to a cache of their own in the temporary directory
    (``PYTHONPYCACHEPREFIX``), never beside the sources: each would otherwise compile the kit
    and the suites, and rewrite the suites' assertions, anew. A prefix already set is kept."""
    if os.environ.get("PYTHONDONTWRITEBYTECODE") and not hasattr(config, "workerinput"):
        del os.environ["PYTHONDONTWRITEBYTECODE"]
        os.environ.setdefault(
            "PYTHONPYCACHEPREFIX", str(Path(tempfile.gettempdir()) / f"kbconform-tests-pycache-{os.getuid()}")
        )


@pytest.fixture(scope="session")
def mypy_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The mypy cache directory (``--cache-dir``) of every ``mypy --strict`` run of this test
    process: the first run analyses the kit and its dependencies, the later ones read them back
    (a changed file is analysed again, and the errors are those of a cold run). mypy's cache is
    for one mypy at a time: pytest-xdist's workers each have a base temporary directory, so each
    worker has its own cache and no two runs share one at once. A module's entry holds the
    options it was checked with (``--strict`` and pyproject.toml's [tool.mypy] here): a run with
    other options checks it again."""
    return tmp_path_factory.mktemp("mypy-cache")


@pytest.hookimpl(wrapper=True, trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> Generator[None]:
    """On pytest-xdist's worksteal workers, after the shuffle and the deselection: the longest
    tests first, in halves that end together (tests/scheduling.py); an order asked for
    (``--failed-first``, ``--new-first``) is kept."""
    result = yield
    workers = getattr(config, "workerinput", {}).get("workercount")
    asked = config.getoption("failedfirst", False) or config.getoption("newfirst", False)
    if workers and not asked and config.getoption("dist", None) == "worksteal":
        scheduling.order(items, int(workers), scheduling.read_table())
    return result
