"""Mutants of the project-pool reference, callers at once (``schemas/concurrency.md``): one
request's state kept where every request shares it. Called one caller at a time each answers as
the reference does; two requests that overlap read each other's caller, results or answer."""

from __future__ import annotations

from kbconform_reference import _races
from kbconform_reference.pool.mutants._base import Mutant
from kbconform_reference.pool.service import ProjectPool

#: The read facades the concurrency suite calls at once.
READS = ("search_episodes", "search_entities")
#: Those that return a sequence (a result buffer holds one).
SEQUENCES = ("search_episodes", "search_entities")

CallerOnSelf = _races.caller_on_self(ProjectPool, READS)
CallerInContext = _races.caller_in_context_default(ProjectPool, READS)
SharedResults = _races.shared_results(ProjectPool, SEQUENCES)
#: The write facade the concurrency suite calls at once (conc-03).
WRITES = ("write_episode", "extract_entities")
WriteCallerOnSelf = _races.caller_on_self(ProjectPool, WRITES)
WriteCallerInContext = _races.caller_in_context_default(ProjectPool, WRITES)
Coalesced = _races.coalesced(ProjectPool, READS)

MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "pool-caller-on-self",
        CallerOnSelf,
        "each read keeps its caller on the service object for the call (self.current_caller), "
        "which another request overwrites",
        (
            "conc-01[search-episodes]",
            "conc-01[search-entities]",
            "conc-02[search-episodes]",
            "conc-02[search-entities]",
        ),
        in_process_only=_races.OVERLAP_ONLY,
    ),
    Mutant(
        "pool-caller-in-context-default",
        CallerInContext,
        "each read keeps its caller in a context variable's shared default record, filled in "
        "place and never reset",
        (
            "conc-01[search-episodes]",
            "conc-01[search-entities]",
            "conc-02[search-episodes]",
            "conc-02[search-entities]",
        ),
        in_process_only=_races.OVERLAP_ONLY,
    ),
    Mutant(
        "pool-shared-results",
        SharedResults,
        "each read gathers its results in one buffer on the service object, cleared at each call",
        (
            "conc-01[search-episodes]",
            "conc-01[search-entities]",
            "conc-02[search-episodes]",
            "conc-02[search-entities]",
        ),
        in_process_only=_races.OVERLAP_ONLY,
    ),
    Mutant(
        "pool-coalesced-without-caller",
        Coalesced,
        "identical reads in flight at once get one answer, keyed without the caller",
        (
            "conc-01[search-episodes]",
            "conc-01[search-entities]",
            "conc-02[search-episodes]",
            "conc-02[search-entities]",
        ),
        in_process_only=_races.OVERLAP_ONLY,
    ),
    Mutant(
        "pool-write-caller-on-self",
        WriteCallerOnSelf,
        "each write_episode keeps its caller on the service object for the call (self.current_caller) and "
        "stamps the write with it, which another request overwrites: reads keep their own caller",
        ("conc-03[search-episodes]", "conc-03[search-entities]"),
        in_process_only=_races.OVERLAP_ONLY,
    ),
    Mutant(
        "pool-write-caller-in-context-default",
        WriteCallerInContext,
        "each write_episode keeps its caller in a context variable's shared default record, filled in "
        "place and never reset, and stamps the write with it: reads keep their own caller",
        ("conc-03[search-episodes]", "conc-03[search-entities]"),
        in_process_only=_races.OVERLAP_ONLY,
    ),
)
