"""A run request is checked when it is made, and run_suites takes one or its fields."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from kbconform.runner import DEFAULT_RUN_TIMEOUT, RunError, RunRequest, run_suites


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({}, "exactly one of an adapter, a harness command and a harness URL"),
        ({"adapter": "a:b", "harness": "./harness"}, "exactly one of"),
        ({"adapter": "a:b", "transport": "carrier-pigeon"}, "the transport must be one of"),
        ({"adapter": "a:b", "select": []}, "at least one test id"),
        ({"adapter": "a:b", "run_timeout": 0}, "a positive number of seconds"),
        ({"adapter": "a:b", "select": ["nope-01"]}, "KB_SELECTION_INVALID: .*'nope-01'"),
        ({"adapter": "a:b", "select": ["delete-0[1-5]"]}, "KB_SELECTION_INVALID: .*'delete-0\\[1-5\\]'"),
    ],
)
def test_a_request_that_cannot_run_is_refused_when_made(fields: dict[str, object], problem: str) -> None:
    """Each impossible request is a RunError saying why (control: a sound one is made)."""
    with pytest.raises(RunError, match=problem):
        RunRequest(**fields)  # type: ignore[arg-type]
    assert RunRequest("a:b").run_timeout == DEFAULT_RUN_TIMEOUT


def test_a_request_is_frozen_and_holds_what_it_was_given_as_tuples() -> None:
    """A caller's list changing later does not change the request; with_seed makes a new one."""
    chosen = ["leak-01[list]"]
    request = RunRequest("a:b", select=chosen, extra=["-q"])
    chosen.append("leak-02")
    assert (request.select, request.extra) == (("leak-01[list]",), ("-q",))
    with pytest.raises(dataclasses.FrozenInstanceError):
        request.seed = 3  # type: ignore[misc]
    assert request.with_seed(3) == dataclasses.replace(request, seed=3)
    assert request.seed is None


def test_a_selection_is_held_as_the_catalogue_ids_its_globs_name() -> None:
    """A glob names the ids it matches (``[`` of an id is literal), in the catalogue's order, each
    once; an id is kept as given (control)."""
    from kbconform.report import catalogue

    ids = [str(entry["id"]) for entry in catalogue()]
    request = RunRequest("a:b", select=["leak-01*", "leak-01[list]"])
    assert request.select == tuple(stable for stable in ids if stable.startswith("leak-01"))
    assert "leak-01[list]" in request.select
    assert RunRequest("a:b", select=["leak-01[list]"]).select == ("leak-01[list]",)


def test_run_suites_takes_a_request_or_its_fields_but_not_both() -> None:
    """Giving a request and fields beside it is refused before anything runs; the keyword form
    is checked as the request is (control)."""
    with pytest.raises(RunError, match="not both; got seed"):
        run_suites(RunRequest("a:b"), seed=3)
    with pytest.raises(RunError, match="the transport must be one of"):
        run_suites("a:b", transport="carrier-pigeon")


def test_a_runs_hypothesis_storage_is_the_machines_cache_unless_the_caller_names_one(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A run happens in a fresh directory: Hypothesis keeps what it derives once (its Unicode
    table) in the machine's cache instead; a storage directory the caller names is kept."""
    from kbconform.runner._supervision import environment

    monkeypatch.delenv("HYPOTHESIS_STORAGE_DIRECTORY", raising=False)
    monkeypatch.setenv("KBCONFORM_CACHE", str(tmp_path / "cache"))
    assert environment()["HYPOTHESIS_STORAGE_DIRECTORY"] == str(tmp_path / "cache" / "hypothesis")
    monkeypatch.delenv("KBCONFORM_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert environment()["HYPOTHESIS_STORAGE_DIRECTORY"] == str(tmp_path / "xdg" / "kbconform" / "hypothesis")
    monkeypatch.setenv("HYPOTHESIS_STORAGE_DIRECTORY", str(tmp_path / "mine"))
    assert environment()["HYPOTHESIS_STORAGE_DIRECTORY"] == str(tmp_path / "mine")


def test_a_run_that_writes_no_report_says_so() -> None:
    """A pytest process refusing its arguments writes no report: the outcome is an error with a
    problem naming it, not an empty list a caller might read as sound."""
    outcome = run_suites("tiny_adapter:make", transport="in-process", seed=0, extra=["--no-such-option"])
    assert outcome.verdict == "error"
    assert outcome.problems == (f"the run wrote no report (pytest exited {outcome.returncode})",)
    assert outcome.returncode != 0
