"""``python -m clawgym.demo`` (what ``make run`` runs): the same command as ``clawgym demo``."""

import sys

from clawgym.commands.demo import main

if __name__ == "__main__":
    sys.exit(main(prog="python -m clawgym.demo"))
