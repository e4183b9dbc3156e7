"""The tenant-namespace reference's mutant set under its earlier name: ``MUTANTS`` and the
factories ``by_name`` of :mod:`kbconform_reference.namespace.mutants` (registered as
``reference``)."""

from kbconform_reference.namespace.mutants import MUTANTS, by_name

__all__ = ["MUTANTS", "by_name"]
