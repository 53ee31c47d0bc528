"""``clawgym eval ENV_ID --policy hf --model M [--model M2]``: mean reward and success on a split.

Greedy by default (``--temperature 0``), one episode per task with fixed seeds, so two models (before
and after training) are compared on the same episodes. ``--by persona`` groups by a final-info key.
The split is ``test`` by default: held-out tasks (OpenClawChat-v0's held-out problems never occur in its
train split, nor in the demo's). Envs that report named checks (OpenClawChat-v0's persona preferences)
get a second table with each check's pass rate.
"""

from __future__ import annotations

import argparse
from typing import Sequence

from clawgym.commands.common import build_policy, check_env_args, parse_env_args


def add_parser(sub: argparse._SubParsersAction) -> None:
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
    evaluate.set_defaults(fn=run_eval_command)


def run_eval_command(args: argparse.Namespace) -> int:
    from clawgym.rl.evaluate import evaluate, format_table

    env_kwargs = parse_env_args(args.env_arg)
    check_env_args(args.env_id, {**env_kwargs, "split": args.split} if args.split else env_kwargs)
    models: Sequence[str | None] = args.model or [None]
    for model in models:
        policy = build_policy(args.policy, model, args.base_url, args.api_key)
        rows = evaluate(args.env_id, policy, split=args.split or None, by=args.by, limit=args.limit,
                        env_kwargs=env_kwargs, max_tokens=args.max_tokens,
                        temperature=args.temperature, num_workers=args.concurrency)
        print(format_table(rows, f"{args.env_id} [{args.split or 'all'}] with {args.policy}:{model or 'default'}"))
        print()
    return 0
