"""A verdict's failures grouped into causes (kbconform.report.causes): each failure in exactly
one cause, by the fields the suites know (rule, facade family, kind of caller, effect), a
failure's own charge winning over its catalogue entry's; and what the terminal says of them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kbconform import conformance
from kbconform import report as reports
from kbconform.conformance import Reading, charge, charged
from kbconform.contract import validate
from kbconform.errors import ContractViolation, NotFound, SpoofRejected

ROOT = Path(__file__).resolve().parents[2]
ENTRIES = {entry["id"]: dict(entry) for entry in reports.catalogue()}


def _failing(*ids: str, **charges: dict[str, str]) -> list[dict[str, Any]]:
    return [
        {**ENTRIES[i], "status": "fail", "message": "the backend answered", **charges.get(i, {})} for i in ids
    ]


def test_a_caller_named_in_a_parameter_is_its_kind_and_an_operation_its_family() -> None:
    """closed-01's parameters name the operation and the caller: None and look-alikes of a
    principal are no identity, a principal with an invalid tenant id is malformed; the
    operation gives the family and the effect."""
    none = reports.fields(ENTRIES["closed-01[export by None]"])
    malformed = reports.fields(
        ENTRIES["closed-01[ingest by a Principal changed in place to an invalid tenant id]"]
    )
    dict_like = reports.fields(
        ENTRIES["closed-01[apply_deletion_signal by a dict that looks like a principal]"]
    )
    assert (none.caller, none.family, none.effect) == ("no identity", "export", "read")
    assert (malformed.caller, malformed.family, malformed.effect) == (
        "a malformed identity",
        "write",
        "written",
    )
    assert (dict_like.caller, dict_like.family, dict_like.effect) == ("no identity", "delete", "deleted")
    member = reports.fields(ENTRIES["spoof-01[overwrite-customMeta.tenantId]"])
    assert (member.caller, member.effect) == ("a member", "forged")  # the control: no caller named


def test_a_failures_own_charge_wins_over_its_catalogue_entry() -> None:
    """A test that said its caller or effect when it failed is grouped by what it said."""
    plain, charged_ = _failing("iso-01[query]") + _failing(
        "iso-01[query]", **{"iso-01[query]": {"effect": "recall"}}
    )
    assert reports.fields(plain).effect == "read"
    assert reports.fields(charged_).effect == "recall"
    assert reports.cause_key(reports.fields(charged_)) == ("effect", "recall")


def test_every_failure_is_in_exactly_one_cause_and_no_pass_in_any() -> None:
    """Grouping keeps every failing or erring test once, and leaves passes, skips and tests
    that ended at a call not implemented yet out."""
    tests = _failing(
        "closed-01[ingest by None]", "closed-01[export by None]", "spoof-05", "leak-02", "page-01"
    )
    tests += [{**ENTRIES["leak-01[query]"], "status": "pass"}, {**ENTRIES["contract-01"], "status": "skip"}]
    tests += [{**ENTRIES["contract-02"], "status": "fail", "notImplemented": "restore"}]
    made = reports.causes(tests)
    listed = [test for cause in made for test in cause.tests]
    assert sorted(listed) == sorted(
        ["closed-01[ingest by None]", "closed-01[export by None]", "spoof-05", "leak-02", "page-01"]
    )
    by_test = {test: cause for cause in made for test in cause.tests}
    assert (
        by_test["closed-01[ingest by None]"] == by_test["closed-01[export by None]"]
    )  # one check fixes both
    assert by_test["leak-02"] == by_test["page-01"]  # recall, whatever the rule
    assert by_test["spoof-05"] != by_test["leak-02"]
    assert [c.id for c in made] == [f"C{n}" for n in range(1, len(made) + 1)]
    assert made[0].severity == "high"
    assert made[-1].severity == "low"


def test_neos_verdict_lands_in_at_most_25_causes_each_a_hand_written_one() -> None:
    """Neo's recorded verdict (harnesses/neo/verdict.json, with what each failure charged)
    grouped by the kit: at most 25 causes, together holding every failing test, and every
    cause of VERDICT.md's notes (its transcript's test) in one of them."""
    verdict = json.loads((ROOT / "harnesses" / "neo" / "verdict.json").read_text(encoding="utf-8"))
    named = json.loads(
        (ROOT / "harnesses" / "neo" / "transcripts" / "causes.json").read_text(encoding="utf-8")
    )
    charges = verdict.get("charges", {})
    tests = [{**ENTRIES[i], "status": s, **charges.get(i, {})} for i, s in verdict["tests"].items()]
    made = reports.causes(tests)
    failing = sorted(i for i, s in verdict["tests"].items() if s in ("fail", "error"))
    assert sorted(t for c in made for t in c.tests) == failing
    assert len(made) <= 25, [c.title for c in made]
    held = {t for c in made for t in c.tests}
    assert set(named.values()) <= held


def test_the_kits_words_for_callers_and_effects_are_the_suites() -> None:
    """The report's kinds of caller and effects are those a suite charges (one vocabulary)."""
    assert set(reports.EFFECTS) == set(conformance.EFFECTS)
    callers = {value for value in vars(reports._causes).values() if isinstance(value, str)}
    assert set(conformance.CALLERS) <= callers


def test_a_reading_that_shows_too_little_is_recall_and_one_that_shows_too_much_a_read() -> None:
    """Reading.effect: an extra or altered item is another's data read; only missing ones, recall."""
    expected = Reading({"a": "x", "b": "y"}, 2)
    assert expected.effect(Reading({"a": "x"}, 1)) == "recall"
    assert expected.effect(Reading({"a": "x", "b": "y", "c": "z"}, 3)) == "read"
    assert expected.effect(Reading({"a": "x", "b": "changed"}, 2)) == "read"


def test_a_failing_assertion_carries_its_charge_and_an_error_is_left_alone() -> None:
    """charged() charges an AssertionError raised inside it; charge() keeps what a later
    charge leaves None; any other error passes through uncharged."""
    with pytest.raises(AssertionError) as failed, charged("another agent", "read"):
        raise AssertionError("shown")
    assert getattr(failed.value, conformance.CHARGE).fields() == {"caller": "another agent", "effect": "read"}
    charge(failed.value, effect="recall")
    assert getattr(failed.value, conformance.CHARGE).fields() == {
        "caller": "another agent",
        "effect": "recall",
    }
    with pytest.raises(KeyError) as other, charged("another agent", "read"):
        raise KeyError("x")
    assert not hasattr(other.value, conformance.CHARGE)


class _Group(Exception):
    """A group of failures as Hypothesis raises one (``exceptions``; Python 3.10 has no
    ExceptionGroup of its own)."""

    def __init__(self, *exceptions: BaseException) -> None:
        super().__init__("several")
        self.exceptions = exceptions


def test_of_several_distinct_failures_the_gravest_effect_is_charged() -> None:
    """A group of failures (Hypothesis's several distinct ones) charges its gravest effect, in a
    group nested in a group too; a failure with no charge charges nothing (control)."""
    forged = charge(AssertionError("warnings []"), "a member", "forged")
    written = charge(AssertionError("expected Forbidden"), "a member acting as operator", "written")
    plain = AssertionError("no charge")
    group = _Group(forged, _Group(plain, written))
    assert conformance.charge_of(group) == conformance.Charge("a member acting as operator", "written")
    assert conformance.charge_of(_Group(plain, forged)) == conformance.Charge("a member", "forged")
    assert conformance.charge_of(plain) is None


@pytest.mark.slow
def test_the_state_machine_charges_a_refusal_it_expected_with_the_models_caller_and_effect() -> None:
    """state-01 against a mutant that lets a member write into the shared namespace fails charged
    as the model's refusal says (a member acting as operator, another's data written), not by
    its catalogue entry (a read), so it joins that caller's cause; the call that failed names
    the cause's family (an ingest: write), where the catalogue says read (control)."""
    from kbconform import runner

    adapter = "kbconform_reference.namespace.mutants:by_name.member_writes_shared"
    outcome = runner.run_suites(adapter, transport="in-process", seed=0, select=("state-01*",), shrink=False)
    entries = {entry["id"]: entry for entry in outcome.report["tests"]}
    assert {entry["status"] for entry in entries.values()} == {"fail"}, outcome.output[-3000:]
    for entry in entries.values():
        assert (entry.get("caller"), entry.get("effect")) == ("a member acting as operator", "written")
        assert (entry.get("operation"), reports.fields(entry).family) == ("ingest", "write")
    assert reports.fields(ENTRIES["state-01[reject]"] | {"status": "fail"}).effect == "read"
    assert reports.fields(ENTRIES["state-01[reject]"] | {"status": "fail"}).family == "read"


def _report(tests: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "config": {"adapter": "pkg.mod:make"},
        "seed": 7,
        "profile": "quick",
        "tests": tests,
    }


def test_the_terminal_leads_with_causes_each_test_once_with_its_rerun() -> None:
    """cause_lines: K causes from N failures, then each cause with its rule, fix, its tests
    each once (the first few with their message) and the command that reruns its example."""
    ids = [
        f"closed-01[ingest by {label}]"
        for label in ("None", "a tenant id string", "a dict that looks like a principal")
    ]
    ids += ["closed-01[export by None]", "leak-02"]
    lines = reports.cause_lines(_report(_failing(*ids)))
    text = "\n".join(lines)
    assert lines[0].startswith("2 causes from 5 failures")
    assert all(text.count(f"{i} ") + text.count(f"{i},") + text.count(f"{i}\n") >= 1 for i in ids)
    assert sum(line.count("closed-01[export by None]") for line in lines if "rerun" not in line) == 1
    assert "rerun: kbconform run --adapter pkg.mod:make --only 'closed-01[export by None]' --seed 7" in text
    assert "fix: " in text
    assert "rule: schemas/read-filter.md#fail-closed" in text
    assert reports.cause_lines(_report([{**ENTRIES["leak-02"], "status": "pass"}])) == []  # the control


def test_the_slowest_tests_are_named_with_their_time_and_calls() -> None:
    """slowest_line names the slowest tests first, with seconds and calls; a report without
    durations (an older one) gives nothing."""
    tests = [
        {**ENTRIES["leak-02"], "status": "pass", "duration": 1.5, "calls": 40},
        {**ENTRIES["state-01[overwrite]"], "status": "pass", "duration": 95.25, "calls": 14010},
        {**ENTRIES["page-01"], "status": "pass", "duration": 3.0, "calls": 1200},
    ]
    line = reports.slowest_line({"tests": tests}, shown=2)
    assert line == (
        "slowest tests (of 99.8 s in tests): state-01[overwrite] 95.2 s (14,010 calls), "
        "page-01 3.0 s (1,200 calls)"
    )
    assert (
        reports.slowest_line({"tests": [{k: v for k, v in t.items() if k != "duration"} for t in tests]})
        == ""
    )


def test_a_report_with_causes_durations_and_charges_is_valid_and_an_older_one_too() -> None:
    """report-v1 takes a test's duration, calls, caller and effect and the report's causes, all
    optional: a report without them stays valid."""
    vectors = json.loads((ROOT / "schemas" / "vectors" / "report-v1.json").read_text(encoding="utf-8"))
    base = next(case["data"] for case in vectors[0]["tests"] if case["valid"])
    validate(base, "report-v1")
    tests = [{**t, "duration": 0.5, "calls": 3} for t in base["tests"]]
    failing = _failing("leak-02", **{"leak-02": {"effect": "recall", "caller": "a member"}})
    newer = {**base, "tests": [*tests, {**failing[0], "duration": 1.0, "calls": 9}]}
    newer["causes"] = reports.cause_records(newer)
    validate(newer, "report-v1")
    assert newer["causes"][0]["tests"] == ["leak-02"]
    assert newer["causes"][0]["rerun"].startswith("kbconform run")


def test_every_charge_names_a_test_of_the_catalogue() -> None:
    """CHARGES has no entry for a test the catalogue lacks (a renamed test keeps its charge), and
    every built-in profile's test has one (a new test says what its failure charges)."""
    bases = {entry["id"].split("[", 1)[0] for entry in ENTRIES.values()}
    assert set(reports.CHARGES) <= bases
    assert bases - set(reports.CHARGES) == set()
    assert all(effect in reports.EFFECTS for _, _, effect in reports.CHARGES.values())


def test_a_run_whose_callers_took_turns_says_so_beside_the_level() -> None:
    """Behind a harness on stdio the concurrency tests ran in turns: the terminal says a race
    could not show; a harness over HTTP, an adapter in process, or a run where no concurrency
    test ran says nothing (controls)."""
    tests = [{**ENTRIES["conc-01[query]"], "status": "pass"}, {**ENTRIES["iso-01[query]"], "status": "pass"}]
    stdio = {"harness": {"command": "python -m kbconform serve m:f"}}
    line = reports.turns_line({"config": stdio, "tests": tests})
    assert line.startswith("callers at once took turns (1 concurrency tests)")
    assert "a race cannot" in line
    assert reports.turns_line({"config": {"harness": {"url": "http://127.0.0.1:1"}}, "tests": tests}) == ""
    assert reports.turns_line({"config": {"adapter": "m:f"}, "tests": tests}) == ""
    declined = [{**ENTRIES["conc-01[query]"], "status": "skip", "reason": "concurrency: serial"}]
    assert reports.turns_line({"config": stdio, "tests": declined}) == ""


def _judged_failure(call: str, expected: object, outcome: object) -> BaseException:
    """The failure the suites' judge gives a call whose outcome breaks ``expected``."""

    def make() -> object:
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    try:
        conformance.judged(call, expected, make, [], [], False)
    except (AssertionError, TypeError, KeyError) as failed:
        return failed
    raise AssertionError(f"{call} was not failed")


def _entry(test_id: str, error: BaseException) -> dict[str, Any]:
    """``test_id``'s failing entry, with what ``error`` charges (as the plugin records it)."""
    found = conformance.charge_of(error)
    return {**ENTRIES[test_id], "status": "fail", "message": str(error), **(found.fields() if found else {})}


def test_the_judge_charges_which_way_the_backend_took_the_call() -> None:
    """judged: a call the model refuses that the backend answered is charged ``accepted``; a
    call the model lets land that the backend refused, ``refused``; a refusal with the wrong
    error, neither; a call that landed as the model says fails nothing (the control)."""
    invalid = conformance.Refused(ContractViolation, "KB_CONTRACT_VIOLATION: x")
    accepted = conformance.charge_of(_judged_failure("ingest", invalid, []))
    refused = conformance.charge_of(_judged_failure("ingest", None, SpoofRejected("alpha", ())))
    wrong = conformance.charge_of(_judged_failure("ingest", invalid, SpoofRejected("alpha", ())))
    assert (accepted and accepted.direction, refused and refused.direction) == ("accepted", "refused")
    assert wrong is not None
    assert wrong.direction is None
    assert conformance.judged("ingest", None, lambda: [], [], [], False) == []


def test_refuses_charges_a_call_the_backend_answered_as_accepted() -> None:
    """refuses(): an answered call fails charged ``accepted``; the refusal it expects is kept
    for the test (the control); another error passes through uncharged."""
    with (
        pytest.raises(AssertionError) as answered,
        conformance.refuses(ContractViolation, "list with limit 0"),
    ):
        pass
    assert str(answered.value) == "list with limit 0 must raise ContractViolation; it was answered"
    assert conformance.charge_of(answered.value) == conformance.Charge(direction="accepted")
    refusal = ContractViolation(contract="x", problems=(), code="KB_CONTRACT_VIOLATION")
    with conformance.refuses(ContractViolation, "list with limit 0") as raised:
        raise refusal
    assert raised == [refusal]
    with pytest.raises(KeyError) as other, conformance.refuses(ContractViolation, "list"):
        raise KeyError("x")
    assert conformance.charge_of(other.value) is None


def test_a_strictness_cause_says_whether_the_backend_refused_or_accepted_the_input() -> None:
    """A strictness cause's heading says which way its failures' charges say the backend took
    the input: refused input the rule lets land, "refuses input that ... accepts"; answered
    input the rule refuses, "accepts input that ... refuses" (the control); both at once, both;
    a charge that says neither, neither, whatever the message says."""
    invalid = conformance.Refused(ContractViolation, "KB_CONTRACT_VIOLATION: x")
    refused = _entry("bytes-01[mini]", _judged_failure("ingest", None, SpoofRejected("alpha", ())))
    accepted = _entry("bytes-01[mini]", _judged_failure("ingest", invalid, []))

    def title(*tests: dict[str, Any]) -> str:
        (cause,) = reports.causes(tests)
        return cause.title

    assert title(refused) == "write refuses input that parsed-chunk.md accepts"
    assert title(accepted) == "write accepts input that parsed-chunk.md refuses"
    assert title(refused, accepted) == (
        "write accepts input that parsed-chunk.md refuses, and refuses input it accepts"
    )
    said_nothing = {
        **ENTRIES["bytes-01[mini]"],
        "status": "fail",
        "message": "DID NOT RAISE ContractViolation",
    }
    assert title(said_nothing) == "write takes input otherwise than parsed-chunk.md says"


def test_an_error_the_contract_does_not_name_is_its_own_cause_not_the_rules_effect() -> None:
    """A TypeError out of a call the judge made is charged ``failed`` with its name, never the
    refusal's cross-tenant effect: mem-08's delete of every memory that raised one is headed
    by that error, its family the call's; an answered refusal in the same test keeps the
    rule's effect (the control)."""
    no_scope = conformance.Refused(NotFound, "no memory", caller="another tenant", effect="deleted")
    raised = _judged_failure("delete_all", no_scope, TypeError("unhashable type: 'dict'"))
    assert isinstance(raised, TypeError)
    with pytest.raises(TypeError) as in_driver, conformance.charged(operation="delete_all"):
        raise raised
    entry = _entry("mem-08", in_driver.value)
    assert (entry["effect"], entry["raised"], entry["operation"]) == ("failed", "TypeError", "delete_all")
    (cause,) = reports.causes([entry])
    assert cause.title == "a call fails with TypeError, which the contract does not name (delete)"
    assert (cause.severity, cause.effect) == ("medium", "failed")
    answered = _entry("mem-08", _judged_failure("delete_all", no_scope, None))
    (control,) = reports.causes([answered])
    assert control.title == "another tenant gets through: another's data deleted (delete)"


def test_one_error_is_one_cause_whatever_it_called_and_a_caller_it_stopped_is_not_high() -> None:
    """One error type out of a read and a write is one cause naming both families (mem0's
    `None` id fails search and add in one helper); a caller with no identity whose call failed
    with it got nothing, so the cause keeps the error's severity, while a call by no identity
    that was answered is high (the control)."""
    read = {
        **ENTRIES["iso-02[search-memories]"],
        "status": "fail",
        "message": "m",
        "effect": "failed",
        "raised": "AttributeError",
    }
    write = {
        **ENTRIES["mem-02[None value]"],
        "status": "fail",
        "message": "m",
        "effect": "failed",
        "raised": "AttributeError",
    }
    (cause,) = reports.causes([read, write])
    assert cause.title == "a call fails with AttributeError, which the contract does not name (read, write)"
    assert cause.severity == "medium"
    answered = {**ENTRIES["mem-02[None value]"], "status": "fail", "message": "m"}
    (control,) = reports.causes([answered])
    assert (control.title, control.severity) == ("calls by no identity are not refused (write)", "high")


def test_an_error_behind_a_harness_is_named_as_the_harness_named_it() -> None:
    """A harness's internal error names the type the backend raised (``TypeError: ...``); one
    whose message names none is its code (the control)."""
    from kbconform.harness import RemoteError

    named = RemoteError("deleteMemories", "KB_HARNESS_INTERNAL", "TypeError: unhashable type: 'dict'")
    bare = RemoteError("deleteMemories", "KB_HARNESS_INTERNAL", "the store went away")
    assert (conformance.error_name(named), conformance.error_name(bare)) == (
        "TypeError",
        "KB_HARNESS_INTERNAL",
    )
    assert conformance.error_name(KeyError("x")) == "KeyError"


def test_a_write_that_replaced_the_callers_own_memory_is_not_a_crossing() -> None:
    """An add that returned the id of a memory of the very same scope is charged ``replaced``
    (the caller's own data); of another scope, another's data written (the control)."""
    from kbconform.profiles.memory_scope.model import ScopePolicy

    policy = ScopePolicy(keys=("user_id",))
    policy.commit_add({"user_id": "alice"}, "kbm1 hut", {}, "m1")
    assert policy.reused({"user_id": "alice"}, "m1") == (None, "replaced")
    assert policy.reused({"user_id": "bob"}, "m1") == ("another tenant", "written")
    assert policy.reused({"user_id": "alice"}, "m2") == (None, None)
    replaced = {**ENTRIES["mem-11"], "status": "fail", "effect": "replaced", "operation": "add"}
    written = {**replaced, "effect": "written", "caller": "another tenant"}
    assert reports.causes([replaced])[0].title == (
        "a write replaced or merged into the caller's own data: memory-scope.md#the-rules (write)"
    )
    assert reports.causes([written])[0].title == "another tenant gets through: another's data written (write)"


def test_a_search_short_of_its_scope_is_recall_only_when_nothing_of_anothers_shows() -> None:
    """shortfall: fewer hits than the scope (or the limit) holds, each of the scope with its
    text, none twice; a hit of another's, an altered text, an id twice or too many hits is not
    one (controls)."""
    scope = {"a": "x", "b": "y"}

    def hits(*pairs: tuple[str, str]) -> list[Any]:
        return [type("Hit", (), {"id": i, "text": t})() for i, t in pairs]

    assert conformance.shortfall(scope, hits(("a", "x")))
    assert conformance.shortfall(scope, hits(), limit=1)
    assert not conformance.shortfall(scope, hits(("a", "x")), limit=1)
    assert not conformance.shortfall(scope, hits(("a", "x"), ("c", "z")))
    assert not conformance.shortfall(scope, hits(("a", "changed")))
    assert not conformance.shortfall({**scope, "c": "z"}, hits(("a", "x"), ("a", "x")))


def _mem05(mutant: str) -> tuple[dict[str, Any], list[reports.Cause]]:
    """mem-05's entry against a mutant of the memory-scope reference, in process, and its cause."""
    from kbconform import runner

    adapter = f"kbconform_reference.memory.mutants:by_name.{mutant.replace('-', '_')}"
    outcome = runner.run_suites(adapter, transport="in-process", seed=0, select=("mem-05",), shrink=False)
    entries = [entry for entry in outcome.report["tests"] if entry["id"] == "mem-05"]
    assert [entry["status"] for entry in entries] == ["fail"], outcome.output[-3000:]
    return entries[0], reports.causes(entries)


@pytest.mark.slow
def test_a_memory_scope_search_short_of_its_scope_is_recall_and_a_crossing_is_not() -> None:
    """mem-05 against the reference's mutants: one that leaves an updated memory out of every
    search (its scope's list still shows it) fails charged recall and headed so, a note that
    bars no level; one that updates another scope's memory by its id fails headed as another
    tenant's data written, and withholds the level (the control)."""
    from kbconform._levels import recall_only

    short, (recall,) = _mem05("mem-update-left-out-of-search")
    assert (short.get("effect"), short.get("operation")) == ("recall", "search"), short.get("message")
    assert recall.title == "a read returns less than its scope holds (read)"
    assert recall_only(short)
    crossed, (crossing,) = _mem05("mem-update-ignores-scope")
    written = "another tenant gets through: another's data written (write)"
    assert crossing.title == written, crossed.get("message")
    assert crossed.get("direction") == "accepted"
    assert not recall_only(crossed)


def test_an_error_out_of_a_test_that_no_one_charged_says_what_the_backend_did() -> None:
    """The plugin's charge of a failure: a kit error out of the test is a call refused
    (``refused``); a TypeError, a call failed with an error the contract does not name; an
    uncharged assertion, pytest's own outcome and a charged failure say only what they said
    (controls)."""
    from kbconform.plugin._verdict import _charge

    def ended(error: BaseException) -> dict[str, str]:
        def fail() -> None:
            raise error

        return _charge(pytest.CallInfo.from_call(fail, "call", reraise=()))

    assert ended(NotFound("m1")) == {"direction": "refused"}
    assert ended(TypeError("unhashable type: 'dict'")) == {"effect": "failed", "raised": "TypeError"}
    assert ended(AssertionError("shown")) == {}
    with pytest.raises(pytest.fail.Exception) as outcome:
        pytest.fail("stopped")
    assert ended(outcome.value) == {}
    assert ended(charge(AssertionError("x"), effect="recall")) == {"effect": "recall"}


class _Memories:
    """A memory-scope backend in memory, written for the recall charge: a search (its limit
    taken over everyone's memories first when ``after_top_k``) leaves out what ``unsearched``
    names; a list leaves out what ``lost`` names."""

    def __init__(self, after_top_k: bool = False) -> None:
        self.rows: dict[str, tuple[dict[str, str], str]] = {}
        self.unsearched: set[str] = set()
        self.lost: set[str] = set()
        self.after_top_k = after_top_k

    def add(self, scope: dict[str, str], text: str, metadata: object) -> str:
        memory = f"m{len(self.rows)}"
        self.rows[memory] = (dict(scope), text)
        return memory

    def _hits(self, scope: dict[str, str], left_out: set[str]) -> list[Any]:
        from kbconform.profiles.memory_scope.protocol import MemoryHit

        return [
            MemoryHit(memory, text)
            for memory, (written, text) in self.rows.items()
            if memory not in left_out and all(written.get(k) == v for k, v in scope.items())
        ]

    def search(self, scope: dict[str, str], text: str, limit: int, where: object) -> list[Any]:
        if self.after_top_k:
            nearest = set(list(self.rows)[:limit])
            return [hit for hit in self._hits(scope, self.unsearched) if hit.id in nearest]
        return self._hits(scope, self.unsearched)[:limit]

    def list(self, scope: dict[str, str]) -> list[Any]:
        return self._hits(scope, self.lost)


def _charged_read(backend: _Memories, read: Any) -> dict[str, str]:
    from kbconform.profiles.memory_scope.model import ScopePolicy
    from kbconform.profiles.memory_scope.world import ScopeDriver

    d = ScopeDriver(backend, ScopePolicy(keys=("user_id",)), facades=("search", "list"))
    d.add({"user_id": "bob"})
    mine = [d.add({"user_id": "alice"}), d.add({"user_id": "alice"})]
    backend.unsearched.add(mine[0])
    with pytest.raises(AssertionError) as failed:
        read(d, mine)
    found = conformance.charge_of(failed.value)
    return found.fields() if found else {}


def test_a_memory_scope_search_short_of_a_scope_its_list_shows_is_recall() -> None:
    """The memory-scope driver charges a search that lacks a memory its scope's list shows as
    recall (a search's call); one whose list lacks it too (deleted or moved by another's
    call, as far as reads tell), or whose places another scope's memories took (the same
    search past every scope shows it), keeps the test's own charge (controls)."""

    def search(d: Any, mine: list[str]) -> None:
        d.check()

    assert _charged_read(_Memories(), search) == {"effect": "recall", "operation": "search"}
    lost = _Memories()
    lost.lost = lost.unsearched
    assert _charged_read(lost, search) == {}

    def top_one(d: Any, mine: list[str]) -> None:
        d.read("search", {"user_id": "alice"}, text="the hut", limit=1)

    crowded = _Memories(after_top_k=True)
    assert _charged_read(crowded, top_one) == {}
