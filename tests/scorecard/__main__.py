"""``python -m tests.scorecard`` (tests/scorecard/cli.py)."""

import sys

from tests.scorecard.cli import main

sys.exit(main())
