"""``clawgym launchers``: the bundled launcher configs (``clawgym train NAME``, ``clawgym serve --config NAME``)."""

from __future__ import annotations

import argparse


def add_parser(sub: argparse._SubParsersAction) -> None:
    sub.add_parser("launchers", help="list the bundled launcher configs").set_defaults(fn=cmd_launchers)


def cmd_launchers(args: argparse.Namespace) -> int:
    from clawgym import launchers

    for name, path in launchers.bundled().items():
        print(f"{name:10s} {launchers.describe(path)}")
    print(f"\n(in {launchers.DIRECTORY}; `clawgym train NAME` or `clawgym train path/to/your.yaml`)")
    return 0
