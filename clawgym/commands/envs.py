"""``clawgym envs``: every registered environment with its tools, its number of tasks and its splits."""

from __future__ import annotations

import argparse

import gymnasium as gym

import clawgym


def add_parser(sub: argparse._SubParsersAction) -> None:
    sub.add_parser("envs", help="list registered environments").set_defaults(fn=cmd_envs)


def cmd_envs(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="clawgym environments")
    for column in ("id", "tools", "tasks", "splits"):
        table.add_column(column)
    for env_id in sorted(clawgym.ENVS):
        env = gym.make(env_id)
        try:
            inner = env.unwrapped
            tools = ", ".join(t["function"]["name"] for t in inner.tools)
            table.add_row(env_id, tools, str(len(inner.task_set)), ", ".join(inner.task_set.splits))
        finally:
            env.close()
    Console().print(table)
    return 0
