"""The public surface is pinned: adding or removing a name is a deliberate change."""

import importlib
import subprocess
import sys

import pytest

import kbconform
import kbconform.contract
import kbconform.errors


def test_kbconform_exports_exactly_these_names() -> None:
    """The top-level package re-exports a short list."""
    assert sorted(kbconform.__all__) == sorted(
        [
            "BackendUnavailable",
            "ContractViolation",
            "Forbidden",
            "KbconformError",
            "NotFound",
            "Problem",
            "SpoofRejected",
            "Unauthenticated",
            "__version__",
            "explain",
            "is_valid",
            "schema_names",
            "validate",
        ]
    )
    for name in kbconform.__all__:
        assert hasattr(kbconform, name)


def test_every_error_has_a_stable_code() -> None:
    """Each error class carries a distinct KB_ code adapters can map onto."""
    errors = [getattr(kbconform.errors, name) for name in kbconform.errors.__all__]
    skip = {
        kbconform.KbconformError,
        kbconform.Problem,
        kbconform.ContractViolation,
        kbconform.errors.error_texts,
    }
    codes = [error.code for error in errors if error not in skip]
    codes.append(kbconform.ContractViolation(contract="x", problems=()).code)
    assert all(code.startswith("KB_") for code in codes)
    assert len(set(codes)) == len(codes)


SUBPACKAGES = {
    "kbconform.contract": [
        "BASE_URI",
        "IDENTITY_RULES",
        "Item",
        "bundled",
        "check_name",
        "explain",
        "is_valid",
        "iter_records",
        "load",
        "loads",
        "registry",
        "schema_names",
        "text",
        "uri",
        "validate",
        "vectors",
        "is_plain",
        "plain",
        "problems",
        "token",
    ],
    "kbconform.registry": [
        "DEFAULT_HASH_INPUTS",
        "Chunk",
        "Parser",
        "Paths",
        "Registry",
        "Source",
        "derive_name",
    ],
    "kbconform.sources": [
        "DecisionRecordParser",
        "DecisionRecordsSource",
        "MarkdownDocsSource",
        "MarkdownSectionsParser",
        "PythonAstParser",
        "PythonModulesSource",
        "default_parsers",
        "default_sources",
    ],
    "kbconform.workspace": ["Config", "load_config", "read_config", "scan"],
    "kbconform.report": [
        "Report",
        "OWASP",
        "catalogue",
        "catalogue_from",
        "expected",
        "list_hash",
        "matching",
        "render_catalogue",
        "suite_version",
        "unknown_ids",
        "MAX_REPORT_BYTES",
        "read",
        "unwritable",
        "write",
        "build",
        "verify",
        "MAX_MESSAGE",
        "REDACTED",
        "SUMMARY_MESSAGE",
        "first_line",
        "message",
        "redact",
        "secrets_of",
        "FAILED",
        "catalogued_levels",
        "declined_words",
        "design",
        "design_line",
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
        "FAILURES_SHOWN",
        "SHRINK_STOPPED",
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
    ],
    "kbconform.cli": [
        "EXIT_BROKEN_PIPE",
        "EXIT_INTERRUPTED",
        "EXIT_INVALID",
        "EXIT_OK",
        "EXIT_USAGE",
        "UsageError",
        "check_output_path",
        "main",
        "open_input",
        "read_items",
        "read_report",
    ],
    "kbconform.runner": [
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
    ],
    "kbconform.adapter": [
        "ADAPTER_DIR",
        "CAPABILITIES",
        "FEATURES",
        "Adapter",
        "AnswerView",
        "Backend",
        "BackendOptions",
        "Capability",
        "DeletionResultView",
        "FaultPlan",
        "FaultSwitch",
        "Feature",
        "GRANT_INVALID",
        "GRANT_READ_FACADES",
        "GrantHit",
        "GrantHitView",
        "HitView",
        "IngestResultView",
        "KbGrantBackend",
        "KbInfo",
        "KbView",
        "MAX_LIMIT",
        "MODEL_MISMATCH",
        "Manifest",
        "POOL_INVALID",
        "POOL_READ_FACADES",
        "PoolHitView",
        "ProjectPoolBackend",
        "RevisionMap",
        "RevisionResolver",
        "SpoofMode",
        "SpoofWarningView",
        "SupportsAsk",
        "SupportsCount",
        "SupportsEnvelope",
        "SupportsMaintain",
        "SupportsScan",
        "SupportsSync",
        "SyncResultView",
        "adapter_directory",
        "check_backend",
        "check_schema",
        "grant_invalid",
        "load_adapter",
        "model_mismatch",
        "pool_invalid",
        "DELETION_CODES",
        "ENVELOPE_FIELDS",
        "WHERE_OPERATORS",
        "boundary_repo",
        "check_deletion_signal",
        "check_sync",
        "check_where",
        "deletion_code",
        "envelope_claims",
        "deletion_invalid",
        "server_stamps",
        "signal_paths",
        "spoofed_fields",
        "sql_literal",
        "where_literal",
        "where_matches",
        "where_sql",
    ],
    "kbconform.conformance": [
        "ROUNDS",
        "ConcurrentCaller",
        "Reach",
        "Storm",
        "concurrent_callers",
        "concurrently",
        "reach_of",
        "ATTEMPTS",
        "COUNTING",
        "FAULT_KINDS",
        "Fault",
        "every_fault",
        "fault_points",
        "DEFAULT_CALL_TIMEOUT",
        "DEFAULT_SHRINK_BUDGET",
        "DEFAULT_PAGE_SIZES",
        "ENVELOPE_CLAIMS",
        "ENVELOPE_REFUSALS",
        "PROFILES",
        "DeadlineExceeded",
        "NotImplementedFacade",
        "Tail",
        "Unimplemented",
        "ending_tests",
        "Canaries",
        "Canary",
        "Driver",
        "DriverMachine",
        "Ingest",
        "Isolation",
        "MayRefuse",
        "PROBE",
        "TOPIC",
        "call_args",
        "carried",
        "catalogue_entries",
        "few",
        "hits_count",
        "scope_problems",
        "shipped_suites",
        "Policy",
        "Reader",
        "Reading",
        "Refused",
        "Row",
        "differences",
        "Principals",
        "ProfileName",
        "Run",
        "Stored",
        "World",
        "changes",
        "described",
        "ingest_batches",
        "isolation_for",
        "judged",
        "record",
        "refusal",
        "seed_canaries",
        "stored",
        "stored_in_full",
        "unrefused",
    ],
    "kbconform.profiles.tenant_namespace.world": [
        "OPERATOR_ROWS",
        "TenantIsolation",
        "TenantWorld",
        "not_principals",
    ],
    "kbconform.profiles.project_pool.model": ["PoolPolicy"],
    "kbconform.profiles.project_pool.world": ["POOL_LAYOUT", "PoolDriver", "PoolIsolation", "PoolWorld"],
    "kbconform.profiles.kb_grant.model": ["GrantPolicy"],
    "kbconform.profiles.kb_grant.world": ["GRANT_TENANTS", "GrantDriver", "GrantIsolation", "GrantWorld"],
    "kbconform.harness": [
        "OPERATIONS",
        "PROTOCOL",
        "START_TIMEOUT",
        "GROUPS_FILE",
        "Dispatcher",
        "HarnessAdapter",
        "HarnessBackend",
        "HarnessBroken",
        "HttpTransport",
        "RemoteError",
        "StdioTransport",
        "Transport",
        "protocol_stdout",
        "serve_http",
        "serve_stdio",
        "connect",
        "Handler",
        "Served",
        "WireTable",
        "done",
        "Step",
        "Transcript",
        "replay",
        "to_jsonl",
        "json_form",
        "render_openapi",
    ],
    "kbconform.profiles": [
        "BUILT_IN",
        "DEFAULT",
        "ENTRY_POINTS",
        "LEVEL_MEANINGS",
        "SHARED_CAPABILITIES",
        "Implementation",
        "Profile",
        "built_in",
        "capabilities",
        "feature_declined",
        "names",
        "profile",
        "profile_of",
    ],
}


@pytest.mark.parametrize("name", sorted(SUBPACKAGES))
def test_each_layer_exports_exactly_these_names(name: str) -> None:
    """Each layer's __init__ re-exports a pinned list, and every name resolves."""
    module = importlib.import_module(name)
    assert sorted(module.__all__) == sorted(SUBPACKAGES[name])
    for member in module.__all__:
        assert hasattr(module, member)


@pytest.mark.parametrize("name", ["kbconform.adapter", "kbconform.conformance"])
def test_a_name_moved_into_its_profile_is_still_found_where_it_was(name: str) -> None:
    """Each name a layer offered before it moved into its profile's package is found at its old
    home, the very object its new home holds, with no warning."""
    module = importlib.import_module(name)
    assert module.MOVED
    for member, home in module.MOVED.items():
        assert member in module.__all__
        assert getattr(module, member) is getattr(importlib.import_module(home), member), member
    with pytest.raises(AttributeError):
        module.__getattr__("NoSuchName")  # control


def test_the_shared_layers_load_no_profile() -> None:
    """Importing the adapter protocol, the conformance layer and harness-v1 loads no module of a
    profile's package but its descriptor (``__init__``): a moved name is imported when it is
    first asked for (control: then its module is)."""
    probe = (
        "import sys, kbconform.adapter, kbconform.conformance, kbconform.harness; "
        "before = sorted(m for m in sys.modules if m.startswith('kbconform.profiles.') "
        "and m.count('.') > 2); "
        "kbconform.adapter.Backend; "
        "print(before, 'kbconform.profiles.tenant_namespace.protocol' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.strip() == "[] True"
