"""``python -m kbconform.cli``: the command line."""

import sys

from kbconform.cli import main

sys.exit(main())
