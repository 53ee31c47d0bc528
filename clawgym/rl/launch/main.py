"""Run a launcher config (build, loop, close), or validate it and print its placement; a run's summary.

What ``clawgym train CONFIG [--check] [--set k=v]`` runs (its command body is :mod:`clawgym.commands.train`);
``clawgym serve --check`` prints the same plan.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from clawgym.rl.launch.build import build
from clawgym.rl.launch.loading import load_config
from clawgym.rl.launch.placement import format_plan, plan
from clawgym.rl.launch.schema import RunConfig

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
    """What a run did, in the order it did it: the warm start, RL's steps and groups, the held-out evals."""
    counters = result.counters
    lines = []
    if counters.get("warm_start_episodes"):
        lines.append(f"warm start: SFT on {int(counters.get('warm_start_kept', 0))} of "
                     f"{int(counters['warm_start_episodes'])} episodes ({int(counters.get('warm_start_tokens', 0))} "
                     f"assistant tokens), {int(counters.get('warm_start_steps', 0))} steps in "
                     f"{(counters.get('warm_start_collect_s', 0) + counters.get('warm_start_train_s', 0)) / 60:.1f} "
                     f"min, NLL {counters.get('warm_start_nll_first', float('nan')):.3f} -> "
                     f"{counters.get('warm_start_nll_last', float('nan')):.3f}")
    lines.append(f"trained {result.steps} steps (policy version {result.version}); output in {result.output_dir}")
    if result.history:
        first, last = result.history[0], result.history[-1]
        lines.append(f"train reward (batch mean): first step {first['reward_mean']:.3f}, last step "
                     f"{last['reward_mean']:.3f}")
    if counters.get("groups_played"):
        lines.append(f"groups: {int(counters['groups_played'])} played, "
                     f"{int(counters.get('groups_dropped_zero_variance', 0))} dropped (all rewards equal), "
                     f"{int(counters.get('groups_trained', 0))} trained; the draw cap was hit on "
                     f"{int(counters.get('draw_cap_hits', 0))} steps ({int(counters.get('steps_skipped', 0))} "
                     "skipped)")
    evals = [(name, e) for name, e in (("before", result.eval_before), ("warm start", result.eval_warm_start),
                                       ("after", result.eval_after)) if e is not None]
    if evals:
        lines.append("held-out success: " + " -> ".join(f"{name} {e['eval_success']:.3f}" for name, e in evals)
                     + "; reward: " + " -> ".join(f"{e['eval_reward']:.3f}" for _, e in evals))
    refused = {k: v for k, v in counters.items() if k.startswith("refused/")}
    if refused:
        lines.append("refused / dropped: " + ", ".join(f"{k[8:]}={int(v)}" for k, v in sorted(refused.items())))
    if result.curve_path is not None:
        lines.append(f"learning curve: {result.curve_path}")
    return "\n".join(lines)
