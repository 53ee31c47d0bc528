"""Turns -> trainable samples, for the loop (pure functions, tested directly).

Token in, token out: a turn without its own token ids and logprobs is refused (counted by reason),
never re-tokenised. ``outcome`` rewards GRPO-normalise each trajectory's env reward in its group;
``step_wise`` adds ``prm_coef`` x the turn's verdict (a turn no judge had an opinion on adds 0).
The verdict is recorded with the judge that gave it (``verdict_source``: ``rule:...``, ``prm``, ``prob``).
"""

from __future__ import annotations

import collections
import math
from typing import TYPE_CHECKING, Sequence

from clawgym.rl import losses
from clawgym.rl.buffer import SampleGroup
from clawgym.rl.judge import chosen_hint
from clawgym.rl.methods import NEEDS_HINT, USES_HINTS
from clawgym.rl.types import JSONObject, Sample, Trajectory, Turn, new_id

if TYPE_CHECKING:
    import torch


def refuse_reason(turn: Turn) -> str | None:
    """Why a turn cannot be trained on token-in/token-out, or None when it can."""
    if not turn.prompt_ids:
        return "no_prompt_ids"
    if not turn.response_ids:
        return "no_response_ids"
    if len(turn.response_logprobs) != len(turn.response_ids):
        return "logprobs_mismatch"
    if not all(math.isfinite(x) for x in turn.response_logprobs):
        return "nonfinite_logprobs"
    return None


def prm_score(turn: Turn) -> float | None:
    """The PRM / rule verdict on a turn (any judge but the hint judge), or None if none judged it."""
    for name, result in turn.judge.items():
        if name != "hint" and result.source != "error":
            return float(result.score)
    return None


def verdict_source(turn: Turn) -> str | None:
    """Which judge gave :func:`prm_score`'s verdict (``rule:...``, ``prm``, ``prob``), so nothing is mislabelled."""
    for name, result in turn.judge.items():
        if name != "hint" and result.source != "error":
            return result.source or name
    return None


def build_group(
    trajectories: Sequence[Trajectory],
    *,
    method: str,
    reward: str = "outcome",
    prm_coef: float = 1.0,
    version_offset: int = 0,
    drop_zero_advantage: bool = True,
    tools: list[JSONObject] | None = None,
) -> tuple[SampleGroup | None, collections.Counter]:
    """One GRPO group's trajectories -> a :class:`SampleGroup` (None if nothing is trainable) + refusals.

    ``reward``: ``outcome`` or ``step_wise`` (see the module docstring). Advantages are computed here,
    over the whole group, and stored on each Sample (the trainer uses ``Sample.advantage`` as given).
    """
    refused: collections.Counter = collections.Counter()
    if not trajectories:
        return None, refused
    group_id = trajectories[0].group_id or new_id()
    kept: list[Trajectory] = []
    for trajectory in trajectories:
        if trajectory.error is not None:
            refused["episode_error"] += 1
        elif not trajectory.turns:
            refused["no_turns"] += 1
        else:
            kept.append(trajectory)
    turns: list[tuple[int, Turn]] = []  # (trajectory index, turn)
    for index, trajectory in enumerate(kept):
        for turn in trajectory.turns:
            reason = refuse_reason(turn)
            if reason is not None:
                refused[reason] += 1
                continue
            turns.append((index, turn))
    if not turns:
        return None, refused

    outcome = [float(t.reward) for t in kept]
    prm = [prm_score(turn) for _, turn in turns]
    if reward == "step_wise":
        # a turn no judge had an opinion on (a rule that does not apply, a judge that is down) adds 0:
        # it still trains on the outcome, and the run goes on
        r = losses.step_wise_rewards(
            _floats([outcome[i] for i, _ in turns]), _floats([p or 0.0 for p in prm]), prm_coef
        )
        adv = losses.step_wise_advantages(r, [group_id] * len(turns), [turn.turn_index for _, turn in turns])
        per_turn_reward = r.tolist()
        per_turn_adv = adv.tolist()
    elif reward == "outcome":
        traj_adv = losses.grpo_advantages(_floats(outcome), [group_id] * len(kept)).tolist()
        per_turn_reward = [outcome[i] for i, _ in turns]
        per_turn_adv = [traj_adv[i] for i, _ in turns]
    else:
        raise ValueError(f"unknown reward {reward!r}: use 'outcome' or 'step_wise'")

    samples: list[Sample] = []
    for (index, turn), r_k, a_k, p_k in zip(turns, per_turn_reward, per_turn_adv, prm):
        hint = chosen_hint(turn.judge.get("hint")) if method in USES_HINTS else None
        if method in NEEDS_HINT and not hint:
            refused["no_hint"] += 1
            continue
        samples.append(
            Sample(
                prompt_ids=list(turn.prompt_ids),
                response_ids=list(turn.response_ids),
                old_logprobs=list(turn.response_logprobs),
                reward=float(r_k),
                advantage=float(a_k),
                hint=hint,
                hint_messages=list(turn.context) if hint else None,
                group_id=group_id,
                policy_version=int(turn.policy_version) + version_offset,
                turn_id=turn.turn_id,
                metadata={
                    "episode_id": turn.episode_id,
                    "turn_index": turn.turn_index,
                    "task_id": turn.task_id,
                    "verdict": p_k,
                    "verdict_source": verdict_source(turn),
                    **({"tools": tools} if tools and hint else {}),
                },
            )
        )
    if method == "grpo" and drop_zero_advantage and samples and all(s.advantage == 0 for s in samples):
        refused["zero_advantage_group"] += len(samples)
        samples = []
    if not samples:
        return None, refused
    judge_s = sum(
        max(0.0, t.timings.get("judged_at", 0.0) - t.timings.get("queued_at", 0.0))
        for tr in kept for t in tr.turns if "judged_at" in t.timings
    )
    group = SampleGroup(
        group_id=group_id,
        samples=samples,
        task_id=kept[0].task_id,
        rewards=outcome,
        successes=[bool(t.success) for t in kept],
        prm_scores=[p for p in prm if p is not None],
        judge_s=judge_s,
    )
    return group, refused


def _floats(values: Sequence[float]) -> torch.Tensor:
    import torch

    return torch.tensor([float(v) for v in values], dtype=torch.float32)


def apply_staleness(
    samples: Sequence[Sample], version: int, max_staleness: int, mode: str = "drop"
) -> tuple[list[Sample], list[Sample]]:
    """Keep samples at most ``max_staleness`` versions behind ``version``; returns (kept, dropped), in order.

    The one staleness filter: the loop's train step and the personal trainers of ``clawgym serve``
    (:meth:`~clawgym.personal.trainer.BackgroundTrainer.fresh`, ``drop`` mode) both use it.

    ``reweight`` keeps older samples with their loss weights scaled by ``max_staleness / staleness``
    (written into ``loss_mask``, which the trainer uses as per-token weights) instead of dropping them.
    """
    kept, dropped = [], []
    for sample in samples:
        staleness = version - sample.policy_version
        if staleness <= max_staleness:
            kept.append(sample)
        elif mode == "reweight":
            weight = max_staleness / staleness if staleness > 0 else 1.0
            sample.loss_mask = [m * weight for m in sample.loss_mask]
            sample.metadata["staleness_weight"] = weight
            kept.append(sample)
        else:
            dropped.append(sample)
    return kept, dropped
