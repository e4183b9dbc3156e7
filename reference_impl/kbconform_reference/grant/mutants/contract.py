"""Mutants of the kb-grant reference, the call contract, the catalogue's pages
(schemas/pages.md) and identifiers: a valid prefix of an ingest stored, a limit and knowledge
bases unchecked, pages unscoped or a partial one dropped, tenant names folded, a document's id
honoured; and the smoke, which authorizes nothing."""

from __future__ import annotations

import unicodedata
import uuid
from collections.abc import Mapping, Sequence

from kbconform.adapter import GrantHit
from kbconform.errors import NotFound
from kbconform_reference._arguments import describe
from kbconform_reference.grant.catalogue import _COLUMNS, _READABLE, Catalogue, KbRow, Tenant, _row
from kbconform_reference.grant.mutants._base import Mutant, OtherCatalogue
from kbconform_reference.grant.service import KbGrantService, _name


class IngestStoresValidPrefix(KbGrantService):
    """An ingest checks and stores one document at a time: the documents before a malformed one
    are stored, then the call fails."""

    def ingest(self, caller: object, kb: object, documents: object, /) -> list[str]:
        if isinstance(documents, Sequence) and not isinstance(documents, (str, bytes)) and len(documents) > 1:
            ids: list[str] = []
            for document in documents:
                ids += super().ingest(caller, kb, [document])
            return ids
        return super().ingest(caller, kb, documents)


class LimitAndKbsUnchecked(KbGrantService):
    """A search's limit is passed through ``int()`` and its knowledge bases deduplicated
    silently: a bool, a float, 0 or 1001 and a repeated id are answered, not refused."""

    def search(self, caller: object, kbs: object, embedding: object, limit: object, /) -> list[GrantHit]:
        if isinstance(kbs, list) and all(type(kb) is str for kb in kbs):
            kbs = list(dict.fromkeys(kbs))
        try:
            count = min(max(int(limit), 1), 1000)  # type: ignore[call-overload]  # the bug: whatever int() takes
        except (TypeError, ValueError):
            count = 10
        return super().search(caller, kbs, embedding, count)


class NoAuthorizationAnywhere(KbGrantService):
    """Smoke: every known tenant reads and administers every knowledge base."""

    def _readable(self, tenant: Tenant, kb: object) -> KbRow:
        row = self.catalogue.kb(_name(kb, "kb"))
        if row is None:
            raise NotFound(describe(kb))
        return row

    def _authorize(self, tenant: Tenant, names: Sequence[str]) -> list[KbRow]:
        return [self._readable(tenant, name) for name in names]

    def _administered(self, tenant: Tenant, kb: object, operation: str) -> KbRow:
        return self._readable(tenant, kb)


#: The page the paged catalogue reads below read knowledge bases in.
CATALOGUE_PAGE = 100


class _ListPagesUnscoped(Catalogue):
    """Lists a tenant's knowledge bases a page of :data:`CATALOGUE_PAGE` at a time; the pages
    after the first are read without the tenant's access (every live knowledge base)."""

    def readable_by(self, tenant: int) -> list[KbRow]:
        rows: list[KbRow] = []
        while True:
            access = f"AND {_READABLE} " if not rows else ""  # the bug: page one only
            page = self._db.execute(
                f"SELECT {_COLUMNS} FROM kbs k JOIN tenants t ON t.id = k.owner "
                f"WHERE k.state = 'live' {access}ORDER BY k.id LIMIT :size OFFSET :skip",
                {"tenant": tenant, "size": CATALOGUE_PAGE, "skip": len(rows)},
            ).fetchall()
            rows += [_row(row) for row in page]
            if len(page) < CATALOGUE_PAGE:
                return rows


class ListPagesUnscoped(OtherCatalogue):
    """``list_kbs`` reads the catalogue in pages; the pages after the first ignore access."""

    catalogue_kind = _ListPagesUnscoped


class _LookupDropsPartialPage(Catalogue):
    """Looks named knowledge bases up in ``max(1, n // CATALOGUE_PAGE)`` full pages: the names
    on the last, partial page are never looked up, so they read as unknown."""

    def readable(self, tenant: int, externals: Sequence[str]) -> dict[str, KbRow]:
        pages = max(1, len(externals) // CATALOGUE_PAGE)  # the bug: floor division
        found: dict[str, KbRow] = {}
        for start in range(0, pages * CATALOGUE_PAGE, CATALOGUE_PAGE):
            found |= super().readable(tenant, externals[start : start + CATALOGUE_PAGE])
        return found


class LookupDropsPartialPage(OtherCatalogue):
    """A search's knowledge bases are looked up in full pages only: past a page, the last ones
    are unknown and the whole search is refused."""

    catalogue_kind = _LookupDropsPartialPage


def _folded(name: str) -> str:
    """A name as an accent- and case-insensitive collation that pads spaces compares it."""
    decomposed = unicodedata.normalize("NFKD", name)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold().rstrip(" ")


class _FoldedTenants(Catalogue):
    """Tenant names compare as a case- and accent-insensitive collation that pads spaces (a
    database's default collation): ``Acme`` is ``acme``, and ``beta `` is ``beta``."""

    def tenant(self, name: str) -> Tenant | None:
        rows = self._db.execute("SELECT id, name FROM tenants ORDER BY id").fetchall()
        return next((Tenant(int(i), str(n)) for i, n in rows if _folded(str(n)) == _folded(name)), None)


class TenantNamesFolded(OtherCatalogue):
    """The catalogue's tenant names compare folded (:class:`_FoldedTenants`): a second tenant
    whose name folds to a first one's cannot be created, and a caller or a grantee named so is
    that first tenant."""

    catalogue_kind = _FoldedTenants


class DocumentIdHonoured(KbGrantService):
    """An ingested document that carries an ``id`` is stored under it (an upsert, as a batch
    import keeps its ids): a document naming another's id overwrites it, wherever it is."""

    def _document_ids(self, documents: object, count: int) -> list[str]:
        assert isinstance(documents, Sequence)
        claimed = [d.get("id") for d in documents if isinstance(d, Mapping)]
        return [i if isinstance(i, str) and i else str(uuid.uuid4()) for i in claimed]


MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "grant-ingest-stores-valid-prefix",
        IngestStoresValidPrefix,
        "an ingest stores documents one at a time: those before a malformed one stay",
        ("grant-01",),
    ),
    Mutant(
        "grant-limit-and-kbs-unchecked",
        LimitAndKbsUnchecked,
        "a search's limit goes through int() and repeated knowledge bases are deduplicated silently",
        ("grant-01", "grant-14"),
    ),
    Mutant(
        "grant-list-pages-unscoped",
        ListPagesUnscoped,
        "list_kbs reads the catalogue in pages; the pages after the first ignore access",
        ("grant-15",),
    ),
    Mutant(
        "grant-lookup-drops-partial-page",
        LookupDropsPartialPage,
        "a search's knowledge bases are looked up in full pages only: the last partial page is unknown",
        ("grant-15",),
    ),
    Mutant(
        "grant-tenant-names-folded",
        TenantNamesFolded,
        "tenant names (callers and grantees) compare case- and accent-insensitively, trailing spaces ignored",
        ("grant-13", "grant-14"),
    ),
    Mutant(
        "grant-document-id-honoured",
        DocumentIdHonoured,
        "an ingested document's own id key is its id: a document naming another's id overwrites it",
        ("grant-13", "grant-14"),
    ),
    Mutant(
        "grant-no-authorization-anywhere",
        NoAuthorizationAnywhere,
        "smoke: every known tenant reads and administers every knowledge base",
        (),
        smoke=True,
    ),
)
