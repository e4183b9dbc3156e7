"""Mutants of the kb-grant reference, callers at once (``schemas/concurrency.md``): one request's
state kept where every request shares it. Called one caller at a time each answers as the
reference does; two requests that overlap read each other's caller, results or answer."""

from __future__ import annotations

from kbconform_reference import _races
from kbconform_reference.grant.mutants._base import Mutant
from kbconform_reference.grant.service import KbGrantService

#: The read facades the concurrency suite calls at once.
READS = ("search", "get_kb", "list_kbs")
#: Those that return a sequence (a result buffer holds one).
SEQUENCES = ("search", "list_kbs")

CallerOnSelf = _races.caller_on_self(KbGrantService, READS)
CallerInContext = _races.caller_in_context_default(KbGrantService, READS)
SharedResults = _races.shared_results(KbGrantService, SEQUENCES)
#: A search names the caller's own knowledge bases: two callers' searches are never alike.
#: The write facade the concurrency suite calls at once (conc-03).
WRITES = ("ingest",)
WriteCallerOnSelf = _races.caller_on_self(KbGrantService, WRITES)
WriteCallerInContext = _races.caller_in_context_default(KbGrantService, WRITES)
Coalesced = _races.coalesced(KbGrantService, ("get_kb", "list_kbs"))

MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "grant-caller-on-self",
        CallerOnSelf,
        "each read keeps its caller on the service object for the call (self.current_caller), "
        "which another request overwrites",
        (
            "conc-01[search-kbs]",
            "conc-01[get-kb]",
            "conc-01[list-kbs]",
            "conc-02[search-kbs]",
            "conc-02[get-kb]",
            "conc-02[list-kbs]",
        ),
        in_process_only=_races.OVERLAP_ONLY,
    ),
    Mutant(
        "grant-caller-in-context-default",
        CallerInContext,
        "each read keeps its caller in a context variable's shared default record, filled in "
        "place and never reset",
        (
            "conc-01[search-kbs]",
            "conc-01[get-kb]",
            "conc-01[list-kbs]",
            "conc-02[search-kbs]",
            "conc-02[get-kb]",
            "conc-02[list-kbs]",
        ),
        in_process_only=_races.OVERLAP_ONLY,
    ),
    Mutant(
        "grant-shared-results",
        SharedResults,
        "each read gathers its results in one buffer on the service object, cleared at each call",
        ("conc-01[search-kbs]", "conc-01[list-kbs]", "conc-02[search-kbs]", "conc-02[list-kbs]"),
        in_process_only=_races.OVERLAP_ONLY,
    ),
    Mutant(
        "grant-coalesced-without-caller",
        Coalesced,
        "identical reads in flight at once get one answer, keyed without the caller",
        (
            "conc-01[get-kb]",
            "conc-01[list-kbs]",
            "conc-02[get-kb]",
            "conc-02[list-kbs]",
        ),
        in_process_only=_races.OVERLAP_ONLY,
    ),
    Mutant(
        "grant-write-caller-on-self",
        WriteCallerOnSelf,
        "each ingest keeps its caller on the service object for the call (self.current_caller) and "
        "stamps the write with it, which another request overwrites: reads keep their own caller",
        ("conc-03[search-kbs]", "conc-03[get-kb]", "conc-03[list-kbs]"),
        in_process_only=_races.OVERLAP_ONLY,
    ),
    Mutant(
        "grant-write-caller-in-context-default",
        WriteCallerInContext,
        "each ingest keeps its caller in a context variable's shared default record, filled in "
        "place and never reset, and stamps the write with it: reads keep their own caller",
        ("conc-03[search-kbs]", "conc-03[get-kb]", "conc-03[list-kbs]"),
        in_process_only=_races.OVERLAP_ONLY,
    ),
)
