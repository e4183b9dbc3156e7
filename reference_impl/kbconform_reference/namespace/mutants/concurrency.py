"""Mutants of the tenant-namespace reference, callers at once (``schemas/concurrency.md``): one
request's state kept where every request shares it. Called one caller at a time each answers as
the reference does; two requests that overlap read each other's caller, results or answer."""

from __future__ import annotations

from kbconform_reference import _races
from kbconform_reference.namespace.mutants._base import Mutant
from kbconform_reference.namespace.service import KnowledgeBase

#: The read facades the concurrency suite calls at once.
READS = ("query", "get", "list", "count", "ask")
#: Those that return a sequence (a result buffer holds one).
SEQUENCES = ("query", "list")

CallerOnSelf = _races.caller_on_self(KnowledgeBase, READS)
CallerInContext = _races.caller_in_context_default(KnowledgeBase, READS)
SharedResults = _races.shared_results(KnowledgeBase, SEQUENCES)
#: The write facade the concurrency suite calls at once (conc-03).
WRITES = ("ingest",)
WriteCallerOnSelf = _races.caller_on_self(KnowledgeBase, WRITES)
WriteCallerInContext = _races.caller_in_context_default(KnowledgeBase, WRITES)
Coalesced = _races.coalesced(KnowledgeBase, READS)

MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "caller-on-self",
        CallerOnSelf,
        "each read keeps its caller on the service object for the call (self.current_caller), "
        "which another request overwrites",
        (
            "conc-01[query]",
            "conc-01[get]",
            "conc-01[list]",
            "conc-01[count]",
            "conc-01[ask]",
            "conc-02[query]",
            "conc-02[get]",
            "conc-02[list]",
            "conc-02[count]",
            "conc-02[ask]",
        ),
        in_process_only=_races.OVERLAP_ONLY,
    ),
    Mutant(
        "caller-in-context-default",
        CallerInContext,
        "each read keeps its caller in a context variable's shared default record, filled in "
        "place and never reset",
        (
            "conc-01[query]",
            "conc-01[get]",
            "conc-01[list]",
            "conc-01[count]",
            "conc-01[ask]",
            "conc-02[query]",
            "conc-02[get]",
            "conc-02[list]",
            "conc-02[count]",
            "conc-02[ask]",
        ),
        in_process_only=_races.OVERLAP_ONLY,
    ),
    Mutant(
        "shared-results",
        SharedResults,
        "each read gathers its results in one buffer on the service object, cleared at each call",
        ("conc-01[query]", "conc-01[list]", "conc-02[query]", "conc-02[list]"),
        in_process_only=_races.OVERLAP_ONLY,
    ),
    Mutant(
        "coalesced-without-caller",
        Coalesced,
        "identical reads in flight at once get one answer, keyed without the caller",
        (
            "conc-01[query]",
            "conc-01[get]",
            "conc-01[list]",
            "conc-01[count]",
            "conc-01[ask]",
            "conc-02[query]",
            "conc-02[get]",
            "conc-02[list]",
            "conc-02[count]",
            "conc-02[ask]",
        ),
        in_process_only=_races.OVERLAP_ONLY,
    ),
    Mutant(
        "write-caller-on-self",
        WriteCallerOnSelf,
        "each ingest keeps its caller on the service object for the call (self.current_caller) and "
        "stamps the write with it, which another request overwrites: reads keep their own caller",
        ("conc-03[query]", "conc-03[get]", "conc-03[list]", "conc-03[count]", "conc-03[ask]"),
        in_process_only=_races.OVERLAP_ONLY,
    ),
    Mutant(
        "write-caller-in-context-default",
        WriteCallerInContext,
        "each ingest keeps its caller in a context variable's shared default record, filled in "
        "place and never reset, and stamps the write with it: reads keep their own caller",
        ("conc-03[query]", "conc-03[get]", "conc-03[list]", "conc-03[count]", "conc-03[ask]"),
        in_process_only=_races.OVERLAP_ONLY,
    ),
)
