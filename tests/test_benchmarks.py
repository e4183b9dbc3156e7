"""The benchmark scripts keep working (they are run, not timed)."""

import json
import subprocess
import sys
from pathlib import Path

from tests.benchmark_scripts import BENCHMARKS, benchmark


def test_the_validation_benchmark_runs_and_writes_its_figures(tmp_path: Path) -> None:
    """A tiny run accepts every record and writes every figure and ratio."""
    module = benchmark("validation.py")
    figures = module.main(["--records", "40", "--repeat", "1", "--json", str(tmp_path / "out.json")])
    assert set(figures) == {
        "kbconform_records_per_s",
        "jsonschema_rs_records_per_s",
        "python_jsonschema_records_per_s",
        "ratio_vs_python_jsonschema",
        "ratio_vs_jsonschema_rs",
    }
    assert all(value > 0 for value in figures.values())
    assert (tmp_path / "out.json").exists()


def test_the_overhead_benchmark_runs_and_writes_its_figures(tmp_path: Path) -> None:
    """A tiny run (Chroma embedded) writes the three headline figures; recall is exact."""
    module = benchmark("overhead.py")
    figures = module.main(
        ["--chunks", "300", "--tenants", "12", "--queries", "2", "--json", str(tmp_path / "o.json")]
    )
    assert {"ingest_ratio", "query_ratio", "recall_at_10_min"} <= set(figures)
    assert figures["ingest_ratio"] > 0
    assert figures["query_ratio"] > 0
    assert figures["recall_at_10_min"] == 1.0
    assert figures["smallest_tenant_share"] < 0.01


def test_the_state_machine_benchmark_runs_and_writes_its_figures(tmp_path: Path) -> None:
    """The L4 machine runs on the in-memory reference and reports its time and calls."""
    module = benchmark("state_machine.py")
    figures = module.main(["--seed", "5", "--json", str(tmp_path / "s.json")])
    assert set(figures) == {"seconds", "backend_calls", "model_ratio"}
    assert figures["backend_calls"] > 1000
    assert (tmp_path / "s.json").exists()


def test_the_handoff_benchmark_runs_and_writes_its_figures(tmp_path: Path) -> None:
    """A tiny run times a get three ways (direct, a hand-off per call, one per batch) and counts
    every guarded call: two guarded ways, each the calls asked, every round."""
    module = benchmark("handoff.py")
    figures = module.main(["--calls", "20", "--rounds", "3", "--json", str(tmp_path / "h.json")])
    assert {"per_call_cpu_us", "batched_cpu_us", "handoff_ratio", "cpu_overhead_ratio"} <= set(figures)
    assert figures["calls_counted"] == 2 * 20 * 3
    assert (tmp_path / "h.json").exists()


def test_the_grant_benchmark_runs_and_writes_its_figures(tmp_path: Path) -> None:
    """A tiny run of the kb-grant reference's search against the stores' own queries writes every
    figure (medians and ratios, plain and with a simulated store latency)."""
    module = benchmark("bench_grant.py")
    figures = module.main(
        ["--documents", "30", "--rounds", "4", "--latency-ms", "1", "--json", str(tmp_path / "g.json")]
    )
    assert {"fanout_ratio", "fanout_vs_sum", "single_chroma_ratio", "single_qdrant_ratio"} <= set(figures)
    assert {"latency_fanout_ratio", "latency_serial_ratio"} <= set(figures)
    assert all(value > 0 for value in figures.values())
    assert (tmp_path / "g.json").exists()


def test_the_recall_by_tenant_benchmark_runs_and_writes_its_figures(tmp_path: Path) -> None:
    """A tiny run on the exact store and PostgreSQL: a row per store and selectivity, no
    foreign row anywhere, and the reference's path exact (recall 1.0) at every selectivity."""
    module = benchmark("recall_by_tenant.py")
    argv = ["--rows", "3000", "--tenants", "60", "--queries", "3", "--stores", "memory,postgres"]
    figures = module.main([*argv, "--json", str(tmp_path / "r.json")])
    results = figures["results"]
    assert {r["store"] for r in results} == {
        "memory",
        "reference on memory",
        "postgres",
        "postgres, iterative scans off",
        "reference on postgres",
    }
    assert len(results) == 5 * 4
    assert all(r["foreign"] == 0 for r in results)
    assert all(r["recall"] == 1.0 for r in results if r["store"].startswith("reference on"))
    assert (tmp_path / "r.json").exists()


def test_the_concurrency_benchmark_runs_and_finds_no_problem_in_the_reference() -> None:
    """One profile, two rounds: seconds on both sides, a ratio, and no problem found."""
    module = benchmark("concurrency.py")
    row = module.measure("memory-scope", 0, 2)
    assert row["problems"] == 0
    assert row["concurrency_seconds"] > 0
    assert row["isolation_seconds"] > 0


def test_the_chroma_server_benchmark_runs_and_writes_its_figures(tmp_path: Path) -> None:
    """Two servers started and stopped; each way of opening and each server's upsert timed."""
    module = benchmark("chroma_server.py")
    figures = module.main(["--repeat", "2", "--json", str(tmp_path / "c.json")])
    assert {"open_ratio", "upsert_ratio", "open_kept_client_ms", "upsert_memory_ms"} <= set(figures)
    assert all(value > 0 for name, value in figures.items() if name != "memory_file_system")
    assert (tmp_path / "c.json").exists()


def test_the_http_connections_benchmark_runs_and_writes_its_figures(tmp_path: Path) -> None:
    """A tiny run times a kept connection, a fresh one per request and a kept one with Nagle's
    algorithm on the server, and writes every figure and ratio."""
    module = benchmark("http_connections.py")
    figures = module.main(["--requests", "20", "--rounds", "1", "--json", str(tmp_path / "h.json")])
    assert set(figures) == {"kept_ms", "fresh_ms", "kept_nagle_ms", "fresh_ratio", "nagle_ratio"}
    assert all(value > 0 for value in figures.values())
    assert (tmp_path / "h.json").exists()


def test_the_undo_reads_benchmark_runs_and_writes_its_figures(tmp_path: Path) -> None:
    """A tiny run on the in-memory reference: a deletion signal and a sync each make fewer store
    calls than with the earlier lookups, and every figure is written."""
    module = benchmark("undo_reads.py")
    figures = module.main(["--adapter", "memory", "--rounds", "1", "--json", str(tmp_path / "u.json")])
    assert figures["signal_store_calls_after"] < figures["signal_store_calls_before"]
    assert figures["sync_store_calls_after"] < figures["sync_store_calls_before"]
    assert (tmp_path / "u.json").exists()


def test_the_repeated_runs_benchmark_runs_and_writes_its_figures(tmp_path: Path) -> None:
    """A tiny run (no state machine): the resident memory after each round of collections, with
    the client closed and left open."""
    module = benchmark("repeated_runs.py")
    figures = module.main(["--runs", "0", "--collections", "2", "--json", str(tmp_path / "r.json")])
    assert len(figures["collections_closed_mb"]) == len(figures["collections_left_open_mb"]) == 3


def test_the_startup_benchmark_runs_and_writes_its_figures(tmp_path: Path) -> None:
    """One round of the interpreter and ``kbconform --help``, against the kit itself as the
    baseline: a ratio near one, each command's imports named."""
    module = benchmark("startup.py")
    root = str(BENCHMARKS.parent)
    chosen = ["--command", "python -c pass", "--command", "kbconform --help"]
    out = tmp_path / "out.json"
    figures = module.main(["--rounds", "1", "--baseline", root, "--imports", *chosen, "--json", str(out)])
    assert set(figures["commands"]) == {"python -c pass", "kbconform --help"}
    helped = figures["commands"]["kbconform --help"]
    assert helped["this cpu s"] > 0
    assert helped["this / baseline"] > 0
    assert "kbconform" in dict(helped["imports"])
    assert out.exists()


def test_the_suite_calls_benchmark_puts_every_call_of_an_atomicity_test_in_a_phase(tmp_path: Path) -> None:
    """atomic-01[lasting] on the in-memory reference, by phase (in a child process: it runs
    pytest): every call the test makes is in one phase, and the control's canaries are read back
    while the faulted attempts' are not (each seeded as the control was)."""
    figures_path = tmp_path / "s.json"
    suite = BENCHMARKS.parent / "suites" / "tenant_namespace" / "test_atomicity.py"
    command = [sys.executable, str(BENCHMARKS / "suite_calls.py"), "--phases", "--json", str(figures_path)]
    done = subprocess.run(
        [*command, str(suite), "-k", "ingest and lasting", "-p", "no:cacheprovider"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert figures_path.exists(), done.stdout[-2000:] + done.stderr[-2000:]
    figures = json.loads(figures_path.read_text(encoding="utf-8"))
    test = "test_an_ingest_the_store_fails_part_way_writes_nothing[lasting]"
    phases = figures["phases"][test]
    assert sum(row["calls"] for row in phases.values()) == figures[test]["calls"] > 0
    assert phases["control: seed canaries read back"]["calls"] > 0
    assert "attempts: seed canaries read back" not in phases
    assert phases["attempts: seed canaries"]["calls"] > 0


def test_the_exchange_encoding_benchmark_replays_every_exchange_on_both_sides(tmp_path: Path) -> None:
    """A tiny run replays the same recorded exchanges with the encoding as it was and as it is,
    and writes every figure."""
    module = benchmark("exchange_encoding.py")
    figures = module.main(["--records", "3", "--rounds", "1", "--json", str(tmp_path / "e.json")])
    assert figures["exchanges"] == 2 * (3 + 1 + 5 * 3) + 3  # hello, open and close too
    assert figures["before_cpu_s"] > 0
    assert figures["now_cpu_s"] > 0
    assert (tmp_path / "e.json").exists()
