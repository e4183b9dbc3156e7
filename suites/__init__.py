"""The kbconform conformance suites: run them with ``pytest --kbconform-adapter=MODULE:FACTORY``."""
