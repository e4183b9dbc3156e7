"""The atomicity suite's known "before" (``View.known``): a fresh backend seeded as the control
was reads, told from its own export and the control's view, exactly as reading it does, also when
the export carries no document (Neo's keeps the text in metadata); and it is not told when list
and get show one id's document differently (then the suite reads the backend)."""

from __future__ import annotations

import random
import time
from types import SimpleNamespace
from typing import Any

from kbconform.adapter import BackendOptions, load_adapter
from kbconform.profiles.tenant_namespace.data import Principals, record, seed_canaries
from suites.tenant_namespace.test_atomicity import View, _seeded


class _Documentless:
    """A backend whose export carries no document; ``shown`` replaces what get shows (once set,
    after the seed read back)."""

    def __init__(self, inner: Any, shown: dict[str, str] | None = None) -> None:
        self.inner, self.shown = inner, shown or {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def export(self, principal: Any) -> list[dict[str, Any]]:
        return [{**dict(row), "document": None} for row in self.inner.export(principal)]

    def get(self, principal: Any, chunk_id: str) -> Any:
        hit = self.inner.get(principal, chunk_id)
        return SimpleNamespace(
            id=hit.id, document=self.shown.get(chunk_id, hit.document), metadata=hit.metadata
        )


def _seed(adapter: Any, principals: Principals) -> Any:
    backend = _Documentless(adapter.open(BackendOptions(spoof_mode="overwrite")))
    seed_canaries(backend, principals, random.Random(7))
    backend.ingest(
        principals.acme, [record(f"docs/extra-{n}.md", f"extra {n}", tenant="acme") for n in range(7)]
    )
    return _seeded(backend, principals, lambda: None)


def _read(view: View) -> tuple[Any, ...]:
    return view.lists, view.counts, view.gets, view.export


def test_a_state_before_a_write_is_told_from_an_export_without_documents_as_reading_it_shows() -> None:
    """known() equals a full read of a second backend seeded alike, its stamps its own."""
    adapter, manifest = load_adapter("kbconform_reference.adapter:memory")
    principals = Principals.for_manifest(manifest)
    run = SimpleNamespace(manifest=manifest)
    control = _seed(adapter, principals)
    before = View(run, control.backend, principals, control.owners)
    time.sleep(0.002)  # the second backend's stamps differ from the control's
    attempt = _seed(adapter, principals)
    known = View.known(before, attempt.exported, attempt.owners)
    assert known is not None
    assert attempt.exported != control.exported  # the stamps: the known view uses the attempt's
    assert _read(known) == _read(View(run, attempt.backend, principals, attempt.owners))


def test_a_state_is_not_told_when_list_and_get_show_a_document_differently() -> None:
    """Control: get shows one id with another document than list does, the export carrying
    none: the control's view cannot tell a row's document, and known() is None."""
    adapter, manifest = load_adapter("kbconform_reference.adapter:memory")
    principals = Principals.for_manifest(manifest)
    run = SimpleNamespace(manifest=manifest)
    plain = _seed(adapter, principals)
    some = sorted(plain.owners)[0]
    control = _seed(adapter, principals)
    control.backend.shown[some] = "another text"
    before = View(run, control.backend, principals, control.owners)
    assert View.known(before, control.exported, control.owners) is None
    honest = View(run, plain.backend, principals, plain.owners)
    assert View.known(honest, plain.exported, plain.owners) is not None
