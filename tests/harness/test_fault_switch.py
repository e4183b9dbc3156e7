"""The Python runtime's store-fault switch (kbharness.FaultSwitch, SwitchedStore, StoreFault): a
plan lets its first ``pass`` store calls through and fails the ``fail`` after them (null: every
later one), a failing call waits the plan's ``hang`` first, ``set`` answers how many calls
consulted the plan it replaces, and with no plan nothing fails (the control); kbharness.mjs's
FaultSwitch, its twin, answers every plan alike."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import threading
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest

from kbconform.adapter import FaultPlan, FaultSwitch

RUNTIME = Path(__file__).resolve().parents[2] / "kbconform" / "_harness_runtime" / "kbharness.py"


@pytest.fixture
def kbharness(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """The runtime as a module of its own, its hangs recorded in ``slept`` instead of waited."""
    spec = importlib.util.spec_from_file_location("kbharness_faults_under_test", RUNTIME)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.slept = []  # type: ignore[attr-defined]

    class Recorded(threading.Event):
        def wait(self, timeout: float | None = None) -> bool:
            module.slept.append(timeout)
            return False

    # The module's own name for threading (it is loaded as a module of its own), Event recorded.
    monkeypatch.setattr(module, "threading", SimpleNamespace(**{**vars(threading), "Event": Recorded}))
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


#: Plans and the store calls consulted under each (a call's name and the store it names, or
#: None), for both runtimes.
SCENARIOS: list[tuple[Any, list[tuple[str, str | None]]]] = [
    (None, [("db.write", None)] * 3),
    ({"pass": 2, "fail": None}, [("db.write", None)] * 5),
    ({"pass": 1, "fail": 2}, [("db.write", None)] * 6),
    ({"pass": 1, "fail": 2, "hang": 2.5}, [("db.write", None)] * 4),
    (
        {"pass": 0, "fail": None, "stores": ["chroma"]},
        [("qdrant.upsert", "qdrant"), ("chroma.add", "chroma"), ("db.write", None)],
    ),
]
#: Values each runtime's set() must refuse as a fault plan, and plans it must take.
REFUSED = [
    {"pass": -1, "fail": 1},
    {"pass": 0, "fail": 0},
    {"pass": 0},
    {"pass": 0, "fail": 1, "hang": 61},
    [0, 1],
    "plan",
]
TAKEN = [{"pass": 0, "fail": 1}, {"pass": 3, "fail": None, "hang": 0.5, "stores": ["a"]}]

NODE_SWITCH = """
import {FaultSwitch, HarnessError, StoreFault, switchedStore} from %s;
const [scenarios, refused, taken] = JSON.parse(process.argv[2]);
const results = [];
for (const [plan, calls] of scenarios) {
    const slept = [];
    const fault = new FaultSwitch({sleep: async seconds => { slept.push(seconds); }});
    const first = fault.set(plan);
    const seen = [];
    for (const [call, store] of calls) {
        try {
            await fault.consult(call, store);
            seen.push('ok');
        } catch (error) {
            if (!(error instanceof StoreFault)) throw error;
            seen.push(error.message);
        }
    }
    results.push([first, seen, slept, fault.set(null)]);
}
const codes = refused.map(plan => {
    try {
        new FaultSwitch().set(plan);
        return null;
    } catch (error) {
        return error instanceof HarnessError ? error.code : String(error);
    }
});
const plans = taken.map(plan => {
    const fault = new FaultSwitch();
    fault.set(plan);
    return fault.plan;
});
// a switched store: consulted before each switched method, never before close
const written = [];
const store = {
    write: text => written.push(text),
    read: () => [...written],
    close: () => { written.length = 0; },
    name: 'store',
};
const fault = new FaultSwitch();
const every = switchedStore(store, fault, 'db'), only = switchedStore(store, fault, 'db', ['write']);
const attempt = async call => {
    try { return await call(); } catch (error) { return error.message; }
};
const seen = [await every.write('a'), await every.read(), only.read(), fault.set({pass: 0, fail: null})];
seen.push(await attempt(() => every.write('b')), await attempt(() => every.read()), only.read(), every.name);
every.close();
seen.push([...written], fault.set(null));
console.log(JSON.stringify({results, codes, plans, store: seen}));
"""


def _python_switch(kbharness: ModuleType) -> dict[str, Any]:
    """The scenarios on the Python runtime's switch, as the Node script reports them."""
    results = []
    for plan, calls in SCENARIOS:
        kbharness.slept.clear()
        switch = kbharness.FaultSwitch()
        first, seen = switch.set(plan), []
        for call, store in calls:
            try:
                switch.consult(call, store)
                seen.append("ok")
            except kbharness.StoreFault as fault:
                seen.append(str(fault))
        results.append([first, seen, list(kbharness.slept), switch.set(None)])
    codes = []
    for plan in REFUSED:
        try:
            kbharness.FaultSwitch().set(plan)
            codes.append(None)
        except kbharness.HarnessError as error:
            codes.append(error.code)
    plans = []
    for plan in TAKEN:
        switch = kbharness.FaultSwitch()
        switch.set(plan)
        plans.append(switch.plan)
    return {"results": results, "codes": codes, "plans": plans}


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not on PATH: no JavaScript to run")
def test_the_javascript_switch_answers_every_plan_as_the_python_one(
    kbharness: ModuleType, tmp_path: Path
) -> None:
    """kbharness.mjs's FaultSwitch, its twin: the same calls fail with the same message, a hang
    waits before each failing call only, set() answers the same counts and refuses the same
    values; its switchedStore consults before each switched method (as SwitchedStore does,
    below: a failing call never reaches the store, close is never switched); the Python side is
    itself pinned by the tests above (a lasting plan fails calls 2 to 4 of 5, a transient one 1
    and 2, with no plan none: the controls)."""
    script = tmp_path / "switch.mjs"
    script.write_text(NODE_SWITCH % json.dumps((RUNTIME.with_suffix(".mjs")).as_uri()), encoding="utf-8")
    argument = json.dumps([SCENARIOS, REFUSED, TAKEN])
    answered = subprocess.run(
        ["node", str(script), argument], capture_output=True, text=True, timeout=60, check=True
    )
    python = _python_switch(kbharness)
    seen = json.loads(answered.stdout)
    assert seen.pop("store") == [
        1, ["a"], ["a"], 2,
        "store unavailable: db.write failed (injected store fault)",
        "store unavailable: db.read failed (injected store fault)",
        ["a"], "store", [], 2,
    ]  # fmt: skip
    assert seen == json.loads(json.dumps(python))
    assert python["codes"] == ["KB_HARNESS_REQUEST_INVALID"] * len(REFUSED)
    assert [sum(o != "ok" for o in seen) for _, seen, _, _ in python["results"]] == [0, 3, 2, 2, 2]
    assert python["results"][3][2] == [2.5, 2.5]  # a hang before each failing call, none before passing ones


def _hung(consult: Any) -> tuple[threading.Thread, list[Any]]:
    """A thread making one store call through ``consult`` (it hangs), and what the call gave."""
    outcome: list[Any] = []

    def call() -> None:
        try:
            outcome.append(consult())
        except Exception as error:  # the runtime's StoreFault
            outcome.append(type(error).__name__)

    thread = threading.Thread(target=call, daemon=True)
    thread.start()
    return thread, outcome


@pytest.mark.parametrize("switch", ["kit", "runtime"])
def test_a_hang_lasts_until_its_plan_is_replaced_and_the_call_still_fails(switch: str) -> None:
    """A store call hanging for a 30 s plan is still hanging a moment later (the control); once
    the plan is replaced it ends at once, and fails: the store is back for the calls after it,
    not for the one that hung. The kit's in-process switch and the Python runtime's alike."""
    if switch == "kit":
        kit = FaultSwitch()
        kit.set(FaultPlan(0, 1, hang=30.0))
        thread, outcome = _hung(kit)
        replace = kit.set
    else:
        spec = importlib.util.spec_from_file_location("kbharness_hang_under_test", RUNTIME)
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        runtime = module.FaultSwitch()
        runtime.set({"pass": 0, "fail": 1, "hang": 30})
        thread, outcome = _hung(lambda: runtime.consult("db.write"))
        replace = runtime.set
    thread.join(0.3)
    assert thread.is_alive(), "the hang ended before its plan was replaced"
    assert replace(None) == 1
    thread.join(10)
    assert not thread.is_alive(), "the hang outlived its plan"
    assert outcome == [True] if switch == "kit" else outcome == ["StoreFault"]


NODE_HANG = """
import {FaultSwitch, StoreFault} from %s;
const fault = new FaultSwitch();
fault.set({pass: 0, fail: 1, hang: 30});
const started = Date.now();
const failed = error => (error instanceof StoreFault ? 'StoreFault' : String(error));
const call = fault.consult('db.write').then(() => 'ok', failed);
const early = await Promise.race([call, new Promise(resolve => setTimeout(() => resolve('hanging'), 300))]);
const replaced = fault.set(null);
console.log(JSON.stringify([early, replaced, await call, Date.now() - started < 10000]));
"""


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not on PATH: no JavaScript to run")
def test_a_javascript_hang_lasts_until_its_plan_is_replaced(tmp_path: Path) -> None:
    """kbharness.mjs's switch as the Python ones above: still hanging after 0.3 s (the control),
    ended by the next plan, the call failed; and the process exits without waiting the 30 s out
    (the subprocess deadline is 20 s)."""
    script = tmp_path / "hang.mjs"
    script.write_text(NODE_HANG % json.dumps((RUNTIME.with_suffix(".mjs")).as_uri()), encoding="utf-8")
    answered = subprocess.run(["node", str(script)], capture_output=True, text=True, timeout=20, check=True)
    assert json.loads(answered.stdout) == ["hanging", 1, "StoreFault", True]
