"""Chroma as a store, under its earlier name: :mod:`kbconform_reference.namespace.stores.chroma`."""

from kbconform_reference.namespace.stores.chroma import (
    DEFAULT_HTTP_TIMEOUT,
    TIMEOUT_VARIABLE,
    ChromaStore,
    http_timeout,
)

__all__ = ["DEFAULT_HTTP_TIMEOUT", "TIMEOUT_VARIABLE", "ChromaStore", "http_timeout"]
