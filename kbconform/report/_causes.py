"""A verdict's failures grouped into causes: what a maintainer fixes, not what a suite counts.

Each failing test charges the backend with four fields the suites know: the rule it checks
(the catalogue's), the facade family it called (read, write, sync, delete, export, restore,
maintenance), the kind of caller that got through, and the effect (another's data read,
written or deleted; identity forged; atomicity; the caller's own data replaced; a call failed
with an error the contract does not name; strictness; recall). A test that said its caller or
effect when it failed (``kbconform.conformance.charged``) records them in its entry, with what
the backend did where the judging code saw it (which way it took input, ``direction``; the
error it raised, ``raised``); otherwise :data:`CHARGES` gives what its failure means, and a
parameter naming a caller (``closed-01[ingest by None]``) or an operation says the rest.

Failures group by those fields (:func:`cause_key`): a call that failed with an error the
contract does not name by that error and family, whoever called; every failure of one identity
kind of caller (no identity, a malformed identity, a member acting as operator) is one cause,
whatever it called, since one check fixes them all; another tenant's or agent's calls by their
effect; reads that return too little (recall) are one cause; the rest by rule and effect,
strictness by the rule's document and the family, headed by which way the backend took input.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kbconform.report._verdicts import FAILED

#: The kinds of caller a failure can charge, in the words a cause uses.
NO_IDENTITY = "no identity"
MALFORMED = "a malformed identity"
AS_OPERATOR = "a member acting as operator"
ANOTHER_TENANT = "another tenant"
LOOK_ALIKE = "a look-alike tenant"
ANOTHER_AGENT = "another agent"
MEMBER = "a member"
OPERATOR = "an operator"
AT_ONCE = "another caller at the same time"
#: Kinds of caller whose every failure is one cause: the check that refuses them is one check.
IDENTITY_CALLERS = (NO_IDENTITY, MALFORMED, AS_OPERATOR)
#: Callers that reach another's data: one cause per effect (a caller at the same time: state
#: shared between requests, whatever the sequential tests found).
OTHER_CALLERS = (ANOTHER_TENANT, LOOK_ALIKE, ANOTHER_AGENT, AT_ONCE)

#: Each effect a failure can charge: its words, its severity, and what fixes it.
EFFECTS: dict[str, tuple[str, str]] = {
    "read": ("another's data read", "high"),
    "written": ("another's data written", "high"),
    "deleted": ("another's data deleted", "high"),
    "forged": ("identity or provenance forged", "medium"),
    "atomicity": ("a failed call changed data", "medium"),
    "replaced": ("a write replaced or merged into the caller's own data", "medium"),
    "crashed": ("a call fails while other callers are served", "medium"),
    "failed": ("a call fails with an error the contract does not name", "medium"),
    "strictness": ("input the contract refuses accepted", "low"),
    "recall": ("a read returns less than its scope holds", "low"),
}
#: Severities from the gravest, as SARIF levels them.
SEVERITIES = {"high": "error", "medium": "warning", "low": "note"}

#: Of callers that are no identity (the worlds' ``no_identities``), by their parameter's label:
#: a principal with an invalid field is malformed, a variant of a real identity a look-alike.
_MALFORMED_LABELS = re.compile(r"invalid")
_LOOK_ALIKE_LABELS = re.compile(r"upper case|trailing space|prefix of|case variant")
#: An operation named in a parameter (``closed-01[export by None]``), and its family and effect.
_OPERATIONS = {
    "ingest": ("write", "written"),
    "apply_deletion_signal": ("delete", "deleted"),
    "export": ("export", "read"),
    "restore": ("restore", "written"),
    "sync": ("sync", "deleted"),
}
_READS = frozenset({"query", "get", "list", "count", "ask"})
#: The family of a facade a driver names when a call of it failed (``operation``), beyond
#: :data:`_OPERATIONS` and :data:`_READS`: memory-scope's.
_FAMILIES = {
    "add": "write",
    "update": "write",
    "delete": "delete",
    "delete_all": "delete",
    "search": "read",
}

#: What a failure of each suite test charges the backend with, unless it says otherwise: its
#: facade family, the caller it calls as, and the effect. A test absent here (a plug-in
#: profile's) charges a member, in its facade's family (read) or its suite's, with strictness
#: at L0 and another's data read above it.
CHARGES: dict[str, tuple[str, str, str]] = {
    "contract-01": ("write", MEMBER, "strictness"),
    "contract-02": ("restore", OPERATOR, "strictness"),
    "contract-03": ("delete", MEMBER, "strictness"),
    "contract-04": ("restore", OPERATOR, "strictness"),
    "iso-01": ("read", MEMBER, "read"),
    "iso-02": ("read", NO_IDENTITY, "read"),
    "iso-03": ("read", MEMBER, "strictness"),
    "conc-01": ("read", AT_ONCE, "read"),
    "conc-02": ("read", AT_ONCE, "read"),
    "conc-03": ("write", AT_ONCE, "written"),
    "closed-01": ("write", NO_IDENTITY, "written"),
    "closed-02": ("read", MEMBER, "strictness"),
    "closed-03": ("read", MEMBER, "strictness"),
    "leak-01": ("read", ANOTHER_TENANT, "read"),
    "leak-02": ("read", MEMBER, "recall"),
    "leak-03": ("read", ANOTHER_TENANT, "read"),
    "leak-04": ("read", LOOK_ALIKE, "read"),
    "leak-05": ("read", ANOTHER_TENANT, "read"),
    "leak-06": ("read", ANOTHER_AGENT, "read"),
    "leak-07": ("read", LOOK_ALIKE, "read"),
    "leak-08": ("read", LOOK_ALIKE, "read"),
    "leak-09": ("export", AS_OPERATOR, "read"),
    "leak-10": ("read", ANOTHER_TENANT, "read"),
    "leak-11": ("read", ANOTHER_AGENT, "read"),
    "leak-12": ("read", ANOTHER_TENANT, "read"),
    "leak-13": ("read", MEMBER, "read"),
    "leak-14": ("read", LOOK_ALIKE, "read"),
    "leak-15": ("read", MEMBER, "read"),
    "shadow-01": ("write", ANOTHER_TENANT, "written"),
    "shadow-02": ("write", ANOTHER_TENANT, "written"),
    "shadow-03": ("write", ANOTHER_TENANT, "written"),
    "shadow-04": ("write", ANOTHER_AGENT, "written"),
    "shadow-05": ("write", ANOTHER_TENANT, "written"),
    "shadow-06": ("write", LOOK_ALIKE, "written"),
    "shadow-07": ("write", MEMBER, "strictness"),
    "spoof-01": ("write", MEMBER, "forged"),
    "spoof-02": ("write", MEMBER, "forged"),
    "spoof-03": ("write", MEMBER, "forged"),
    "spoof-04": ("write", MEMBER, "forged"),
    "spoof-05": ("write", AS_OPERATOR, "written"),
    "spoof-06": ("write", MEMBER, "forged"),
    "spoof-07": ("restore", OPERATOR, "forged"),
    "spoof-08": ("write", MEMBER, "forged"),
    "spoof-09": ("write", NO_IDENTITY, "written"),
    "atomic-01": ("write", MEMBER, "atomicity"),
    "atomic-02": ("restore", OPERATOR, "atomicity"),
    "atomic-03": ("delete", MEMBER, "atomicity"),
    "atomic-04": ("sync", MEMBER, "atomicity"),
    "backup-01": ("export", OPERATOR, "strictness"),
    "backup-02": ("export", OPERATOR, "strictness"),
    "backup-03": ("restore", OPERATOR, "strictness"),
    "backup-04": ("restore", ANOTHER_TENANT, "read"),
    "backup-05": ("export", AS_OPERATOR, "read"),
    "backup-06": ("read", ANOTHER_AGENT, "read"),
    "backup-07": ("export", OPERATOR, "strictness"),
    "bytes-01": ("write", MEMBER, "strictness"),
    "bytes-02": ("write", MEMBER, "strictness"),
    "bytes-03": ("write", MEMBER, "strictness"),
    "delete-01": ("delete", MEMBER, "deleted"),
    "delete-02": ("delete", MEMBER, "deleted"),
    "delete-03": ("delete", MEMBER, "deleted"),
    "delete-04": ("delete", MEMBER, "deleted"),
    "delete-05": ("delete", MEMBER, "strictness"),
    "delete-06": ("delete", MEMBER, "deleted"),
    "delete-07": ("delete", MEMBER, "deleted"),
    "delete-08": ("delete", MEMBER, "strictness"),
    "delete-09": ("delete", AS_OPERATOR, "deleted"),
    "delete-10": ("delete", MEMBER, "deleted"),
    "delete-11": ("delete", MEMBER, "deleted"),
    "delete-12": ("delete", MEMBER, "deleted"),
    "delete-13": ("delete", MEMBER, "deleted"),
    "delete-14": ("delete", MEMBER, "deleted"),
    "delete-15": ("delete", MEMBER, "deleted"),
    "maint-01": ("maintenance", OPERATOR, "deleted"),
    "maint-02": ("maintenance", MEMBER, "deleted"),
    "maint-03": ("maintenance", NO_IDENTITY, "deleted"),
    "maint-04": ("maintenance", MEMBER, "strictness"),
    "sync-01": ("sync", MEMBER, "deleted"),
    "sync-02": ("sync", MEMBER, "deleted"),
    "sync-03": ("sync", MEMBER, "strictness"),
    "sync-04": ("sync", AS_OPERATOR, "deleted"),
    "sync-05": ("sync", NO_IDENTITY, "deleted"),
    "sync-06": ("sync", MEMBER, "forged"),
    "page-01": ("read", MEMBER, "recall"),
    "scale-01": ("read", MEMBER, "recall"),
    "state-01": ("read", MEMBER, "read"),
    "mem-01": ("read", ANOTHER_TENANT, "read"),
    "mem-02": ("write", NO_IDENTITY, "written"),
    "mem-03": ("read", LOOK_ALIKE, "read"),
    "mem-04": ("read", ANOTHER_TENANT, "read"),
    "mem-05": ("write", ANOTHER_TENANT, "written"),
    "mem-06": ("read", ANOTHER_TENANT, "read"),
    "mem-07": ("write", MEMBER, "forged"),
    "mem-08": ("delete", ANOTHER_TENANT, "deleted"),
    "mem-09": ("write", MEMBER, "strictness"),
    "mem-10": ("read", MEMBER, "recall"),
    "mem-11": ("read", MEMBER, "read"),
    "mem-12": ("read", MEMBER, "read"),
    "mem-13": ("write", MEMBER, "atomicity"),
    "mem-14": ("write", MEMBER, "forged"),
    "pool-01": ("read", MEMBER, "read"),
    "pool-02": ("read", ANOTHER_TENANT, "read"),
    "pool-03": ("write", MEMBER, "forged"),
    "pool-04": ("read", LOOK_ALIKE, "read"),
    "pool-05": ("read", MEMBER, "read"),
    "pool-06": ("read", NO_IDENTITY, "read"),
    "pool-07": ("read", MEMBER, "recall"),
    "pool-08": ("read", MEMBER, "read"),
    "pool-09": ("read", MEMBER, "read"),
    "pool-10": ("write", MEMBER, "strictness"),
    "pool-11": ("read", MEMBER, "read"),
    "pool-12": ("write", MEMBER, "atomicity"),
    "grant-01": ("write", MEMBER, "strictness"),
    "grant-02": ("read", ANOTHER_TENANT, "read"),
    "grant-03": ("read", ANOTHER_TENANT, "read"),
    "grant-04": ("read", ANOTHER_TENANT, "read"),
    "grant-05": ("read", MEMBER, "read"),
    "grant-06": ("read", MEMBER, "recall"),
    "grant-07": ("read", MEMBER, "atomicity"),
    "grant-08": ("read", MEMBER, "atomicity"),
    "grant-09": ("write", ANOTHER_TENANT, "written"),
    "grant-10": ("write", ANOTHER_TENANT, "written"),
    "grant-11": ("write", MEMBER, "atomicity"),
    "grant-12": ("delete", ANOTHER_TENANT, "deleted"),
    "grant-13": ("read", MEMBER, "read"),
    "grant-14": ("read", MEMBER, "read"),
    "grant-15": ("read", MEMBER, "read"),
    "grant-16": ("write", MEMBER, "atomicity"),
    "st-01": ("read", NO_IDENTITY, "read"),
    "st-02": ("read", ANOTHER_TENANT, "read"),
    "st-03": ("read", ANOTHER_TENANT, "read"),
    "st-04": ("read", ANOTHER_TENANT, "read"),
    "st-05": ("read", ANOTHER_TENANT, "read"),
    "st-06": ("write", MEMBER, "written"),
    "st-07": ("write", ANOTHER_TENANT, "written"),
    "st-08": ("write", ANOTHER_TENANT, "read"),
    "st-09": ("read", MEMBER, "read"),
    "st-10": ("write", MEMBER, "strictness"),
}

#: What fixes a cause, by its caller kind (identity causes) or its effect.
FIXES = {
    NO_IDENTITY: "refuse every call whose caller is not an exact, authenticated identity "
    "(Unauthenticated) before any store call; never fall back to a default or to no filter",
    MALFORMED: "check every field of the caller's identity on every call and refuse one outside "
    "the identifier syntax, before it names a tenant or scope",
    AS_OPERATOR: "reserve export, restore, maintenance and writes into the shared namespace to "
    "the operator's role; refuse a member's call (Forbidden)",
    "read": "put the caller's scope into every read, inside the store's query (not after top-k): "
    "tenant, visibility and agent",
    "written": "refuse a write whose id, scope or stamp names another tenant's or agent's data; "
    "stamp scope fields on the server",
    "deleted": "scope every deletion to the caller's tenant and repository; gather what a call "
    "deletes from the caller's rows only",
    "forged": "stamp the guarded fields from the caller's identity on the server; refuse or "
    "overwrite (with the spoof warning) every claim to them, nested ones included",
    "atomicity": "make each call all or nothing: undo what it wrote when a later store call fails",
    "replaced": "make each write a new item with an id of its own: never reuse, replace or merge "
    "into a stored item, the same text in the same scope included",
    "failed": "answer every call with its result or one of the contract's errors (a refusal with "
    "its code); never let another error out of a facade",
    "crashed": "keep every request's state its own, the store client's included: a client made "
    "for one caller at a time is guarded, or one per caller",
    "strictness": "validate the whole input against the rule's schema before any store call and "
    "refuse it whole with the contract's error code",
    "recall": "rank inside the caller's scope with the whole limit: every item of a small scope, "
    "the top k of a large one",
}


@dataclass(frozen=True, slots=True)
class Fields:
    """What one failing test charges the backend with."""

    rule: str
    family: str
    caller: str
    effect: str
    #: Which way the backend took input, where the test saw it (``accepted``, ``refused``).
    direction: str = ""
    #: The error it raised that the contract does not name (effect ``failed``).
    raised: str = ""


def _parameter(test_id: str) -> str:
    found = re.search(r"\[(.*)\]$", test_id)
    return found[1] if found else ""


def _base(test_id: str) -> str:
    return test_id.split("[", 1)[0]


def caller_kind(label: str) -> str:
    """The kind of a caller that is no identity, by the label of the test parameter that names
    it (``None``, ``a dict that looks like a principal``, ``a Principal changed in place to an
    invalid tenant id``)."""
    if _MALFORMED_LABELS.search(label):
        return MALFORMED
    if _LOOK_ALIKE_LABELS.search(label):
        return LOOK_ALIKE
    return NO_IDENTITY


def fields(test: Mapping[str, Any]) -> Fields:
    """The fields a failing test's entry charges the backend with: what the test said when it
    failed (``caller``, ``effect``, and the ``operation`` whose family it was), else what
    :data:`CHARGES` and its parameters say."""
    test_id = str(test["id"])
    family, caller, effect = CHARGES.get(_base(test_id), ("", MEMBER, ""))
    parameter = _parameter(test_id)
    operation, _, label = parameter.partition(" by ")
    if label and operation in _OPERATIONS:
        family, effect = _OPERATIONS[operation]
    elif (called := str(test.get("operation", ""))) in _OPERATIONS or called in _READS or called in _FAMILIES:
        # the call that failed, as the test's driver said it
        family = _OPERATIONS[called][0] if called in _OPERATIONS else _FAMILIES.get(called, "read")
        label = parameter
    else:
        label = parameter
        if parameter in _READS or test.get("facade") in _READS:
            family = "read"
    if caller == NO_IDENTITY and label:
        caller = caller_kind(label)
    family = family or ("read" if test.get("facade") else str(test.get("suite", "")))
    return Fields(
        rule=str(test.get("rule", "")),
        family=family,
        caller=str(test.get("caller") or caller),
        effect=str(test.get("effect") or effect or ("strictness" if test.get("level") == "L0" else "read")),
        direction=str(test.get("direction", "")),
        raised=str(test.get("raised", "")),
    )


def cause_key(found: Fields) -> tuple[str, ...]:
    """The cause a failure belongs to: a call that failed with an error the contract does not
    name by that error, whatever it called and whoever called (one error, one place that lets
    it out); one per identity kind of caller;
    another's calls by effect (another tenant, agent or look-alike alike); every recall failure
    one; strictness by the rule's document and the family; the rest by rule and effect."""
    if found.effect == "failed":  # what the backend did, not what the rule guards against
        return ("failed", found.raised)
    if found.caller in IDENTITY_CALLERS:
        return ("caller", found.caller)
    if found.effect == "recall":  # a read short of its own scope, whoever else was calling
        return ("effect", "recall")
    if found.caller in OTHER_CALLERS:
        return ("another", found.effect)
    if found.effect == "strictness":
        return ("strictness", found.rule.split("#", 1)[0], found.family)
    return ("rule", found.rule, found.effect)


@dataclass(frozen=True, slots=True)
class Cause:
    """One cause of a verdict: its failing tests, and what they say together."""

    #: ``C1``, ``C2``, ...: gravest first, then most tests.
    id: str
    title: str
    severity: str
    caller: str
    effect: str
    families: tuple[str, ...]
    rules: tuple[str, ...]
    guide: str
    fix: str
    tests: tuple[str, ...]
    #: The failing test whose transcript and rerun the cause shows (the first with a transcript).
    example: str

    def as_dict(self) -> dict[str, Any]:
        """The cause as report-v1's ``causes`` lists it."""
        return {
            "id": self.id,
            "title": self.title,
            "severity": self.severity,
            "caller": self.caller,
            "effect": self.effect,
            "families": list(self.families),
            "rules": list(self.rules),
            **({"guide": self.guide} if self.guide else {}),
            "fix": self.fix,
            "tests": list(self.tests),
            "example": self.example,
        }


def _strictness(families: str, document: str, directions: set[str]) -> str:
    """A strictness cause's heading, by which way its failures say the backend took the input
    (their charges' ``direction``): refused input the rule's document lets land, answered input
    it refuses, both, or (none said) took input otherwise than the document says."""
    if directions >= {"accepted", "refused"}:
        return f"{families} accepts input that {document} refuses, and refuses input it accepts"
    if "refused" in directions:
        return f"{families} refuses input that {document} accepts"
    if "accepted" in directions:
        return f"{families} accepts input that {document} refuses"
    return f"{families} takes input otherwise than {document} says"


def _title(key: tuple[str, ...], found: Sequence[Fields]) -> str:
    families = ", ".join(sorted({f.family for f in found}))
    words = EFFECTS.get(found[0].effect, (found[0].effect, ""))[0]
    if key[0] == "failed":
        return f"a call fails with {key[1] or 'an error'}, which the contract does not name ({families})"
    if key[0] == "caller" and len(key) == 2:
        return f"calls by {key[1]} are not refused ({families})"
    if key[0] == "another":
        callers = " or ".join(sorted({f.caller for f in found}))
        return f"{callers} gets through: {words} ({families})"
    if key[0] == "effect":
        return f"{words} ({families})"
    if key[0] == "strictness":
        return _strictness(families, key[1], {f.direction for f in found})
    return f"{words}: {key[1]} ({families})"


def _severity(found: Sequence[Fields]) -> str:
    ranks = [EFFECTS.get(f.effect, ("", "low"))[1] for f in found]
    # a caller with no valid identity that got an answer is high; one whose call failed with an
    # error got nothing: the error's own severity
    if any(f.caller in IDENTITY_CALLERS and f.effect != "failed" for f in found):
        ranks.append("high")
    return min(ranks, key=list(SEVERITIES).index)


def causes(tests: Iterable[Mapping[str, Any]]) -> list[Cause]:
    """The failing tests of ``tests`` (failed or erred, none ended at a call not implemented
    yet or never run) grouped into causes, gravest first, then by how many tests each holds."""
    groups: dict[tuple[str, ...], list[tuple[Mapping[str, Any], Fields]]] = {}
    for test in tests:
        if test.get("status") not in FAILED or "notImplemented" in test or "reason" in test:
            continue
        charged = fields(test)
        groups.setdefault(cause_key(charged), []).append((test, charged))
    order = sorted(
        groups.items(),
        key=lambda kv: (
            list(SEVERITIES).index(_severity([f for _, f in kv[1]])),
            -len(kv[1]),
            kv[1][0][0]["id"],
        ),
    )
    made = []
    for number, (key, members) in enumerate(order, 1):
        found = [f for _, f in members]
        listed = sorted(members, key=lambda m: str(m[0]["id"]))
        example = next((t for t, _ in listed if t.get("transcript")), listed[0][0])
        caller = " or ".join(sorted({f.caller for f in found}))
        effect = found[0].effect if len({f.effect for f in found}) == 1 else "various"
        made.append(
            Cause(
                id=f"C{number}",
                title=_title(key, found),
                severity=_severity(found),
                caller=caller,
                effect=effect,
                families=tuple(sorted({f.family for f in found})),
                rules=tuple(sorted({f.rule for f in found if f.rule})),
                guide=str(example.get("guide", "")),
                fix=FIXES.get(key[1] if key[0] == "caller" and len(key) == 2 else found[0].effect, ""),
                tests=tuple(str(t["id"]) for t, _ in listed),
                example=str(example["id"]),
            )
        )
    return made


def causes_line(made: Sequence[Cause], failures: int) -> str:
    """``K causes from N failures``."""
    return f"{len(made)} cause{'s' * (len(made) != 1)} from {failures} failure{'s' * (failures != 1)}"
