"""``clawgym rollout ID --policy scripted|openai|hf [--judge ...]``: N episodes, JSONL out, success rate.

``--policy scripted`` is the do-nothing baseline (it answers "I have finished the task." at once);
``openai`` talks to any OpenAI-compatible server (``--base-url``, ``--model``); ``hf`` loads a local
model (``--model smollm2-135m``, ``tiny-random`` or a checkpoint path). ``--judge`` judges every turn
with rules and/or an LLM judge (the policy itself unless ``--judge-model`` names another model).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from clawgym.commands.common import build_policy, check_env_args, check_judge_spec, parse_env_args
from clawgym.core.policy import SamplingParams


def add_parser(sub: argparse._SubParsersAction) -> None:
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
    rollout.set_defaults(fn=run_rollout_command)


def run_rollout_command(args: argparse.Namespace) -> int:
    env_kwargs = parse_env_args(args.env_arg)
    parts = check_judge_spec(args.judge) if args.judge else []
    if args.split:
        env_kwargs["split"] = args.split
    check_env_args(args.env_id, env_kwargs)
    policy = build_policy(args.policy, args.model, args.base_url, args.api_key)
    judges = None
    if parts:
        from clawgym.rl.judge import make_judges
        from clawgym.rl.methods import MODEL_JUDGES

        judge_policy = None
        if any(part in MODEL_JUDGES for part in parts):
            judge_policy = (build_policy(args.policy, args.judge_model, args.base_url, args.api_key)
                            if args.judge_model else policy)
        judges = make_judges(args.judge, judge_policy, m=args.judge_votes)
    from tqdm import tqdm

    from clawgym.rl.rollout import run_rollout_cli

    progress = tqdm(total=args.episodes, desc=f"rollout {args.env_id}", unit="ep")
    successes = 0

    def on_trajectory(trajectory: Any) -> None:
        nonlocal successes
        successes += int(trajectory.success)
        progress.update(1)
        progress.set_postfix(success=f"{successes / progress.n:.2f}")

    try:
        summary = run_rollout_cli(
            args.env_id, policy, args.episodes, out_path=args.out, judge=judges,
            group_size=args.group_size, num_workers=args.concurrency, executor=args.executor, seed=args.seed,
            env_kwargs=env_kwargs, on_trajectory=on_trajectory,
            sampling=SamplingParams(temperature=args.temperature, max_tokens=args.max_tokens),
        )
    finally:
        progress.close()
    print(json.dumps(summary, indent=2, default=str))
    print(f"success rate: {summary['success_rate']:.3f} over {summary['episodes']} episodes "
          f"({summary['errors']} failed); turns written to {summary['out_path']}")
    return 0 if summary["errors"] < summary["episodes"] else 1
