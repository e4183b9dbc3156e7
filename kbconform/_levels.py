"""The conformance levels and the test statuses, shared by the plugin, the CLI and the report.

Standard library only: the pytest plugin imports this at load time.
"""

LEVELS = ("L0", "L1", "L2", "L3", "L4")
# A test's status only moves up this ranking over its setup, call and teardown.
STATUSES = ("disabled", "skip", "pass", "fail", "error")
RANK = {status: rank for rank, status in enumerate(STATUSES)}
