"""``python -m kbconform``: the command line (``kbconform``)."""

import sys

from kbconform.cli import main

sys.exit(main())
