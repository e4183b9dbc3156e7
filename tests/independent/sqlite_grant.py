"""An independent kb-grant backend: one SQLite store for the catalogue and every document.

Not the reference and not the in-memory double: written from ``schemas/kb-grant.md`` and the
adapter guide alone. Tenants, knowledge bases (owner, store, model), grants and documents are
tables of one in-memory SQLite database per opened backend; the "several vector stores" are rows
told apart by a ``store`` column, not separate objects, and each store keeps its engine's native
score convention (a cosine distance, a similarity, a negative inner product) that the merge
brings to ``(1 + cos) / 2``. Tenant names and texts are kept as their UTF-8 bytes (BLOBs), so
every comparison is byte for byte and no collation can fold two tenants into one. Authorization
(owner, or a grant row) is a join in every statement that reads a knowledge base; a search
checks every named knowledge base in one catalogue statement before any store is asked, then
asks each store group in a thread of its own (one statement per group, the authorization joined
in again), under the group deadline, and ranks by exact cosine over float32 unit vectors in
Python. A group's deadline is for its store to answer: counted from when the group's store call
starts, missed only while that call (the fault switch, standing for the store's answer) has not
returned; reading the rows afterwards is the backend's own work, which a loaded machine slows
but cannot fail. Writes, copies, moves and deletes run in one SQLite transaction each, paged at 64
documents per store call, with the fault switch consulted before every store call, so a failing
store rolls the whole call back. It uses only the helpers the guide offers a Python backend (the
errors, ``grant_invalid``, ``model_mismatch``, the hit and knowledge base records). It is a
control that keeps the suites' model honest: it must pass every kb-grant test, at the thorough
profile too.
"""

from __future__ import annotations

import builtins
import heapq
import itertools
import json
import math
import operator
import queue
import sqlite3
import threading
import time
from array import array
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, NamedTuple

from kbconform.adapter import BackendOptions
from kbconform.errors import BackendUnavailable, Forbidden, NotFound, Unauthenticated
from kbconform.profiles.kb_grant.protocol import GrantHit, KbInfo, grant_invalid, model_mismatch

#: The stores a knowledge base can be bound to, and the engine each one stands for.
ENGINES: dict[str, str] = {"chroma-1": "chroma", "qdrant-1": "qdrant", "pgvector-1": "pgvector"}
#: The embedding models: name -> dimension.
MODELS: dict[str, int] = {"m-8a": 8, "m-8b": 8, "m-12": 12}
MAX_FAN_OUT = len(ENGINES)
GROUP_DEADLINE = 2.0
#: Documents per store call of a write, copy, move or delete.
DOCUMENT_PAGE = 64
#: Knowledge bases per catalogue statement of a listing.
CATALOGUE_PAGE = 100
MAX_LIMIT = 1000

MANIFEST: dict[str, Any] = {
    "manifestVersion": "1",
    "concurrency": "threads",
    "isolationProfile": "kb-grant",
    "adapter": {"name": "independent-sqlite-grant", "version": "0.0.1"},
    "backend": {"name": "one SQLite store: catalogue and documents, exact cosine", "version": "test"},
    "isolationModel": "metadata-filter",
    "readFacades": ["search", "get", "list"],
    "stores": [{"id": store, "engine": engine} for store, engine in ENGINES.items()],
    "models": [{"name": name, "dimension": dimension} for name, dimension in MODELS.items()],
    "maxFanOut": MAX_FAN_OUT,
    "groupDeadlineSeconds": GROUP_DEADLINE,
    "pageSizes": [DOCUMENT_PAGE, CATALOGUE_PAGE],
    "features": {"fault-injection": True},
}

_SCHEMA = """
PRAGMA foreign_keys = ON;
CREATE TABLE tenants (
    name BLOB PRIMARY KEY
) WITHOUT ROWID;
CREATE TABLE kbs (
    seq INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    owner BLOB NOT NULL REFERENCES tenants (name),
    store TEXT NOT NULL,
    model TEXT NOT NULL
);
CREATE INDEX kbs_owner ON kbs (owner);
CREATE TABLE grants (
    kb TEXT NOT NULL REFERENCES kbs (id),
    grantee BLOB NOT NULL REFERENCES tenants (name),
    PRIMARY KEY (kb, grantee)
) WITHOUT ROWID;
CREATE INDEX grants_grantee ON grants (grantee, kb);
CREATE TABLE documents (
    seq INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    kb TEXT NOT NULL REFERENCES kbs (id),
    store TEXT NOT NULL,
    text BLOB NOT NULL,
    embedding BLOB NOT NULL
);
CREATE INDEX documents_place ON documents (store, kb, seq);
"""

#: Who may read a knowledge base ``k``: its owner, or a tenant holding a grant row ``g``.
_GRANT_JOIN = "LEFT JOIN grants g ON g.kb = k.id AND g.grantee = :caller"
_READABLE = "(k.owner = :caller OR g.grantee IS NOT NULL)"

_ACCESS_SQL = f"""
SELECT k.id, k.owner, k.store, k.model, k.owner = :caller
FROM kbs k {_GRANT_JOIN}
WHERE k.id = :kb AND {_READABLE}
"""
_SEARCH_ACCESS_SQL = f"""
SELECT k.id, k.store, k.model
FROM json_each(:asked) a JOIN kbs k ON k.id = a.value {_GRANT_JOIN}
WHERE {_READABLE}
"""
_GROUP_SQL = f"""
SELECT d.id, d.kb, d.text, d.embedding
FROM json_each(:asked) a
JOIN kbs k ON k.id = a.value AND k.store = :store
JOIN documents d ON d.kb = k.id AND d.store = k.store
{_GRANT_JOIN}
WHERE {_READABLE}
"""
_LIST_SQL = f"""
SELECT k.seq, k.id, k.owner, k.store, k.model
FROM kbs k {_GRANT_JOIN}
WHERE {_READABLE} AND k.seq > :after
ORDER BY k.seq LIMIT :page
"""
_INSERT_DOCUMENT = "INSERT INTO documents (id, kb, store, text, embedding) VALUES (?, ?, ?, ?, ?)"


class _Kb(NamedTuple):
    id: str
    owner: bytes
    store: str
    model: str
    owned: bool


Vector = tuple[float, ...]
#: A scored hit on the one scale: (score, document id, kb, text).
Scored = tuple[float, str, str, str]


# -- values the caller passes ---------------------------------------------------------------------


def _plain(value: object) -> str | None:
    """``value`` as a plain ``str`` (a subclass's own methods never consulted), else None."""
    return str.__str__(value) if isinstance(value, str) else None


def _name_bytes(name: str) -> bytes:
    """A tenant name or a text as stored: its exact code points, lone surrogates included."""
    return name.encode("utf-8", "surrogatepass")


def _name_text(stored: bytes) -> str:
    return stored.decode("utf-8", "surrogatepass")


def _encodable(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _kb_id(value: object, what: str) -> str:
    """A knowledge base id: a non-empty string (the call's shape)."""
    kb = _plain(value)
    if not kb:
        raise grant_invalid(what, "a knowledge base id: a non-empty string", type(value).__name__)
    return kb


def _vector(value: object) -> Vector | None:
    """A list of finite numbers, not all zero; None when ``value`` is not one."""
    if not isinstance(value, (list, tuple)) or not value:
        return None
    numbers: list[float] = []
    for item in value:
        if isinstance(item, bool) or not isinstance(item, (int, float)):
            return None
        try:
            number = float(item)
        except OverflowError:
            return None
        if not math.isfinite(number):
            return None
        numbers.append(number)
    return tuple(numbers) if any(numbers) else None


def _unit(vector: Vector) -> list[float]:
    """``vector`` scaled to length 1 (scaled by its largest component first: no overflow)."""
    largest = max(abs(x) for x in vector)
    scaled = [x / largest for x in vector]
    norm = math.hypot(*scaled)
    return [x / norm for x in scaled]


def _blob(vector: Vector) -> bytes:
    """The stored form: the unit vector as float32, as a cosine store normalizes on write."""
    return array("f", _unit(vector)).tobytes()


def _cosine(query: Sequence[float], stored: bytes) -> float:
    """Exact cosine of a unit ``query`` and a stored float32 vector."""
    values = array("f")
    values.frombytes(stored)
    norm = math.hypot(*values)
    cos = math.fsum(q * v for q, v in zip(query, values, strict=True)) / norm
    return max(-1.0, min(1.0, cos))


def _limit(value: object) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_LIMIT:
        return None
    return int(value)


def _asked(value: object) -> list[str] | None:
    """The knowledge bases of a search: a non-empty list of non-empty strings, no repeats."""
    if not isinstance(value, (list, tuple)) or not value:
        return None
    asked = [_plain(kb) for kb in value]
    if any(not kb for kb in asked) or len(set(asked)) != len(asked):
        return None
    return [kb for kb in asked if kb]


def _documents(value: object) -> list[tuple[str, Vector]]:
    """A batch: a non-empty list of ``{text, embedding}``; every other key is dropped."""
    if not isinstance(value, (list, tuple)) or not value:
        raise grant_invalid("documents", "a non-empty list of documents", type(value).__name__)
    batch: list[tuple[str, Vector]] = []
    for index, document in enumerate(value):
        if not isinstance(document, Mapping):
            raise grant_invalid(f"documents/{index}", "a document {text, embedding}", type(document).__name__)
        text = _plain(document.get("text"))
        if not text:
            raise grant_invalid(f"documents/{index}/text", "a non-empty string", "none")
        vector = _vector(document.get("embedding"))
        if vector is None:
            raise grant_invalid(
                f"documents/{index}/embedding", "a list of finite numbers, not all zero", "another value"
            )
        batch.append((text, vector))
    return batch


def _pages(rows: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    for start in range(0, len(rows), size):
        yield rows[start : start + size]


# -- store engines: each answers in its own convention, the merge brings them to one scale --------


def _native(engine: str, cos: float) -> float:
    if engine == "chroma":
        return 1.0 - cos  # cosine distance: lower is nearer
    if engine == "pgvector":
        return -cos  # negative inner product of unit vectors: lower is nearer
    return cos  # qdrant: cosine similarity, higher is nearer


def _one_scale(engine: str, native: float) -> float:
    if engine == "chroma":
        cos = 1.0 - native
    elif engine == "pgvector":
        cos = -native
    else:
        cos = native
    return (1.0 + max(-1.0, min(1.0, cos))) / 2.0


def _nearest(engine: str, scored: list[tuple[float, str, str, str]], limit: int) -> list[Any]:
    pick = heapq.nlargest if engine == "qdrant" else heapq.nsmallest
    return pick(limit, scored, key=operator.itemgetter(0))


class SqliteGrant:
    """One backend: an in-memory SQLite database holding the catalogue and every store's rows."""

    def __init__(self, store_fails: Callable[..., bool] | None = None) -> None:
        self._switch = store_fails
        self._db = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
        self._db.executescript(_SCHEMA)
        self._lock = threading.RLock()
        self._kb_numbers = itertools.count(1)
        self._document_numbers = itertools.count(1)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # -- the database -----------------------------------------------------------------------------

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        """One SQLite transaction: any error rolls every statement of it back."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def _store_call(self, store: str, operation: str) -> None:
        """Consult the fault switch before a call to ``store``; a failing store raises."""
        if self._switch is not None and self._switch(store):
            raise BackendUnavailable(operation, f"vector store {store} did not answer")

    def _count(self, kb: _Kb, operation: str) -> int:
        """How many documents ``kb``'s store holds for it: one store call."""
        self._store_call(kb.store, operation)
        (count,) = self._db.execute(
            "SELECT COUNT(*) FROM documents WHERE kb = ? AND store = ?", (kb.id, kb.store)
        ).fetchone()
        return int(count)

    # -- identity and rights ----------------------------------------------------------------------

    def _caller(self, caller: object, operation: str) -> bytes:
        """A tenant the backend knows, compared byte for byte; anything else is no identity."""
        name = _plain(caller)
        if not name:
            raise Unauthenticated(operation)
        stored = _name_bytes(name)
        with self._lock:
            known = self._db.execute("SELECT 1 FROM tenants WHERE name = ?", (stored,)).fetchone()
        if known is None:
            raise Unauthenticated(operation)
        return stored

    def _tenant(self, value: object) -> bytes | None:
        name = _plain(value)
        if not name:
            return None
        stored = _name_bytes(name)
        row = self._db.execute("SELECT name FROM tenants WHERE name = ?", (stored,)).fetchone()
        return None if row is None else stored

    def _readable(self, caller: bytes, kb: str) -> _Kb:
        """``kb`` if ``caller`` owns it or holds a grant; else NotFound, as for a missing id."""
        row = None
        if _encodable(kb):
            row = self._db.execute(_ACCESS_SQL, {"caller": caller, "kb": kb}).fetchone()
        if row is None:
            raise NotFound(kb)
        return _Kb(row[0], row[1], row[2], row[3], bool(row[4]))

    def _administered(self, caller: bytes, kb: str, operation: str) -> _Kb:
        found = self._readable(caller, kb)
        if not found.owned:
            raise Forbidden(operation, "only the owner of a knowledge base administers it")
        return found

    @staticmethod
    def _store(value: object) -> str:
        store = _plain(value)
        if store is None or store not in ENGINES:
            raise grant_invalid("store", f"one of the stores {sorted(ENGINES)}", "an unknown store")
        return store

    # -- the operator -----------------------------------------------------------------------------

    def create_tenant(self, tenant: str, /) -> None:
        name = _plain(tenant)
        if not name:
            raise grant_invalid("tenant", "a non-empty string", type(tenant).__name__)
        with self._transaction():
            if self._tenant(name) is not None:
                raise grant_invalid("tenant", "a new tenant", "an existing tenant")
            self._db.execute("INSERT INTO tenants (name) VALUES (?)", (_name_bytes(name),))

    # -- the catalogue ----------------------------------------------------------------------------

    def create_kb(self, caller: str, store: str, model: str, /) -> str:
        owner = self._caller(caller, "create_kb")
        bound = self._store(store)
        model_name = _plain(model)
        if model_name is None or model_name not in MODELS:
            raise grant_invalid("model", f"one of the models {sorted(MODELS)}", "an unknown model")
        with self._transaction():
            kb = f"kb-{next(self._kb_numbers)}"
            self._db.execute(
                "INSERT INTO kbs (id, owner, store, model) VALUES (?, ?, ?, ?)",
                (kb, owner, bound, model_name),
            )
        return kb

    def share_kb(self, caller: str, kb: str, grantee: str, /) -> None:
        name = self._caller(caller, "share_kb")
        kb_id = _kb_id(kb, "kb")
        with self._transaction():
            found = self._administered(name, kb_id, "share_kb")
            reader = self._tenant(grantee)
            if reader is None:
                raise grant_invalid("grantee", "a tenant the backend knows", "an unknown tenant")
            if reader == found.owner:
                raise grant_invalid("grantee", "a tenant other than the owner", "the owner")
            self._db.execute("INSERT OR IGNORE INTO grants (kb, grantee) VALUES (?, ?)", (found.id, reader))

    def revoke_kb(self, caller: str, kb: str, grantee: str, /) -> None:
        """The owner naming itself is answered as ``share_kb`` answers it: it holds no grant."""
        name = self._caller(caller, "revoke_kb")
        kb_id = _kb_id(kb, "kb")
        with self._transaction():
            found = self._administered(name, kb_id, "revoke_kb")
            reader = self._tenant(grantee)
            if reader is None:
                raise grant_invalid("grantee", "a tenant the backend knows", "an unknown tenant")
            if reader == found.owner:
                raise grant_invalid("grantee", "a tenant other than the owner", "the owner")
            self._db.execute("DELETE FROM grants WHERE kb = ? AND grantee = ?", (found.id, reader))

    # -- writes -----------------------------------------------------------------------------------

    def ingest(self, caller: str, kb: str, documents: Sequence[Mapping[str, Any]], /) -> builtins.list[str]:
        name = self._caller(caller, "ingest")
        kb_id = _kb_id(kb, "kb")
        batch = _documents(documents)
        with self._transaction():
            found = self._administered(name, kb_id, "ingest")
            dimension = MODELS[found.model]
            for index, (_, vector) in enumerate(batch):
                if len(vector) != dimension:
                    raise grant_invalid(
                        f"documents/{index}/embedding", f"a vector of dimension {dimension}", str(len(vector))
                    )
            ids = [f"doc-{next(self._document_numbers)}" for _ in batch]
            rows = [
                (doc, found.id, found.store, _name_bytes(text), _blob(vector))
                for doc, (text, vector) in zip(ids, batch, strict=True)
            ]
            for page in _pages(rows, DOCUMENT_PAGE):
                self._store_call(found.store, "ingest")
                self._db.executemany(_INSERT_DOCUMENT, page)
        return ids

    def delete_kb(self, caller: str, kb: str, /) -> None:
        name = self._caller(caller, "delete_kb")
        kb_id = _kb_id(kb, "kb")
        with self._transaction():
            found = self._administered(name, kb_id, "delete_kb")
            while True:
                self._store_call(found.store, "delete_kb")
                gone = self._db.execute(
                    "DELETE FROM documents WHERE seq IN "
                    "(SELECT seq FROM documents WHERE kb = ? AND store = ? ORDER BY seq LIMIT ?)",
                    (found.id, found.store, DOCUMENT_PAGE),
                ).rowcount
                if gone < DOCUMENT_PAGE:
                    break
            self._db.execute("DELETE FROM grants WHERE kb = ?", (found.id,))
            self._db.execute("DELETE FROM kbs WHERE id = ?", (found.id,))

    def copy_kb(self, caller: str, source: str, store: str, /) -> str:
        name = self._caller(caller, "copy_kb")
        source_id = _kb_id(source, "source")
        with self._transaction():
            found = self._readable(name, source_id)
            target = self._store(store)
            copy = f"kb-{next(self._kb_numbers)}"
            self._db.execute(
                "INSERT INTO kbs (id, owner, store, model) VALUES (?, ?, ?, ?)",
                (copy, name, target, found.model),
            )
            after, first = 0, True
            while True:
                self._store_call(found.store, "copy_kb")  # a page read from the source's store
                rows = self._db.execute(
                    "SELECT seq, text, embedding FROM documents "
                    "WHERE kb = ? AND store = ? AND seq > ? ORDER BY seq LIMIT ?",
                    (found.id, found.store, after, DOCUMENT_PAGE),
                ).fetchall()
                if rows or first:
                    self._store_call(target, "copy_kb")  # the page written on the target store
                    self._db.executemany(
                        _INSERT_DOCUMENT,
                        [
                            (f"doc-{next(self._document_numbers)}", copy, target, text, blob)
                            for _, text, blob in rows
                        ],
                    )
                first = False
                if len(rows) < DOCUMENT_PAGE:
                    break
                after = rows[-1][0]
        return copy

    def move_kb(self, caller: str, kb: str, store: str, /) -> None:
        name = self._caller(caller, "move_kb")
        kb_id = _kb_id(kb, "kb")
        with self._transaction():
            found = self._administered(name, kb_id, "move_kb")
            target = self._store(store)
            if target == found.store:
                return
            while True:
                self._store_call(found.store, "move_kb")  # a page taken from the old store
                self._store_call(target, "move_kb")  # and written on the new one
                moved = self._db.execute(
                    "UPDATE documents SET store = ? WHERE seq IN "
                    "(SELECT seq FROM documents WHERE kb = ? AND store = ? ORDER BY seq LIMIT ?)",
                    (target, found.id, found.store, DOCUMENT_PAGE),
                ).rowcount
                if moved < DOCUMENT_PAGE:
                    break
            self._db.execute("UPDATE kbs SET store = ? WHERE id = ?", (target, found.id))

    # -- reads ------------------------------------------------------------------------------------

    def get_kb(self, caller: str, kb: str, /) -> KbInfo:
        name = self._caller(caller, "get_kb")
        kb_id = _kb_id(kb, "kb")
        with self._lock:
            found = self._readable(name, kb_id)
            documents = self._count(found, "get_kb")
        return KbInfo(found.id, _name_text(found.owner), found.store, found.model, documents)

    def list_kbs(self, caller: str, /) -> builtins.list[KbInfo]:
        name = self._caller(caller, "list_kbs")
        shown: list[KbInfo] = []
        with self._lock:
            readable: list[_Kb] = []
            after = 0
            while True:
                rows = self._db.execute(
                    _LIST_SQL, {"caller": name, "after": after, "page": CATALOGUE_PAGE}
                ).fetchall()
                readable += [_Kb(row[1], row[2], row[3], row[4], row[2] == name) for row in rows]
                if len(rows) < CATALOGUE_PAGE:
                    break
                after = rows[-1][0]
            for found in readable:
                documents = self._count(found, "list_kbs")
                shown.append(KbInfo(found.id, _name_text(found.owner), found.store, found.model, documents))
        return shown

    def search(
        self, caller: str, kbs: Sequence[str], embedding: Sequence[float], limit: int, /
    ) -> builtins.list[GrantHit]:
        name = self._caller(caller, "search")
        asked = _asked(kbs)
        if asked is None:
            raise grant_invalid(
                "kbs", "a non-empty list of knowledge base ids, without repeats", "another value"
            )
        query = _vector(embedding)
        if query is None:
            raise grant_invalid("embedding", "a list of finite numbers, not all zero", "another value")
        top = _limit(limit)
        if top is None:
            raise grant_invalid("limit", f"an integer from 1 to {MAX_LIMIT}", repr(limit))
        # Every knowledge base checked readable in one catalogue statement, before any store.
        listed = json.dumps([kb for kb in asked if _encodable(kb)])
        with self._lock:
            rows = self._db.execute(_SEARCH_ACCESS_SQL, {"caller": name, "asked": listed}).fetchall()
        readable = {row[0]: (row[1], row[2]) for row in rows}
        for kb in asked:
            if kb not in readable:
                raise NotFound(kb)
        models = [readable[kb][1] for kb in asked]
        if len(set(models)) > 1:
            raise model_mismatch(models)
        dimension = MODELS[models[0]]
        if len(query) != dimension:
            raise grant_invalid("embedding", f"a vector of dimension {dimension}", str(len(query)))
        groups: dict[str, list[str]] = {}
        for kb in asked:
            groups.setdefault(readable[kb][0], []).append(kb)
        merged = self._fan_out(name, groups, _unit(query), top)
        best = heapq.nlargest(top, merged, key=operator.itemgetter(0))
        return [GrantHit(doc, kb, text, score) for score, doc, kb, text in best]

    def _fan_out(
        self, caller: bytes, groups: dict[str, list[str]], query: list[float], limit: int
    ) -> list[Scored]:
        """Ask every store group in a thread of its own, all or nothing, under the deadline."""
        answers: queue.Queue[tuple[str, list[Scored] | BaseException]] = queue.Queue()
        gate = threading.Semaphore(MAX_FAN_OUT)
        abandoned = threading.Event()
        started = {store: threading.Event() for store in groups}
        answered = {store: threading.Event() for store in groups}
        since: dict[str, float] = {}

        def ask(store: str, kbs: list[str]) -> None:
            with gate:
                if abandoned.is_set():
                    return
                since[store] = time.monotonic()
                started[store].set()
                try:
                    found = self._ask_group(caller, store, kbs, query, limit, abandoned, answered[store])
                    answers.put((store, found))
                except BaseException as error:  # handed to the waiting call, which raises
                    answers.put((store, error))
                finally:
                    answered[store].set()

        for store, kbs in groups.items():
            threading.Thread(target=ask, args=(store, kbs), name=f"search-{store}", daemon=True).start()
        for store in groups:
            started[store].wait()  # a group waiting at the gate has not started
            if not answered[store].wait(max(0.0, since[store] + GROUP_DEADLINE - time.monotonic())):
                abandoned.set()
                raise BackendUnavailable(
                    "search", f"the store {store} did not answer within {GROUP_DEADLINE:g} s"
                )
        merged: list[Scored] = []
        for _ in groups:
            store, answer = answers.get()
            if isinstance(answer, BaseException):
                abandoned.set()
                if isinstance(answer, BackendUnavailable):
                    raise BackendUnavailable("search", answer.reason) from None
                raise answer
            merged += answer
        return merged

    def _ask_group(
        self,
        caller: bytes,
        store: str,
        kbs: list[str],
        query: list[float],
        limit: int,
        abandoned: threading.Event,
        answered: threading.Event,
    ) -> list[Scored]:
        """One store call: the group's readable documents, its ``limit`` nearest, on one scale
        (``answered`` set once the store has answered)."""
        self._store_call(store, "search")
        answered.set()
        if abandoned.is_set():
            return []
        with self._lock:
            rows = self._db.execute(
                _GROUP_SQL, {"caller": caller, "store": store, "asked": json.dumps(kbs)}
            ).fetchall()
        engine = ENGINES[store]
        scored = [
            (_native(engine, _cosine(query, blob)), doc, kb, _name_text(text)) for doc, kb, text, blob in rows
        ]
        return [
            (_one_scale(engine, native), doc, kb, text)
            for native, doc, kb, text in _nearest(engine, scored, limit)
        ]


class Adapter:
    """``tests.independent.sqlite_grant:make``."""

    manifest = MANIFEST

    def open(self, options: BackendOptions, /) -> SqliteGrant:
        return SqliteGrant(options.store_fails)

    def close(self, backend: SqliteGrant, /) -> None:
        backend.close()

    def shutdown(self) -> None:
        return None


def make() -> Adapter:
    return Adapter()


__all__ = ["MANIFEST", "Adapter", "SqliteGrant", "make"]
