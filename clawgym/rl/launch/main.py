"""Run a launcher config (build, loop, close), or validate it and print its placement; a run's summary.

What ``clawgym train CONFIG [--check] [--set k=v]`` runs (its command body is :mod:`clawgym.commands.train`);
``clawgym serve --check`` prints the same plan.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from clawgym.rl.launch.build import build
from clawgym.rl.launch.placement import format_plan, plan
from clawgym.rl.launch.schema import RunConfig, load_config

if TYPE_CHECKING:
    from clawgym.rl.loop import LoopResult


def check_config(path: str | Path | None, overrides: Sequence[str] = ()) -> str:
    """Validate a config without GPUs or model weights and return its placement plan as text.

    Raises :class:`ConfigError` with what to change. ``clawgym serve --check`` can print the same text.
    """
    config = load_config(path, overrides)
    text = format_plan(plan(config))
    return f"config OK: method {config.method}, env {config.env.id}, judge {config.judge.type}\n{text}"


def prepare_host(config: RunConfig) -> None:
    """Before anything is built: torch's thread count and the allocator limits (:mod:`.host_memory`)."""
    from clawgym.rl.launch.host_memory import bound_heap_growth

    bound_heap_growth()
    if config.loop.torch_threads > 0:
        import torch

        torch.set_num_threads(config.loop.torch_threads)


async def run_config(config: RunConfig, on_step: Any = None) -> LoopResult:
    """Build and run one training run; returns the :class:`~clawgym.rl.loop.LoopResult`."""
    prepare_host(config)
    components = await asyncio.to_thread(build, config, on_step)
    try:
        return await components.loop.run()
    finally:
        await components.close()


def format_summary(result: LoopResult) -> str:
    lines = [f"trained {result.steps} steps (policy version {result.version}); output in {result.output_dir}"]
    if result.history:
        first, last = result.history[0], result.history[-1]
        lines.append(f"train reward (batch mean): first step {first['reward_mean']:.3f}, last step "
                     f"{last['reward_mean']:.3f}")
    if result.eval_before is not None or result.eval_after is not None:
        before = result.eval_before or {}
        after = result.eval_after or {}
        lines.append(
            f"held-out eval reward: {before.get('eval_reward', float('nan')):.3f} -> "
            f"{after.get('eval_reward', float('nan')):.3f}; "
            f"success: {before.get('eval_success', float('nan')):.3f} -> {after.get('eval_success', float('nan')):.3f}"
        )
    refused = {k: v for k, v in result.counters.items() if k.startswith("refused/")}
    if refused:
        lines.append("refused / dropped: " + ", ".join(f"{k[8:]}={int(v)}" for k, v in sorted(refused.items())))
    if result.curve_path is not None:
        lines.append(f"learning curve: {result.curve_path}")
    return "\n".join(lines)

