"""``python -m musculo_control`` runs the ``musculo`` command."""

import sys

from musculo_control.cli import main

sys.exit(main())
