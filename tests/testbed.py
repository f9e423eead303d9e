"""``python tests/testbed.py start|stop|status``: the loopback testbed of real servers, started by hand.

The testbed itself is ``tests/support/testbed.py`` (the tests' session fixture ``testbed``); this is its
command line, kept at this path for developers, ``.ci/`` and the benchmarks.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the checkout: tests.support, fastnet
    from tests.support.testbed import main

    sys.exit(main())
