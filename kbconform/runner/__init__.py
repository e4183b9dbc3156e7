"""Running the suites as a command: one pytest process per adapter, judged by its own report.

Each run is a separate ``python -m pytest`` in an empty working directory with an empty
configuration, installed plugins not loaded (only the kbconform plugin, and pytest-xdist when
workers are asked for), and ``PYTEST_ADDOPTS`` / ``PYTEST_PLUGINS`` removed from its
environment: the caller's pytest setup cannot leak into the verdict. The verdict comes from the
report the run writes, checked by :func:`kbconform.report.verify` and against the seed, profile
and level asked for; pytest's exit code is never trusted (an adapter can exit the process with
any code it likes).

The child runs in a process group of its own, with a deadline for the whole run; when the run
ends, is interrupted (SIGINT, SIGTERM) or overruns, the whole group is killed, so processes an
adapter started do not outlive it, and the temporary directory is removed.

What a run is asked to be is a :class:`RunRequest` (``_request.py``); ``_suites.py`` runs the
suites (:func:`run_suites`, :func:`declared_catalogue`, an adapter served over HTTP);
``_outcome.py`` reads a run's report and holds it to the request; ``_supervision.py`` keeps
the process groups, their deadlines and the warm process runs fork from (:class:`Warm`, whose
other half is ``python -m kbconform.runner._warm``); ``_mutants.py`` decides mutants
(:func:`run_mutants`).
"""

from kbconform.runner._mutants import MutantResult, run_mutants
from kbconform.runner._outcome import HARNESS_LOG_LIMIT, Outcome
from kbconform.runner._request import (
    DEFAULT_ADAPTER,
    DEFAULT_RUN_TIMEOUT,
    TRANSPORTS,
    RunError,
    RunRequest,
    Transport,
)
from kbconform.runner._suites import CATALOGUE_TIMEOUT, declared_catalogue, run_suites, serve_command
from kbconform.runner._supervision import OUTPUT_TAIL, SERVE_START_TIMEOUT, WARM, Warm, interruptible

__all__ = [
    "CATALOGUE_TIMEOUT",
    "DEFAULT_ADAPTER",
    "DEFAULT_RUN_TIMEOUT",
    "HARNESS_LOG_LIMIT",
    "OUTPUT_TAIL",
    "SERVE_START_TIMEOUT",
    "TRANSPORTS",
    "WARM",
    "MutantResult",
    "Outcome",
    "RunError",
    "RunRequest",
    "Transport",
    "Warm",
    "declared_catalogue",
    "interruptible",
    "run_mutants",
    "run_suites",
    "serve_command",
]
