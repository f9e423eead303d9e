"""``python -m fastnet get URL``: see fastnet/cli."""

import sys

from fastnet.cli import main

sys.exit(main())
