"""``python -m redactopt.datasets ...`` is ``redactopt datasets ...``."""

import sys

from redactopt.interface.cli import main

raise SystemExit(main(["datasets", *sys.argv[1:]]))
