"""``python -m roofline``: the same as the ``roofline`` command."""

import sys

from .cli import main

sys.exit(main())
