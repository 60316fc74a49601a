"""``python -m trainhub.cli``."""

import sys

from trainhub.cli import main

sys.exit(main())
