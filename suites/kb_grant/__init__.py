"""The kb-grant profile's own suite tests (the shared ones are in ../test_isolation.py)."""
