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
