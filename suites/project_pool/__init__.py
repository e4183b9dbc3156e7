"""The project-pool profile's own suite tests (the shared ones are in ../test_isolation.py)."""
