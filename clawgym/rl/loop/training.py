"""The training side's pieces: weight publication and the metrics row of one train step.

Staleness itself (drop or down-weight samples older than ``max_staleness`` versions) is
:func:`clawgym.rl.groups.apply_staleness`; samples carry the trainer version they were sampled at.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Mapping, Sequence

import numpy as np

from clawgym.rl.buffer import SampleGroup
from clawgym.rl.trainer import Trainer
from clawgym.rl.types import Sample

if TYPE_CHECKING:
    from clawgym.rl.trainer.base import UpdatablePolicy


async def publish_weights(trainer: Trainer, policy: UpdatablePolicy) -> int:
    """Export the trainer's weights (off the event loop) and load them into the served policy.

    Returns the version offset (trainer version - served version) that new samples are stamped with.
    Serving keeps answering while the export runs; the swap itself is the policy's (``update_weights``).
    """
    from clawgym.rl.trainer.transport import served_weights

    weights = await asyncio.to_thread(served_weights(trainer, policy))  # merged weights, or LoRA adapters alone
    policy_version = await policy.update_weights(weights)
    return int(trainer.version) - int(policy_version)


def _mean(values: Sequence[float]) -> float:
    return float(np.mean(values)) if values else float("nan")


def step_row(
    version: int,
    batch_version: int,
    groups: Sequence[SampleGroup],
    kept: Sequence[Sample],
    dropped: Sequence[Sample],
    metrics: Mapping[str, float],
    *,
    wall_s: float,
    wait_s: float,
    train_s: float,
    publish_s: float,
    rollout_s: float,
    rollout_blocked_s: float,
    rollout_tokens: int,
    buffer_groups: int,
    refused: int,
    groups_drawn: int = 0,
    groups_dropped_zero_variance: int = 0,
    groups_dropped_untrainable: int = 0,
    groups_trained: int = 0,
    draw_cap_hit: bool = False,
) -> dict[str, float]:
    """What one train step logs (metrics.jsonl, TensorBoard): rewards, verdicts, losses, throughput, time split.

    ``version`` is the trainer's after the step; staleness is counted against ``batch_version``, the
    version the batch was trained from. Dynamic sampling: ``groups_drawn`` groups finished since the
    previous step took its batch, of which ``groups_dropped_zero_variance`` had all-equal rewards and
    ``groups_dropped_untrainable`` nothing trainable; ``groups_trained`` of the batch's ``groups`` had a
    sample trained (not all stale); ``draw_cap_hit`` 1 when the batch was taken at the draw cap, and
    ``step_skipped`` 1 when it then held no group.
    """
    rewards = [r for g in groups for r in g.rewards]
    successes = [float(s) for g in groups for s in g.successes]
    prm = [p for g in groups for p in g.prm_scores]
    staleness = [batch_version - s.policy_version for s in kept]
    tokens = float(metrics.get("tokens", 0.0))
    per_s = (lambda n: n / wall_s) if wall_s > 0 else (lambda n: 0.0)
    return {
        "version": version,
        "reward_mean": _mean(rewards),
        "reward_std": float(np.std(rewards)) if rewards else float("nan"),
        "success_rate": _mean(successes),
        "samples": len(kept),
        "groups": len(groups),
        "samples_dropped_stale": len(dropped),
        "staleness_mean": float(np.mean(staleness)) if staleness else 0.0,
        "staleness_max": float(max(staleness)) if staleness else 0.0,
        "verdict_pos": _mean([p > 0 for p in prm]),
        "verdict_neg": _mean([p < 0 for p in prm]),
        "verdict_zero": _mean([p == 0 for p in prm]),
        "verdict_mean": _mean(prm),
        "kl": float(metrics.get("kl", 0.0)),
        "abs_logprob_diff": float(metrics.get("abs_logprob_diff", 0.0)),
        "clip_frac": float(metrics.get("clip_frac", 0.0)),
        "loss": float(metrics.get("loss", 0.0)),
        "grad_norm": float(metrics.get("grad_norm", 0.0)),
        "train_tokens": tokens,
        "samples_per_s": per_s(len(kept)),
        "train_tokens_per_s": per_s(tokens),
        "rollout_tokens_per_s": per_s(rollout_tokens),
        "response_tokens": sum(len(s.response_ids) for s in kept),
        "time_wait_s": wait_s,
        "time_train_s": train_s,
        "time_publish_s": publish_s,
        "time_rollout_s": rollout_s,
        "time_rollout_blocked_s": rollout_blocked_s,
        "time_judge_s": float(sum(g.judge_s for g in groups)),
        "time_step_s": wall_s,
        "buffer_groups": buffer_groups,
        "refused": refused,
        "groups_drawn": groups_drawn,
        "groups_dropped_zero_variance": groups_dropped_zero_variance,
        "groups_dropped_untrainable": groups_dropped_untrainable,
        "groups_trained": groups_trained,
        "draw_cap_hit": int(draw_cap_hit),
        "step_skipped": int(not groups),
    }
