"""Every stable test id is proven able to fail: a built-in mutant names it as a killer (and
test_mutants.py shows the mutant killed), or suites/unproven.json says why not yet.

Parametrized ids count one by one (``leak-01[query]`` is not ``leak-01[list]``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from kbconform import report as reports
from kbconform._resources import data_dir
from kbconform.mutants import discover

#: Every built-in mutant: the tenant-namespace, project-pool, kb-grant, memory-scope and
#: store-tenancy references' sets.
MUTANTS = discover(
    ("reference", "reference-pool", "reference-grant", "reference-memory", "reference-tenancy")
)


def _catalogue() -> set[str]:
    return {entry["id"] for entry in reports.catalogue()}


def _killers() -> dict[str, list[str]]:
    """Each killer id, with the built-in mutants that name it."""
    named: dict[str, list[str]] = {}
    for mutant in MUTANTS:
        for stable in mutant.killers:
            named.setdefault(stable, []).append(mutant.name)
    return named


def _reasons() -> Mapping[str, str]:
    reasons = json.loads((data_dir("suites") / "unproven.json").read_text(encoding="utf-8"))
    assert isinstance(reasons, dict)
    return reasons


def test_every_catalogue_id_is_a_killer_of_a_built_in_mutant_or_has_a_reason() -> None:
    """A test no mutant can make fail proves nothing: name it as a mutant's killer, or say in
    suites/unproven.json why no mutant does yet."""
    unproven = sorted(_catalogue() - set(_killers()) - set(_reasons()))
    assert unproven == [], (
        f"no built-in mutant names these as killers, and unproven.json gives no reason: {unproven}"
    )


def test_every_killer_a_built_in_mutant_names_is_in_the_catalogue() -> None:
    """A killer id the catalogue lacks is a typo or a renamed test: the mutant could never be killed."""
    strangers = {stable: names for stable, names in _killers().items() if stable not in _catalogue()}
    assert strangers == {}, "mutants name killers the catalogue lacks"


def test_no_reason_is_stale_and_each_says_something() -> None:
    """A reason for an id that a mutant now proves, or that the catalogue no longer lists, is
    removed; every reason is a sentence (control: the list is short, not the whole catalogue)."""
    reasons = _reasons()
    proven = {stable: _killers()[stable] for stable in reasons if stable in _killers()}
    assert proven == {}, "these ids are proven now: remove them from suites/unproven.json"
    assert sorted(set(reasons) - _catalogue()) == [], "unproven.json names ids the catalogue lacks"
    assert all(isinstance(reason, str) and len(reason.split()) >= 3 for reason in reasons.values())
    assert len(reasons) < len(_catalogue()) / 2
