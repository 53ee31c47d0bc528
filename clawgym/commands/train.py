"""``clawgym train CONFIG [--check] [--set k=v]``: run a launcher config with the async RL loop, or validate it
and print its placement plan. CONFIG is a bundled launcher name (``clawgym launchers``) or a YAML path; the run
itself is :func:`clawgym.rl.launch.run_config`. A :class:`~clawgym.rl.launch.ConfigError` reaches the CLI (one
line, exit code 2)."""

from __future__ import annotations

import argparse


def add_parser(sub: argparse._SubParsersAction) -> None:
    train = sub.add_parser("train", help="train with the async RL loop from a launcher config")
    train.add_argument("config", help="a bundled launcher name (`clawgym launchers`) or a YAML path")
    train.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    train.add_argument("--check", action="store_true", help="validate without GPUs and print the placement plan")
    train.set_defaults(fn=cmd_train)


def cmd_train(args: argparse.Namespace) -> int:
    import asyncio

    from clawgym import launchers
    from clawgym.rl.launch import check_config, format_summary, load_config, run_config

    path, overrides = str(launchers.resolve(args.config)), list(args.set or [])
    if args.check:
        print(check_config(path, overrides))
        return 0
    result = asyncio.run(run_config(load_config(path, overrides)))
    print(format_summary(result))
    return 0
