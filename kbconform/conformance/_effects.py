"""What a call that should have been refused did, said as a maintainer reads it: the rows it
wrote, deleted or re-stamped, by tenant, and what it returned.

A refusal test reads the whole store (the operator's export) before and after the call it
expects to be refused, so its failure names the effect, never only "did not raise".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kbconform.errors import KbconformError

#: A stored row as a refusal test compares it: (tenant, repository, source path, visibility).
Stored = tuple[Any, Any, Any, Any]

_SHOWN = 200  # characters of a returned value a message shows


def stored(records: Any) -> dict[str, Stored]:
    """Backup records (an export) as ``{id: (tenant, repository, path, visibility)}``."""
    found: dict[str, Stored] = {}
    for row in records:
        meta: Mapping[str, Any] = row.get("metadata") or {}
        found[str(row["id"])] = (
            meta.get("tenantId"),
            meta.get("repoSlug"),
            meta.get("sourcePath"),
            meta.get("visibility"),
        )
    return found


def changes(before: Mapping[str, Stored], after: Mapping[str, Stored]) -> list[str]:
    """What happened between two :func:`stored` views: rows written and deleted, by tenant,
    with their paths, and rows whose stamps changed. Empty when nothing changed."""
    found = []
    for verb, rows, ids in (
        ("wrote", after, set(after) - set(before)),
        ("deleted", before, set(before) - set(after)),
    ):
        for tenant in sorted({str(rows[i][0]) for i in ids}):
            paths = sorted(str(rows[i][2]) for i in ids if str(rows[i][0]) == tenant)
            found.append(f"{verb} {len(paths)} rows of tenant {tenant} ({', '.join(paths)})")
    moved = sorted(i for i in set(before) & set(after) if before[i] != after[i])
    if moved:
        shown = ", ".join(f"{before[i]} -> {after[i]}" for i in moved[:5])
        found.append(f"re-stamped {len(moved)} rows ({shown}{' ...' if len(moved) > 5 else ''})")
    return found


def stored_in_full(records: Any) -> dict[str, tuple[Any, ...]]:
    """Backup records (an export) as ``{id: (text, tenant, repository, path, visibility,
    origin agent)}``: everything a write's request-level claims could change."""
    fields = ("tenantId", "repoSlug", "sourcePath", "visibility", "originAgentIdentity")
    return {
        str(r["id"]): (r.get("document"), *((r.get("metadata") or {}).get(f) for f in fields))
        for r in records
    }


def described(value: object) -> str:
    """A returned value, short: backup records by tenant, hits by id, ids, or the value."""
    if isinstance(value, list | tuple):
        if value and all(isinstance(r, Mapping) and "metadata" in r for r in value):
            tenants = sorted({str(r["metadata"].get("tenantId")) for r in value})
            return f"{len(value)} rows of the tenants {', '.join(tenants)}"
        ids = [str(getattr(item, "id", item)) for item in value]
        return f"{len(ids)} results {ids[:5]}{' ...' if len(ids) > 5 else ''}"
    written = getattr(value, "ids", None) or getattr(value, "deleted_ids", None)
    if isinstance(written, list | tuple):
        return f"the ids {list(written)[:5]}{' ...' if len(written) > 5 else ''}"
    text = repr(value)
    return text if len(text) <= _SHOWN else text[:_SHOWN] + "..."


def unrefused(call: str, outcome: str | None, changed: list[str], error: str) -> str | None:
    """The failure of a call that must raise ``error`` and change nothing, or None when it did.
    ``outcome`` is None when it raised ``error``, else what happened instead ("was accepted: it
    returned ..."); ``changed`` is :func:`changes` around the call."""
    if outcome is None and not changed:
        return None
    said = [outcome or f"raised {error}", *changed] if changed else [outcome or "", "changed nothing"]
    return f"{call} " + "; it ".join(said)


class Unrefused(str):
    """What :func:`refusal` found wrong, as text, and which way the backend took the call
    (``direction``: ``accepted`` when it answered; None when it raised another error or only
    changed data), for the failure's charge (``charged(direction=problem.direction)``)."""

    direction: str | None = None


def refusal(
    call: str,
    read: Callable[[], Any],
    error: type[KbconformError],
    method: Callable[..., object],
    *args: Any,
) -> Unrefused | None:
    """None when ``method(*args)`` raises ``error`` and changes nothing ``read()`` (an operator's
    export) shows; else the failure, named ``call``: the other error it raised, or what it
    returned when it was accepted, and what it changed, by tenant (:func:`unrefused`)."""
    before = stored(read())
    answered = False
    try:
        returned = method(*args)
    except error:
        outcome = None
    except KbconformError as other:
        outcome = f"raised {type(other).__name__} ({other.code}), not {error.__name__}"
    else:
        outcome, answered = f"was accepted: it returned {described(returned)}", True
    problem = unrefused(call, outcome, changes(before, stored(read())), error.__name__)
    if problem is None:
        return None
    found = Unrefused(problem)
    found.direction = "accepted" if answered else None
    return found
