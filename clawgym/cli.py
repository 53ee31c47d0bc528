"""The ``clawgym`` command: ``envs | play | rollout | eval | serve-policy | serve | train | launchers | models | demo``.

Heavy imports (torch, playwright, fastapi) happen inside each command, so ``clawgym envs`` and
``clawgym play`` start fast on a machine without the ``train`` extra. Bad input (an unknown id, a
missing file, an invalid config) is a :class:`clawgym.errors.UsageError`: one line on stderr, exit 2.
"""

from __future__ import annotations

import argparse
import logging
import sys
from typing import Sequence

import gymnasium as gym

import clawgym
from clawgym.commands import models
from clawgym.errors import UsageError
from clawgym.inference.catalog import DEFAULT_MODEL


# ------------------------------------------------------------------------------------ envs
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


# ------------------------------------------------------------------------------------ play
def cmd_play(args: argparse.Namespace, stdin=None, out=None) -> int:
    from clawgym.commands.play import run_play

    return run_play(args, stdin=stdin, out=out)


# ------------------------------------------------------------------------------------ rollout
def cmd_rollout(args: argparse.Namespace) -> int:
    from clawgym.commands.rollout import run_rollout_command

    return run_rollout_command(args)


def cmd_eval(args: argparse.Namespace) -> int:
    from clawgym.commands.evaluate import run_eval_command

    return run_eval_command(args)


def cmd_serve_policy(args: argparse.Namespace) -> int:
    from clawgym.inference.server import main_serve_policy

    return main_serve_policy(args)


def cmd_serve(args: argparse.Namespace) -> int:
    from clawgym import launchers
    from clawgym.serve.main import main_serve

    args.config = str(launchers.resolve(args.config))
    return main_serve(args)


def cmd_train(args: argparse.Namespace) -> int:
    from clawgym import launchers
    from clawgym.rl.launch import main_train

    args.config = str(launchers.resolve(args.config))
    return main_train(args)


def cmd_launchers(args: argparse.Namespace) -> int:
    from clawgym import launchers

    for name, path in launchers.bundled().items():
        print(f"{name:10s} {launchers.describe(path)}")
    print(f"\n(in {launchers.DIRECTORY}; `clawgym train NAME` or `clawgym train path/to/your.yaml`)")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from clawgym.demo import main as demo_main

    return demo_main(args.demo_args)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="clawgym", description=__doc__.splitlines()[0])
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", required=True)

    sub.add_parser("envs", help="list registered environments").set_defaults(fn=cmd_envs)

    play = sub.add_parser("play", help="play an environment in the terminal")
    play.add_argument("env_id")
    play.add_argument("--seed", type=int, default=None)
    play.add_argument("--task-id", default=None)
    play.add_argument("--env-arg", action="append", default=[], metavar="KEY=VALUE", help="gym.make keyword argument")
    play.set_defaults(fn=cmd_play)

    rollout = sub.add_parser("rollout", help="run N episodes with a policy and write trajectories as JSONL")
    rollout.add_argument("env_id")
    rollout.add_argument("--policy", default="scripted", help="scripted | openai | hf")
    rollout.add_argument("--base-url", default=None, help="OpenAI-compatible server (policy openai)")
    rollout.add_argument("--api-key", default=None)
    rollout.add_argument("--model", default=None, help="model name (openai) or path / alias (hf)")
    rollout.add_argument("-n", "--episodes", type=int, default=10)
    rollout.add_argument("--group-size", type=int, default=1, help="G rollouts per task (a GRPO group)")
    rollout.add_argument("--concurrency", type=int, default=4)
    rollout.add_argument("--seed", type=int, default=0)
    rollout.add_argument("--split", default=None)
    rollout.add_argument("--max-tokens", type=int, default=512)
    rollout.add_argument("--temperature", type=float, default=0.7)
    rollout.add_argument("--judge", default=None,
                         help="rules | prm | hint | rules+prm, comma-joined (judge model = "
                              "--judge-model or the policy)")
    rollout.add_argument("--judge-model", default=None)
    rollout.add_argument("--judge-votes", type=int, default=3)
    rollout.add_argument("--executor", default="local", help="local | asyncio | ray")
    rollout.add_argument("--out", default="runs/rollout.jsonl")
    rollout.add_argument("--env-arg", action="append", default=[], metavar="KEY=VALUE")
    rollout.set_defaults(fn=cmd_rollout)

    evaluate = sub.add_parser("eval", help="mean reward / success of a policy on every task of a split")
    evaluate.add_argument("env_id")
    evaluate.add_argument("--policy", default="hf", help="scripted | openai | hf")
    evaluate.add_argument("--model", action="append", help="repeat to compare models (e.g. before and after training)")
    evaluate.add_argument("--base-url", default=None)
    evaluate.add_argument("--api-key", default=None)
    evaluate.add_argument("--split", default="test")
    evaluate.add_argument("--by", default=None, help="group by this final-info key, e.g. persona")
    evaluate.add_argument("--limit", type=int, default=None, help="only the first N tasks of the split")
    evaluate.add_argument("--max-tokens", type=int, default=256)
    evaluate.add_argument("--temperature", type=float, default=0.0)
    evaluate.add_argument("--concurrency", type=int, default=4)
    evaluate.add_argument("--env-arg", action="append", default=[], metavar="KEY=VALUE")
    evaluate.set_defaults(fn=cmd_eval)

    serve_policy = sub.add_parser("serve-policy", help="OpenAI-compatible server over a policy")
    serve_policy.add_argument("--model", default=DEFAULT_MODEL)
    serve_policy.add_argument("--host", default="127.0.0.1")
    serve_policy.add_argument("--port", type=int, default=8000)
    serve_policy.add_argument("--api-key", default=None)
    serve_policy.add_argument("--device", default="cpu")
    serve_policy.set_defaults(fn=cmd_serve_policy)

    serve = sub.add_parser("serve", help="the personal-chat gateway (OpenClaw and any OpenAI client)")
    serve.add_argument("--config", default="chat", help="a bundled launcher name or a YAML path")
    serve.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    serve.add_argument("--check", action="store_true",
                       help="validate the config (serve section included) and print the plan")
    serve.set_defaults(fn=cmd_serve)

    train = sub.add_parser("train", help="train with the async RL loop from a launcher config")
    train.add_argument("config", help="a bundled launcher name (`clawgym launchers`) or a YAML path")
    train.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    train.add_argument("--check", action="store_true", help="validate without GPUs and print the placement plan")
    train.set_defaults(fn=cmd_train)

    sub.add_parser("launchers", help="list the bundled launcher configs").set_defaults(fn=cmd_launchers)
    models.add_parser(sub)

    demo = sub.add_parser("demo", help="the default demo (what `make run` runs); flags as `python -m clawgym.demo -h`",
                          add_help=False)
    demo.add_argument("demo_args", nargs=argparse.REMAINDER)
    demo.set_defaults(fn=cmd_demo)
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
