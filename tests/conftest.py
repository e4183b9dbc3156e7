"""Shared test configuration.

Hypothesis profiles: ``default`` (fit for CI) and ``thorough`` (nightly); choose one with
``pytest --hypothesis-profile=thorough``. A failing example prints its seed and a
``@reproduce_failure`` line.
"""

from hypothesis import settings

settings.register_profile("default", max_examples=100, deadline=None, print_blob=True)
settings.register_profile("thorough", max_examples=2000, deadline=None, print_blob=True)
settings.load_profile("default")

# A plug-in profile's suite tests run only through the plugin (tests/test_plugin_profile.py).
collect_ignore_glob = ["notes_profile/suite/*"]
