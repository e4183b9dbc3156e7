"""Conformance reports (report-v1): build, verify, and render as a table, Markdown and a badge.

The suite's test list ships as ``suites/catalogue.json``: every stable test id with its suite,
level, required capabilities and the read facade or spoof mode it runs in. From it and a
manifest follows the exact list of tests a run must have (:func:`expected`); a report lacking
one is incomplete, and ``kbconform verify`` rejects it. :class:`Report` is a report as a typed
record, which every output of ``kbconform run`` reads.

One module per job: ``_catalogue`` (the test list, its hash, the tests a run must report),
``_files`` (reading strictly, writing whole), ``_causes`` (failures grouped into causes),
``_messages`` (redaction and failing tests'
messages), ``_verdicts`` (levels earned and their words), ``_build`` (a run's report, and
verifying one), ``_record`` (:class:`Report`), ``_terminal`` (the table, failure and rerun
lines) and ``_summary`` (Markdown summary and badge). Every name is re-exported here.
"""

from __future__ import annotations

from kbconform.report._build import build, cause_records, verify
from kbconform.report._catalogue import (
    OWASP,
    catalogue,
    catalogue_from,
    expected,
    list_hash,
    matching,
    render_catalogue,
    suite_version,
    unknown_ids,
)
from kbconform.report._causes import (
    CHARGES,
    EFFECTS,
    SEVERITIES,
    Cause,
    Fields,
    cause_key,
    causes,
    causes_line,
    fields,
)
from kbconform.report._files import MAX_REPORT_BYTES, read, unwritable, write
from kbconform.report._messages import (
    MAX_MESSAGE,
    REDACTED,
    SUMMARY_MESSAGE,
    first_line,
    message,
    redact,
    secrets_of,
)
from kbconform.report._record import Report
from kbconform.report._summary import badge, summary
from kbconform.report._terminal import (
    FAILURES_SHOWN,
    LEGEND,
    SHRINK_STOPPED,
    UNSHRUNK,
    cause_lines,
    failure_lines,
    not_implemented,
    replay_command,
    rerun_command,
    served_adapter,
    slowest_line,
    table,
    unshrunk,
)
from kbconform.report._verdicts import (
    FAILED,
    catalogued_levels,
    declared_design,
    declined_words,
    design,
    design_line,
    earned,
    failing,
    halted,
    level_line,
    level_verdicts,
    levels,
    price_line,
    reached,
    rests_on,
    selection,
    status_changes,
    stopped,
    turns_line,
)

__all__ = [
    "Report",
    # causes
    "CHARGES",
    "EFFECTS",
    "SEVERITIES",
    "Cause",
    "Fields",
    "cause_key",
    "causes",
    "causes_line",
    "fields",
    # the catalogue and the tests a run must report
    "OWASP",
    "catalogue",
    "catalogue_from",
    "expected",
    "list_hash",
    "matching",
    "render_catalogue",
    "suite_version",
    "unknown_ids",
    # reading and writing
    "MAX_REPORT_BYTES",
    "read",
    "unwritable",
    "write",
    # building and verifying
    "build",
    "cause_records",
    "verify",
    # redaction and messages
    "MAX_MESSAGE",
    "REDACTED",
    "SUMMARY_MESSAGE",
    "first_line",
    "message",
    "redact",
    "secrets_of",
    # levels and their words
    "FAILED",
    "catalogued_levels",
    "declined_words",
    "design",
    "design_line",
    "price_line",
    "turns_line",
    "declared_design",
    "earned",
    "failing",
    "halted",
    "level_line",
    "level_verdicts",
    "levels",
    "reached",
    "rests_on",
    "selection",
    "status_changes",
    "stopped",
    # the terminal, the summary and the badge
    "FAILURES_SHOWN",
    "LEGEND",
    "SHRINK_STOPPED",
    "cause_lines",
    "slowest_line",
    "UNSHRUNK",
    "badge",
    "failure_lines",
    "not_implemented",
    "replay_command",
    "rerun_command",
    "served_adapter",
    "summary",
    "table",
    "unshrunk",
]
