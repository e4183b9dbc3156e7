"""What the pytest plugin does, a module per job; its hooks are :mod:`kbconform.pytest_plugin`.

``_options`` (the options and the run they start), ``_collection`` (the suites collected,
parametrized, selected and declined; catalogue mode), ``_verdict`` (each test's result, held
honest), ``_session`` (the report and the terminal's summary), ``_fixtures`` (what a suite
test gets) and ``_stash`` (what they keep on pytest's objects). Importing any of them costs
pytest and the standard library only.
"""
