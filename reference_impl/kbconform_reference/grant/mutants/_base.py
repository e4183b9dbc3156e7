"""What the kb-grant mutants share: their record, and the base of those that open another
catalogue."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kbconform_reference import _mutant_base
from kbconform_reference.grant.catalogue import Catalogue
from kbconform_reference.grant.index import VectorIndex
from kbconform_reference.grant.service import KbGrantService


class Mutant(_mutant_base.Mutant[KbGrantService]):
    """A broken kb-grant backend, served by the package's ``by_name``."""

    __slots__ = ()
    served_by = "kbconform_reference.grant.mutants"


class OtherCatalogue(KbGrantService):
    """The service over a broken catalogue: ``catalogue_kind``, in place of the reference's."""

    catalogue_kind: type[Catalogue] = Catalogue

    def __init__(self, stores: Mapping[str, VectorIndex], models: Mapping[str, int], **options: Any) -> None:
        super().__init__(stores, models, **options)
        self.catalogue.close()
        self.catalogue = self.catalogue_kind()
