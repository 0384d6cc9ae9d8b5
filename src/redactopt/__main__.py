"""``python -m redactopt`` runs the command line."""

from redactopt.interface.cli import main

raise SystemExit(main())
