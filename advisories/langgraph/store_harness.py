"""harnesses/langgraph/harness.py with LangGraph's store swapped, and nothing else changed.

    python store_harness.py sqlite      # SqliteStore (langgraph-checkpoint-sqlite), in memory
    python store_harness.py postgres    # PostgresStore (langgraph-checkpoint-postgres) on the
                                        # server $KBCONFORM_ADVISORY_POSTGRES names (a libpq string)

Every operation, the scope's mapping to a namespace and the manifest are the LangGraph harness's
own (it is loaded as a module); only ``new_store`` is replaced, as an application would choose
its store, and the manifest's backend names the store and its release. Each backend gets a
store of its own: a fresh in-memory SQLite database, or a fresh PostgreSQL schema. PostgreSQL
keeps the harness's embedding index (pgvector); SQLite has none (its index needs sqlite-vec
loaded as an extension, which many Python builds cannot), so its searches rank by recency, and
the kit's ranking checks fail alike on every release: advisories/README.md says which tests.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import itertools
import os
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
STORES = {"sqlite": "langgraph-checkpoint-sqlite", "postgres": "langgraph-checkpoint-postgres"}


def _harness() -> Any:
    """harnesses/langgraph/harness.py as a module (its ``__main__`` block does not run)."""
    path = ROOT / "harnesses" / "langgraph" / "harness.py"
    spec = importlib.util.spec_from_file_location("langgraph_harness", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _sqlite(harness: Any) -> Any:
    import sqlite3

    from langgraph.store.sqlite import SqliteStore

    def new_store() -> Any:
        conn = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
        store = SqliteStore(conn)  # no index: sqlite-vec needs loadable extensions, which many Pythons lack
        store.setup()
        return store

    return new_store


def _postgres(harness: Any) -> Any:
    import psycopg
    from langgraph.store.postgres import PostgresStore
    from psycopg.rows import dict_row

    conninfo = os.environ["KBCONFORM_ADVISORY_POSTGRES"]
    with psycopg.connect(conninfo, autocommit=True) as admin:
        admin.execute("CREATE EXTENSION IF NOT EXISTS vector")
    schemas = itertools.count(1)

    def new_store() -> Any:
        schema = f"kb_{os.getpid()}_{next(schemas)}"
        conn = psycopg.connect(
            conninfo,
            autocommit=True,
            prepare_threshold=0,
            row_factory=dict_row,
            options=f"-c search_path={schema},public",
        )
        conn.execute(f'CREATE SCHEMA "{schema}"')
        store = PostgresStore(conn, index=harness_index(harness))
        store.setup()
        return store

    return new_store


def harness_index(harness: Any) -> dict[str, Any]:
    """The LangGraph harness's index: its hashing embedding over the value field ``text``."""
    return {"dims": harness.DIMENSIONS, "embed": harness.hashing_embed, "fields": ["text"]}


def main(store: str) -> int:
    harness = _harness()
    harness.new_store = (_sqlite if store == "sqlite" else _postgres)(harness)
    package = STORES[store]
    served = harness.LangGraphHarness()
    served.manifest = {
        **harness.MANIFEST,
        "backend": {
            "name": f"{harness.MANIFEST['backend']['name']} with {package}",
            "version": importlib.metadata.version(package),
        },
    }
    return int(harness.kbharness.serve(served, name=f"langgraph-{store}-harness"))


if __name__ == "__main__":
    if sys.argv[1:] not in (["sqlite"], ["postgres"]):
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1]))
