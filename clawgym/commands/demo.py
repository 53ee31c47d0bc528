"""``clawgym demo [flags]`` and ``python -m clawgym.demo [flags]``: the default demo's flags, log setup and
report. What it runs (the teacher tasks, the training run, the held-out checks, the oracle tour) is
:mod:`clawgym.demo`."""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path
from typing import Sequence

from clawgym import demo


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "demo", help="the default demo (what `make run` runs); flags as `python -m clawgym.demo -h`", add_help=False)
    parser.add_argument("demo_args", nargs=argparse.REMAINDER)
    parser.set_defaults(fn=cmd_demo)


def cmd_demo(args: argparse.Namespace) -> int:
    return main(args.demo_args)


def main(argv: Sequence[str] | None = None, prog: str | None = None) -> int:
    parser = argparse.ArgumentParser(prog=prog, description=demo.__doc__.splitlines()[0])
    parser.add_argument("--oracle", action="store_true", help="the oracle tour of every env instead of training")
    parser.add_argument("--env", action="append", help="--oracle: only these ids (default: every registered id)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--config", default=str(demo.DEMO_CONFIG), help="launcher config of the training demo")
    parser.add_argument("--out", default="runs/demo",
                        help="output root; the run goes to OUT/seed<SEED> (or a fresh sibling)")
    parser.add_argument("--overwrite", action="store_true", help="replace an earlier run in OUT/seed<SEED>")
    parser.add_argument("--minutes", type=float, default=None, help="training time budget (default: the config's)")
    parser.add_argument("--steps", type=int, default=None, help="maximum train steps (default: the config's)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="config override")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    if args.oracle:
        return demo.oracle_main(args.env, args.seed)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s", datefmt="%H:%M:%S")
    for noisy in ("httpx", "matplotlib", "urllib3"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    return train_main(args)


def train_main(args: argparse.Namespace) -> int:
    """The training demo: a fresh run directory and task file, the config with the flags' overrides, the run,
    and the report (the loop's summary, the held-out checks before -> after, the curve, the wall time)."""
    import asyncio

    from clawgym.rl.launch import ConfigError, format_summary, load_config

    out = demo.run_directory(Path(args.out), args.seed, args.overwrite)
    tasks = demo.write_demo_tasks(out / "tasks.jsonl")
    overrides = [
        f"env.kwargs.tasks={tasks}",
        f"loop.output_dir={out}",
        f"loop.seed={args.seed}",
        f"policy.seed={args.seed}",
        "loop.resume=false",
    ]
    if args.minutes is not None:
        overrides.append(f"loop.max_minutes={args.minutes}")
    if args.steps is not None:
        overrides.append(f"loop.steps={args.steps}")
    try:
        config = load_config(args.config, overrides + list(args.set))
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    checks = demo.CHECKS
    print(
        f"clawgym demo: {config.policy.model} (LoRA) learns a simulated teacher's preferences for grading comments\n"
        f"  env {config.env.id} (persona teacher), method {config.method}, GRPO groups of {config.rollout.group_size}, "
        f"{config.loop.batch_groups} groups per step, at most {config.loop.steps} steps / "
        f"{config.loop.max_minutes} min\n"
        f"  serving, rollouts and training run at once; metrics in {out}\n"
        f"  held-out metric: the teacher's {len(checks)} checks ({', '.join(checks)}) on the first reply to unseen "
        f"teacher tasks, greedy, up to {config.rollout.max_tokens} tokens",
        flush=True,
    )
    note = demo.budget_note(config, minutes_given=args.minutes is not None)
    if note:
        print(note, flush=True)
    started = time.perf_counter()
    result, before, after = asyncio.run(demo.run_demo(config))
    wall = time.perf_counter() - started
    print("\n" + format_summary(result))
    print("\n" + demo.format_held_out(before, after))
    print("\n" + demo.format_replies(before, after))
    print(f"learning curve: {result.curve_path}")
    print(f"wall time {wall / 60:.1f} min for {result.steps} train steps")
    return 0
