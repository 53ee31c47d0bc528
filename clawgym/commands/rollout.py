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

from tqdm import tqdm

from clawgym.commands.common import build_policy, check_env_args, check_judge_spec, parse_env_args
from clawgym.core.policy import SamplingParams


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

        judge_policy = None
        if any(part in ("prm", "hint", "rules+prm", "prob", "probhint") for part in parts):
            judge_policy = (build_policy(args.policy, args.judge_model, args.base_url, args.api_key)
                            if args.judge_model else policy)
        judges = make_judges(args.judge, judge_policy, m=args.judge_votes)
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
