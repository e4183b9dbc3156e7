"""Mutants of the kb-grant reference, what the stores keep: documents stored once by their
content, tenant names cut at a column's width, tenant names looked up as ``LIKE`` patterns."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from kbconform_reference.grant.catalogue import Catalogue, Tenant
from kbconform_reference.grant.mutants._base import Mutant, OtherCatalogue
from kbconform_reference.grant.service import KbGrantService

#: The width of :class:`_CutTenants`' name column (a ``VARCHAR(64)`` that cuts silently).
NAME_WIDTH = 64


class DocumentsKeptByContent(KbGrantService):
    """A document's id is derived from its text and vector (content-addressed, so a document
    ingested twice is stored once): the same document ingested into another knowledge base on
    the same store replaces the stored one, and moves it to that knowledge base."""

    def _document_ids(self, documents: object, count: int) -> list[str]:
        assert isinstance(documents, Sequence)
        return [
            str(uuid.uuid5(uuid.NAMESPACE_URL, f"{document['text']}|{list(document['embedding'])!r}"))
            for document in documents
        ]


class _CutTenants(Catalogue):
    """Tenant names are kept in a column of :data:`NAME_WIDTH` characters that cuts longer
    names silently, and looked up by the value the column would hold."""

    def tenant(self, name: str) -> Tenant | None:
        return super().tenant(name[:NAME_WIDTH])

    def create_tenant(self, name: str) -> Tenant:
        return super().create_tenant(name[:NAME_WIDTH])


class TenantNamesCut(OtherCatalogue):
    """Tenant names are stored cut at 64 characters (:class:`_CutTenants`)."""

    catalogue_kind = _CutTenants


class _LikeTenants(Catalogue):
    """Tenants are looked up with ``LIKE`` (a search box's helper reused): the name is a
    pattern, so ``_`` and ``%`` in it match other names (case kept:
    ``case_sensitive_like``)."""

    def __init__(self) -> None:
        super().__init__()
        self._db.execute("PRAGMA case_sensitive_like = ON")

    def tenant(self, name: str) -> Tenant | None:
        found = self._db.execute("SELECT id, name FROM tenants WHERE name LIKE ? ORDER BY id", (name,))
        row = found.fetchone()
        return None if row is None else Tenant(int(row[0]), str(row[1]))


class TenantNamesMatchedLike(OtherCatalogue):
    """Callers and grantees are looked up as ``LIKE`` patterns (:class:`_LikeTenants`)."""

    catalogue_kind = _LikeTenants


MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "grant-documents-kept-by-content",
        DocumentsKeptByContent,
        "a document's id is derived from its text and vector: the same document in another "
        "knowledge base replaces the stored one",
        ("grant-13",),
    ),
    Mutant(
        "grant-tenant-names-cut",
        TenantNamesCut,
        "tenant names are cut at 64 characters: long look-alikes are one tenant",
        ("grant-13",),
    ),
    Mutant(
        "grant-tenant-names-matched-like",
        TenantNamesMatchedLike,
        "tenant names are looked up as LIKE patterns: '_' and '%' match other tenants",
        ("grant-13",),
    ),
)
