"""Mutants of the memory-scope reference, callers at once (``schemas/concurrency.md``): one
request's state kept where every request shares it. Called one caller at a time each answers as
the reference does; two requests that overlap read each other's caller, results or answer."""

from __future__ import annotations

from kbconform_reference import _races
from kbconform_reference.memory.mutants._base import Mutant
from kbconform_reference.memory.service import ScopedMemory

#: The read facades the concurrency suite calls at once.
READS = ("search", "list")
#: Those that return a sequence (a result buffer holds one).
SEQUENCES = ("search", "list")

CallerOnSelf = _races.caller_on_self(ScopedMemory, READS)
CallerInContext = _races.caller_in_context_default(ScopedMemory, READS)
SharedResults = _races.shared_results(ScopedMemory, SEQUENCES)
#: The write facade the concurrency suite calls at once (conc-03).
WRITES = ("add",)
WriteCallerOnSelf = _races.caller_on_self(ScopedMemory, WRITES)
WriteCallerInContext = _races.caller_in_context_default(ScopedMemory, WRITES)
Coalesced = _races.coalesced(ScopedMemory, READS)

MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "mem-caller-on-self",
        CallerOnSelf,
        "each read keeps its caller on the service object for the call (self.current_caller), "
        "which another request overwrites",
        (
            "conc-01[search-memories]",
            "conc-01[list-memories]",
            "conc-02[search-memories]",
            "conc-02[list-memories]",
        ),
        in_process_only=_races.OVERLAP_ONLY,
    ),
    Mutant(
        "mem-caller-in-context-default",
        CallerInContext,
        "each read keeps its caller in a context variable's shared default record, filled in "
        "place and never reset",
        (
            "conc-01[search-memories]",
            "conc-01[list-memories]",
            "conc-02[search-memories]",
            "conc-02[list-memories]",
        ),
        in_process_only=_races.OVERLAP_ONLY,
    ),
    Mutant(
        "mem-shared-results",
        SharedResults,
        "each read gathers its results in one buffer on the service object, cleared at each call",
        (
            "conc-01[search-memories]",
            "conc-01[list-memories]",
            "conc-02[search-memories]",
            "conc-02[list-memories]",
        ),
        in_process_only=_races.OVERLAP_ONLY,
    ),
    Mutant(
        "mem-coalesced-without-caller",
        Coalesced,
        "identical reads in flight at once get one answer, keyed without the caller",
        (
            "conc-01[search-memories]",
            "conc-01[list-memories]",
            "conc-02[search-memories]",
            "conc-02[list-memories]",
        ),
        in_process_only=_races.OVERLAP_ONLY,
    ),
    Mutant(
        "mem-write-caller-on-self",
        WriteCallerOnSelf,
        "each add keeps its caller on the service object for the call (self.current_caller) and "
        "stamps the write with it, which another request overwrites: reads keep their own caller",
        ("conc-03[search-memories]", "conc-03[list-memories]"),
        in_process_only=_races.OVERLAP_ONLY,
    ),
    Mutant(
        "mem-write-caller-in-context-default",
        WriteCallerInContext,
        "each add keeps its caller in a context variable's shared default record, filled in "
        "place and never reset, and stamps the write with it: reads keep their own caller",
        ("conc-03[search-memories]", "conc-03[list-memories]"),
        in_process_only=_races.OVERLAP_ONLY,
    ),
)
