"""Collecting the suites: each test's facade and spoof mode parametrized from the manifest, the
tests kept for the run's profile, level and selection, those needing a declined capability
skipped with the manifest's reason, their stable ids and fixtures checked; and, in catalogue
mode, the entries the tests declare."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kbconform._levels import LEVELS
from kbconform.plugin import _fixtures
from kbconform.plugin._stash import CATALOGUE, DECLINED, DESELECTED, RUN, SELECTION, case, stable_id

# The plugin's fixtures: a suite test must get these, not an override from a conftest or plugin.
_OWN_FIXTURES = (
    "kbconform_run",
    "kbconform_open",
    "kbconform_backend",
    "kbconform_principals",
    "kbconform_canaries",
    "kbconform_isolation",
    "kbconform_world",
)


def parametrize(metafunc: pytest.Metafunc) -> None:
    """``kbconform_facade`` runs once per declared read facade, ``kbconform_spoof_mode`` per mode
    (:data:`kbconform._capabilities.AXES`)."""
    from kbconform._capabilities import AXES

    run = metafunc.config.stash.get(RUN, None)
    listing = metafunc.config.stash.get(CATALOGUE, None)
    for axis in AXES:
        if axis.fixture in metafunc.fixturenames:
            manifest = run.manifest.raw if run else listing[1] if listing else None
            metafunc.parametrize(axis.fixture, axis.values(manifest), ids=list(axis.ids(manifest)))


def requires(mark: pytest.Mark) -> tuple[str, ...]:
    required = mark.kwargs.get("requires") or ()
    return (required,) if isinstance(required, str) else tuple(required)


def select(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Keep the suite tests up to the run's level (and of its selection), refuse shared ids and
    overridden fixtures, and skip, with the manifest's reason, each test needing a capability
    the manifest declines."""
    if CATALOGUE in config.stash:
        _write_catalogue(config, items)
        return
    run = config.stash.get(RUN, None)
    if run is None:
        return
    from kbconform._capabilities import skip_reason
    from kbconform.profiles import capabilities

    chosen = config.stash[SELECTION]
    limit = LEVELS.index(run.level)
    keep: list[pytest.Item] = []
    drop: list[pytest.Item] = []
    seen: dict[str, str] = {}
    reasons = config.stash.setdefault(DESELECTED, {})
    for item in items:
        mark = case(item)
        if mark is None:
            keep.append(item)
            continue
        level, stable = mark.kwargs["level"], stable_id(item, mark)
        if stable in seen:
            raise pytest.UsageError(f"kbconform: {item.nodeid} and {seen[stable]} share the id {stable!r}")
        seen[stable] = item.nodeid
        _check_fixtures(item)
        why = (
            f"of another isolation profile than {run.manifest.profile}"
            if run.manifest.profile not in _profiles(item)
            else f"above level {run.level}"
            if LEVELS.index(level) > limit
            else "not selected by --kbconform-only"
            if chosen is not None and stable not in chosen
            else None
        )
        if why is not None:
            reasons[why] = reasons.get(why, 0) + 1
            drop.append(item)
            continue
        keep.append(item)
        required = requires(mark)
        for capability in required:
            if capability not in capabilities():
                raise pytest.UsageError(
                    f"kbconform: {item.nodeid} requires {capability!r}; "
                    f"expected one of {', '.join(capabilities())}"
                )
        reason = skip_reason(run.manifest.raw, required)
        if reason is not None:
            config.stash[DECLINED][item.nodeid] = reason
            item.add_marker(pytest.mark.skip(reason=reason))
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def _write_catalogue(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Catalogue mode: write the entry of every suite test of the profile; run none."""
    name, _, written = config.stash[CATALOGUE]
    entries: dict[str, dict[str, Any]] = {}
    for item in items:
        mark = case(item)
        if mark is None or name not in _profiles(item):
            continue
        entry = entry_of(item, mark)
        if entry["id"] in entries:
            raise pytest.UsageError(f"kbconform: two suite tests share the id {entry['id']!r}")
        del entry["status"]
        entries[entry["id"]] = entry
    written.write_text(json.dumps(sorted(entries.values(), key=lambda e: e["id"])), encoding="utf-8")
    config.hook.pytest_deselected(items=list(items))
    items.clear()


def deselected(config: pytest.Config) -> list[str]:
    """What the suite tests pytest counts as deselected are: tests of another isolation
    profile, above the run's level, or left out of a selection."""
    reasons = config.stash.get(DESELECTED, {})
    if not reasons:
        return []
    said = "; ".join(f"{count} {why}" for why, count in sorted(reasons.items()))
    return [f"kbconform deselected {sum(reasons.values())} suite tests: {said}"]


def _profiles(item: pytest.Item) -> tuple[str, ...]:
    """The isolation profiles a suite test is written for: its module's ``PROFILES`` (``("*",)``:
    every registered profile, as the shared isolation suite). A test of another profile than the
    manifest's is never asked of the backend (deselected, not skipped)."""
    from kbconform.profiles import names

    declared = getattr(getattr(item, "module", None), "PROFILES", None)
    if declared == ("*",):
        return names()
    if not isinstance(declared, tuple) or not declared or not set(declared) <= set(names()):
        raise pytest.UsageError(
            f"kbconform: {item.nodeid}: a suite module declares PROFILES, a tuple of "
            f"{', '.join(names())} (or ('*',): every profile); got {declared!r}"
        )
    return declared


def _check_fixtures(item: pytest.Item) -> None:
    """A suite test gets the plugin's own fixtures, or the run is a usage error."""
    info = getattr(item, "_fixtureinfo", None)
    for name in _OWN_FIXTURES:
        definitions = info.name2fixturedefs.get(name) if info is not None else None
        if definitions and definitions[-1].func.__module__ != _fixtures.__name__:
            raise pytest.UsageError(
                f"kbconform: {item.nodeid} would get the fixture {name} from "
                f"{definitions[-1].func.__module__}; the suites run only with the plugin's own fixtures"
            )


def entry_of(item: pytest.Item, mark: pytest.Mark) -> dict[str, Any]:
    """A suite test's entry as its mark and parameters declare it (its status "disabled"
    until a result says otherwise): the catalogue's entry, and the start of the report's."""
    entry: dict[str, Any] = {
        "id": stable_id(item, mark),
        "suite": item.path.stem.removeprefix("test_").replace("_", "-"),
        "level": mark.kwargs["level"],
        "status": "disabled",
    }
    required = requires(mark)
    if required:
        entry["requires"] = list(required)
    from kbconform.profiles import DEFAULT

    run = item.config.stash.get(RUN, None)
    listing = item.config.stash.get(CATALOGUE, None)
    name = run.manifest.profile if run is not None else listing[0] if listing is not None else DEFAULT
    if name != DEFAULT:
        entry["profile"] = name
    for key in ("rule", "guide"):  # one value, or one per profile (a test of several profiles)
        declared = mark.kwargs.get(key)
        value = declared.get(name) if isinstance(declared, dict) else declared
        if callable(value):  # a profile's own per test: a function of the stable id
            value = value(entry["id"])
        if value:
            entry[key] = str(value)
    from kbconform._capabilities import AXES

    params = getattr(getattr(item, "callspec", None), "params", {})
    for axis in AXES:
        if axis.fixture in params:
            entry[axis.key] = params[axis.fixture]
    return entry
