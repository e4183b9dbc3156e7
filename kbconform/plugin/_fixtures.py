"""The fixtures the suites get: the run, fresh backends, the principals, the canaries and each
isolation profile's world. A suite test gets only these (the collection checks it). A call
into the backend that does not answer while a fixture sets up (a deadline, a broken harness,
a backend taken as broken) fails that set-up as pytest expects of a fixture (:func:`answered`)."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from kbconform.plugin._stash import RUN, case, stable_id

if TYPE_CHECKING:
    from kbconform.adapter import Backend
    from kbconform.conformance import Canaries, Isolation, Principals, Run, World


class NotAnswered(pytest.fail.Exception):  # type: ignore[misc,name-defined]  # pytest's Failed
    """A fixture's set-up ended by a call the backend did not answer; the error that ended it
    (a ``BaseException``, which pytest's set-up does not expect of a fixture) is its cause."""


def unanswered(error: BaseException) -> BaseException:
    """The error behind a :class:`NotAnswered` set-up, else ``error`` itself."""
    cause = error.__cause__
    return cause if isinstance(error, NotAnswered) and cause is not None else error


@contextlib.contextmanager
def answered() -> Iterator[None]:
    """Around a fixture's set-up: a call past its deadline, a broken harness or a backend taken
    as broken fails the set-up (:class:`NotAnswered`, carrying the error and its message), so
    pytest tears the fixtures down and goes on to the next test; any other outcome passes."""
    try:
        yield
    except BaseException as error:
        if isinstance(error, Exception) or not _stopping(error):
            raise
        raise NotAnswered(str(error), pytrace=False) from error


def _stopping(error: BaseException) -> bool:
    """Whether ``error`` is a call the backend did not answer. Asked of every fixture's
    ``BaseException`` (a skip too), in any session: nothing is imported for it (none of these
    can be raised before the kit's modules that define them are loaded)."""
    conformance = sys.modules.get("kbconform.conformance")
    harness = sys.modules.get("kbconform.harness")
    kinds = (
        getattr(conformance, "BackendBroken", None),
        getattr(conformance, "DeadlineExceeded", None),
        getattr(harness, "HarnessBroken", None),
    )
    return any(kind is not None and isinstance(error, kind) for kind in kinds)


@pytest.fixture(scope="session")
def kbconform_run(pytestconfig: pytest.Config) -> Run:
    """The run: adapter, manifest, seed, profile and level."""
    run = pytestconfig.stash.get(RUN, None)
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

    mark = case(request.node)
    name = stable_id(request.node, mark) if mark is not None else request.node.nodeid
    return seed_canaries(kbconform_backend, kbconform_principals, kbconform_run.rng(name))


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
    mark = case(request.node)
    name = stable_id(request.node, mark) if mark is not None else request.node.nodeid
    return kbconform_isolation.seed(kbconform_backend, kbconform_run.rng(name))
