"""Mini: a tiny package that exercises the Python parser."""

__version__ = "1.0.0"
