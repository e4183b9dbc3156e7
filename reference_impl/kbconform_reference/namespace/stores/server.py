"""The servers the tests and benchmarks start, under their earlier name: those of
:mod:`kbconform_reference.servers`, shared by every reference."""

from kbconform_reference.servers import ChildServer, ChromaServer, chroma_command, free_port, scratch_dir

__all__ = ["ChildServer", "ChromaServer", "chroma_command", "free_port", "scratch_dir"]
