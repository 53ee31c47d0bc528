"""The ``clawgym`` command: ``envs | play | rollout | eval | serve-policy | serve | train | launchers | models | demo``.

This module only dispatches: each subcommand's flags and body live in its module of :mod:`clawgym.commands`
(``add_parser`` and the function it sets as ``fn``). Heavy imports (torch, playwright, fastapi) happen inside
each command, so ``clawgym envs`` and ``clawgym play`` start fast on a machine without the ``train`` extra. Bad
input (an unknown id, a missing file, an invalid config) is a :class:`clawgym.errors.UsageError`: one line on
stderr, exit 2.
"""

from __future__ import annotations

import argparse
import logging
import sys
from typing import Sequence

from clawgym.commands import demo, envs, evaluate, launchers, models, play, rollout, serve, serve_policy, train
from clawgym.errors import UsageError

# in the order `clawgym --help` lists them
COMMANDS = (envs, play, rollout, evaluate, serve_policy, serve, train, launchers, models, demo)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="clawgym", description=__doc__.splitlines()[0])
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(levelname)s %(name)s: %(message)s")
    try:
        return int(args.fn(args) or 0)
    except UsageError as exc:
        print(f"clawgym {args.command}: error: {one_line(str(exc))}", file=sys.stderr)
        return 2


def one_line(message: str) -> str:
    """A multi-line error (a config with several problems) as one line."""
    return "; ".join(part.strip(" -") for part in message.splitlines() if part.strip(" -"))


if __name__ == "__main__":
    sys.exit(main())
