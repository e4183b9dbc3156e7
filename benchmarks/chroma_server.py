"""What opening a collection and writing a row cost the reference on a Chroma server, in one process.

    python benchmarks/chroma_server.py [--repeat N] [--json PATH]

Two ``chroma run`` servers on 127.0.0.1, started here: one whose directory is on the disk (the
system's temporary directory) and one on a memory file system (:func:`scratch_dir`, where
:class:`ChromaServer` keeps it when the machine has one). Interleaved, ``--repeat`` times each,
the wall milliseconds (a round trip waits on the server, not on this process) of:

* opening a fresh collection and dropping it through a client built for it (``ChromaStore.http``,
  as the reference's server mode opened every backend) and through one client kept open
  (:class:`ChromaClient`, as it opens them now);
* a one-row upsert (the store's own: it reads the stored keys first) on either server;
* that upsert inside a write that knows the stored keys (``STORED_KEYS``, from its undo log:
  no read first), on the memory server;
* opening and dropping an embedded collection (``ChromaStore.ephemeral``) through a client
  built for it (chromadb's settings built again: as the embedded mode opened every backend)
  and through one client kept (as the adapter opens them now); those figures are CPU
  milliseconds, the process's own work.

Prints the medians and the ratios (old over new). A conformance run of the reference opens
about 390 backends and makes about 1,800 upserts (``kbconform run`` on the in-memory store,
its store calls counted), so these ratios carry to a run's wall time in that proportion.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np
from _bench import report

from kbconform_reference.namespace.stores import server as servers
from kbconform_reference.namespace.stores._protocol import stored_keys
from kbconform_reference.namespace.stores.chroma import ChromaClient, ChromaStore, embedded_client


def _ms(call: Callable[[], object]) -> float:
    start = time.perf_counter()
    call()
    return 1000 * (time.perf_counter() - start)


def _cpu_ms(call: Callable[[], object]) -> float:
    start = time.process_time()
    call()
    return 1000 * (time.process_time() - start)


def _known_upsert_ms(store: ChromaStore, vector: np.ndarray, metadata: list[dict[str, str]]) -> float:
    """The wall milliseconds of the upsert of a write whose undo log read the row (its keys
    known to the store); the undo log's read is not timed: the write made it either way."""
    with stored_keys(store.get(ids=["row"])):
        return _ms(partial(store.upsert, ["row"], vector, ["text"], metadata))


class _DiskServer(servers.ChromaServer):
    """A Chroma server whose directory is on the disk, as it was."""

    in_memory = False


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)

    vector = np.full((1, 384), 1 / np.sqrt(384), dtype=np.float32)
    metadata = [{"tenantId": "acme"}]
    figures: dict[str, float] = {
        "memory_file_system": float(servers.scratch_dir() is not None),
    }
    with _DiskServer() as disk, servers.ChromaServer() as memory:
        kept = ChromaClient(memory.host, memory.port)
        stores = {"disk": ChromaStore.http(disk.host, disk.port), "memory": kept.collection()}
        for store in stores.values():
            store.upsert(["row"], vector, ["text"], metadata)
        times: dict[str, list[float]] = {"open_new_client": [], "open_kept_client": []}
        times |= {f"upsert_{where}": [] for where in stores}
        times |= {name: [] for name in ("upsert_memory_keys_known", "embedded_open_new_client")}
        times["embedded_open_kept_client"] = []
        embedded = embedded_client()
        ChromaStore.ephemeral(client=embedded).drop()  # chromadb's shared system started
        for _ in range(args.repeat):
            times["open_new_client"].append(_ms(lambda: ChromaStore.http(memory.host, memory.port).drop()))
            times["open_kept_client"].append(_ms(lambda: kept.collection().drop()))
            for where, store in stores.items():
                write = partial(store.upsert, ["row"], vector, ["text"], metadata)
                times[f"upsert_{where}"].append(_ms(write))
            times["upsert_memory_keys_known"].append(_known_upsert_ms(stores["memory"], vector, metadata))
            times["embedded_open_new_client"].append(_cpu_ms(lambda: ChromaStore.ephemeral().drop()))
            times["embedded_open_kept_client"].append(
                _cpu_ms(lambda: ChromaStore.ephemeral(client=embedded).drop())
            )
        for store in stores.values():
            store.drop()
        kept.close()
    for name, values in times.items():
        figures[f"{name}_ms"] = round(statistics.median(values), 2)
    pairs = (
        ("open", "open_new_client", "open_kept_client"),
        ("upsert", "upsert_disk", "upsert_memory"),
        ("upsert_keys_known", "upsert_memory", "upsert_memory_keys_known"),
        ("embedded_open", "embedded_open_new_client", "embedded_open_kept_client"),
    )
    for ratio, old, new in pairs:
        figures[f"{ratio}_ratio"] = round(figures[f"{old}_ms"] / max(figures[f"{new}_ms"], 1e-3), 2)
    return report(figures, args.json)


if __name__ == "__main__":
    main(sys.argv[1:])
