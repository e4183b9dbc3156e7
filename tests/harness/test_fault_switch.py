"""The Python runtime's store-fault switch (kbharness.FaultSwitch, SwitchedStore, StoreFault): a
plan lets its first ``pass`` store calls through and fails the ``fail`` after them (null: every
later one), a failing call waits the plan's ``hang`` first, ``set`` answers how many calls
consulted the plan it replaces, and with no plan nothing fails (the control)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

RUNTIME = Path(__file__).resolve().parents[2] / "kbconform" / "_harness_runtime" / "kbharness.py"


@pytest.fixture
def kbharness(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """The runtime as a module of its own, its sleeps recorded in ``slept`` instead of waited."""
    spec = importlib.util.spec_from_file_location("kbharness_faults_under_test", RUNTIME)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.slept = []  # type: ignore[attr-defined]
    monkeypatch.setattr(module.time, "sleep", module.slept.append)
    return module


def _outcomes(kbharness: ModuleType, switch: Any, calls: int) -> list[str]:
    """``ok`` or the failure's message for each of ``calls`` consultations."""
    seen = []
    for index in range(calls):
        try:
            switch.consult(f"store.call{index}")
            seen.append("ok")
        except kbharness.StoreFault as fault:
            seen.append(str(fault))
    return seen


def test_with_no_plan_no_store_call_fails_and_each_is_counted(kbharness: ModuleType) -> None:
    switch = kbharness.FaultSwitch()
    assert _outcomes(kbharness, switch, 5) == ["ok"] * 5
    assert switch.set(None) == 5
    assert _outcomes(kbharness, switch, 2) == ["ok"] * 2
    assert kbharness.slept == []


def test_a_lasting_plan_fails_every_call_after_the_ones_it_lets_through(kbharness: ModuleType) -> None:
    switch = kbharness.FaultSwitch()
    assert switch.set({"pass": 2, "fail": None}) == 0
    failed = "store unavailable: store.call{} failed (injected store fault)"
    assert _outcomes(kbharness, switch, 5) == [
        "ok",
        "ok",
        failed.format(2),
        failed.format(3),
        failed.format(4),
    ]
    assert issubclass(kbharness.StoreFault, ConnectionError)
    assert switch.set(None) == 5  # the calls that consulted the plan replaced, failed ones too
    assert _outcomes(kbharness, switch, 3) == ["ok"] * 3


def test_a_transient_plan_fails_its_calls_then_lets_every_later_one_through(kbharness: ModuleType) -> None:
    switch = kbharness.FaultSwitch()
    switch.set({"pass": 1, "fail": 2})
    assert [o == "ok" for o in _outcomes(kbharness, switch, 6)] == [True, False, False, True, True, True]
    assert kbharness.slept == []


def test_a_hanging_plan_waits_before_each_failing_call_and_never_before_a_passing_one(
    kbharness: ModuleType,
) -> None:
    switch = kbharness.FaultSwitch()
    switch.set({"pass": 1, "fail": 2, "hang": 2.5})
    assert [o == "ok" for o in _outcomes(kbharness, switch, 4)] == [True, False, False, True]
    assert kbharness.slept == [2.5, 2.5]


def test_a_plan_naming_stores_fails_and_counts_only_their_calls(kbharness: ModuleType) -> None:
    switch = kbharness.FaultSwitch()
    switch.set({"pass": 0, "fail": None, "stores": ["chroma"]})
    switch.consult("qdrant.upsert", "qdrant")  # another store: neither fails nor counts
    with pytest.raises(kbharness.StoreFault):
        switch.consult("chroma.add", "chroma")
    with pytest.raises(kbharness.StoreFault):
        switch.consult("db.write")  # a consultation naming no store ignores stores
    assert switch.set(None) == 2


def test_set_refuses_what_is_not_a_fault_plan(kbharness: ModuleType) -> None:
    switch = kbharness.FaultSwitch()
    for plan in (
        {"pass": -1, "fail": 1}, {"pass": 0, "fail": 0}, {"pass": True, "fail": 1}, {"pass": 0},
        {"pass": 0, "fail": 1, "hang": 61}, {"pass": 0, "fail": 1, "hang": True}, [0, 1], "plan",
    ):  # fmt: skip
        with pytest.raises(kbharness.HarnessError) as refused:
            switch.set(plan)
        assert refused.value.code == "KB_HARNESS_REQUEST_INVALID"
        assert refused.value.message == f"fault: not a fault plan: {plan!r}"
    for plan in ({"pass": 0, "fail": 1}, {"pass": 3, "fail": None, "hang": 0.5, "stores": ["a"]}, None):
        switch.set(plan)  # the control: each is a plan
        assert switch.plan == plan


class Store:
    def __init__(self) -> None:
        self.written: list[str] = []
        self.name = "store"

    def write(self, text: str) -> int:
        self.written.append(text)
        return len(self.written)

    def read(self) -> list[str]:
        return list(self.written)

    def close(self) -> None:
        self.written.clear()


def test_a_switched_store_consults_before_each_switched_method_and_calls_through(
    kbharness: ModuleType,
) -> None:
    switch = kbharness.FaultSwitch()
    store = Store()
    every, only = (
        kbharness.SwitchedStore(store, switch, "db"),
        kbharness.SwitchedStore(store, switch, "db", {"write"}),
    )
    assert every.write("a") == 1
    assert every.read() == ["a"]
    assert only.read() == ["a"]  # not switched: no consultation
    assert switch.set({"pass": 0, "fail": None}) == 2
    with pytest.raises(kbharness.StoreFault, match=r"db\.write failed"):
        every.write("b")
    with pytest.raises(kbharness.StoreFault, match=r"db\.read failed"):
        every.read()
    assert only.read() == ["a"]
    assert store.written == ["a"]  # the failing call never reached the store
    every.name = "renamed"  # attributes are the store's
    assert (store.name, every.name) == ("renamed", "renamed")
    every.close()  # close is never switched
    assert store.written == []
    assert switch.set(None) == 2
