"""``python -m musculo_control`` runs the ``musculo`` command."""

import sys

from musculo_control.cli import main

if __name__ == "__main__":  # imported (e.g. by the API reference's autosummary), it runs nothing
    sys.exit(main())
