"""``python -m sgmem``: the ``sgmem`` command (:mod:`sgmem.cli`)."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
