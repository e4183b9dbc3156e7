"""The test run's order: longest first in halves that end together (tests/scheduling.py), and its
table of measured durations kept true."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import scheduling

ROOT = Path(__file__).resolve().parents[1]


def test_worksteal_blocks_are_the_halves_xdist_first_sends():
    """The first worker gets count // 2, the other the rest; three workers a third each."""
    assert scheduling.worksteal_blocks(7, 2) == [3, 4]
    assert scheduling.worksteal_blocks(3828, 2) == [1914, 1914]
    assert scheduling.worksteal_blocks(10, 3) == [3, 3, 4]
    assert scheduling.worksteal_blocks(1, 2) == [0, 1]


def test_the_longest_tests_start_the_blocks_and_the_blocks_end_together():
    """Measured weights of the slowest tests plus many short ones: each block starts with its
    heaviest, every block has exactly its size, and the loads differ by less than the lightest
    long test; the shuffled order, cut in halves, would leave them 500 s apart."""
    long = {"lancedb": 457, "chroma-server": 401, "neo": 354, "mutants": 329, "repro": 164}
    long |= {"chroma-embedded": 156, "wheel": 135, "postgres": 132}
    units = [([f"short-{n}"], 0.1) for n in range(40)]
    units[3:3] = [([name], float(seconds)) for name, seconds in long.items()]
    weight = {items[0]: w for items, w in units}
    sizes = scheduling.worksteal_blocks(len(units), 2)
    blocks = scheduling.arrange(units, sizes)
    assert [len(block) for block in blocks] == sizes
    assert sorted(item for block in blocks for item in block) == sorted(weight)
    loads = [sum(weight[item] for item in block) for block in blocks]
    assert abs(loads[0] - loads[1]) < min(long.values())
    for block in blocks:
        assert [weight[item] for item in block] == sorted((weight[item] for item in block), reverse=True)
    assert {blocks[0][0], blocks[1][0]} == {"lancedb", "chroma-server"}
    # The control: the same units in their given order, cut where xdist cuts, are far apart.
    given = [items[0] for items, _ in units]
    halves = [given[: sizes[0]], given[sizes[0] :]]
    assert abs(sum(weight[i] for i in halves[0]) - sum(weight[i] for i in halves[1])) > 500


def test_a_unit_moves_whole_and_equal_weights_keep_their_order():
    """Tests sharing a module's fixture stay next to each other in one block, in their order;
    short tests keep the shuffle's order within a block."""
    units = scheduling.units_of(
        ["a::1", "m::1", "b::1", "m::2", "c::1", "d::1"],
        ["a::1", "m", "b::1", "m", "c::1", "d::1"],
        [0.1, 5.0, 0.1, 4.0, 0.1, 0.1],
    )
    assert units == [
        (["a::1"], 0.1),
        (["m::1", "m::2"], 9.0),
        (["b::1"], 0.1),
        (["c::1"], 0.1),
        (["d::1"], 0.1),
    ]
    blocks = scheduling.arrange(units, [3, 3])
    assert blocks == [["m::1", "m::2", "d::1"], ["a::1", "b::1", "c::1"]]


def test_durations_are_read_from_a_durations_log_summing_setup_call_and_teardown():
    """Each test's phases add up; node ids with spaces and brackets are kept whole; other lines
    are ignored; the table holds the tests of at least LISTED seconds, named with the refresh
    command."""
    log = [
        "============================= slowest durations =============================",
        "456.65s call     tests/a.py::test_x[lance-manifest1]",
        "3.10s setup    tests/b.py::test_y[mem0-`searchMemories` sends `where` in one `filters`]",
        "0.50s call     tests/b.py::test_y[mem0-`searchMemories` sends `where` in one `filters`]",
        "1.20s call     tests/c.py::test_z",
        "(4 durations < 0.005s hidden.  Use -vv to show these durations.)",
        "====================== 3 passed in 460.00s (0:07:40) =======================",
    ]
    seconds = scheduling.durations_from_log(log)
    assert seconds == pytest.approx(
        {
            "tests/a.py::test_x[lance-manifest1]": 456.65,
            "tests/b.py::test_y[mem0-`searchMemories` sends `where` in one `filters`]": 3.6,
            "tests/c.py::test_z": 1.2,
        }
    )
    table = scheduling.table_from(seconds)
    assert set(table["seconds"]) == {
        "tests/a.py::test_x[lance-manifest1]",
        "tests/b.py::test_y[mem0-`searchMemories` sends `where` in one `filters`]",
    }
    assert scheduling.REFRESH in table["about"]


def test_the_table_is_in_its_written_form_and_names_files_that_exist():
    """The checked-in table is what its refresh writes (sorted, rounded, at least LISTED
    seconds) and each test's file exists."""
    table = scheduling.read_table()
    assert table, "tests/durations.json lists no test"
    assert scheduling.table_from(table)["seconds"] == table
    missing = sorted({node.split("::")[0] for node in table if not (ROOT / node.split("::")[0]).is_file()})
    assert not missing, (
        f"tests/durations.json names files that are gone: {missing}; refresh: {scheduling.REFRESH}"
    )


class _Collected:
    """A plugin keeping the node ids a collection ends with."""

    def __init__(self) -> None:
        self.ids: set[str] = set()

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.ids = {item.nodeid for item in session.items}


def test_every_test_the_table_names_is_collected():
    """Every node id of tests/durations.json is a test that exists today (the table's files
    collected in this process, whose modules the run has imported already); a renamed or removed
    test is named with the command that refreshes the table."""
    table = scheduling.read_table()
    files = sorted({str(ROOT / node.split("::")[0]) for node in table})
    collected = _Collected()
    options = ["--collect-only", "-q", "-n", "0", "-p", "no:randomly", "-p", "no:cacheprovider"]
    options += ["--rootdir", str(ROOT), "-c", str(ROOT / "pyproject.toml")]
    assert pytest.main([*options, *files], plugins=[collected]) == pytest.ExitCode.OK
    gone = sorted(set(table) - collected.ids)
    assert not gone, (
        f"tests/durations.json names {len(gone)} tests that are not collected: {gone[:10]}; "
        f"refresh it from a whole run: {scheduling.REFRESH}"
    )


class _Item:
    """What ``scheduling.unit_of`` reads of a collected test."""

    def __init__(self, nodeid: str, install: str | None = None, scope: str = "function") -> None:
        self.nodeid = nodeid
        self._install = install
        definition = type("Definition", (), {"scope": scope})()
        self._fixtureinfo = type("Info", (), {"name2fixturedefs": {"fixture": [definition]}})()

    def get_closest_marker(self, name: str) -> object:
        return pytest.mark.installs(self._install).mark if name == "installs" and self._install else None


def test_the_tests_of_one_install_are_one_unit_wherever_they_are():
    """Tests marked with one install share a unit across modules (one worker installs while the
    other works); control: unmarked tests are units of their own, or of their module when they
    share its fixture, and another install is another unit."""
    units = [
        scheduling.unit_of(item)
        for item in (
            _Item("tests/a.py::t[mem0]", "mem0"),
            _Item("tests/b.py::u[mem0-x]", "mem0"),
            _Item("tests/b.py::u[adk-x]", "adk"),
            _Item("tests/b.py::v"),
            _Item("tests/c.py::w", scope="module"),
        )
    ]
    assert units == ["installs:mem0", "installs:mem0", "installs:adk", "tests/b.py::v", "tests/c.py"]
