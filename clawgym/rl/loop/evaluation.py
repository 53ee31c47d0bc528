"""The loop's evaluation hooks: held-out evals with the served weights, and the final HF export."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from clawgym.core.policy import Policy, SamplingParams
from clawgym.rl.evaluate import eval_rows, play_tasks
from clawgym.rl.loop.config import LoopConfig
from clawgym.rl.rollout import EnvKwargs, EnvSpec
from clawgym.rl.types import Trajectory, write_jsonl

if TYPE_CHECKING:
    from clawgym.inference.hf import HFPolicy

logger = logging.getLogger(__name__)


async def evaluate_policy(env: EnvSpec, policy: Policy, config: LoopConfig, *, version: int,
                          task_ids: Sequence[str] | None, env_kwargs: EnvKwargs,
                          transcripts: Path | None = None, label: str = "eval") -> dict[str, float]:
    """Play every held-out task once (``eval_temperature``, fixed seeds) with the served weights; with
    ``transcripts``, append each episode's actions and next states there, so a score can be read as replies."""
    c = config
    sampling = SamplingParams(temperature=c.eval_temperature, top_p=1.0, max_tokens=c.max_tokens)
    trajectories = await play_tasks(env, policy, task_ids, limit=c.eval_episodes, env_kwargs=env_kwargs,
                                    sampling=sampling, num_workers=c.num_workers, seed=c.eval_seed,
                                    episode_timeout_s=c.episode_timeout_s)
    if transcripts is not None:
        write_jsonl(transcripts, [transcript_row(t, label=label, version=version) for t in trajectories])
    row = eval_rows(trajectories)["all"]
    return {
        "eval_reward": row["mean_reward"],
        "eval_success": row["success_rate"],
        "eval_episodes": float(row["episodes"]),
        "eval_errors": float(row["errors"]),
        "eval_version": float(version),
    }


def transcript_row(trajectory: Trajectory, *, label: str, version: int) -> dict:
    """One held-out episode as a reader wants it: the task, the outcome, and each action with its next state
    (the first turn's context holds the system prompt and the task; token ids and logprobs are left out)."""
    first = trajectory.turns[0].context if trajectory.turns else []
    return {
        "label": label, "version": version, "task_id": trajectory.task_id, "seed": trajectory.seed,
        "success": trajectory.success, "reward": trajectory.reward, "error": trajectory.error,
        "task": [m for m in first if m.get("role") == "user"],
        "turns": [{"action": turn.action, "next_state": turn.next_state} for turn in trajectory.turns],
    }


def export_hf(policy: HFPolicy, path: Path) -> Path:
    """The served model as a plain HF checkpoint (``clawgym eval --model PATH`` and any HF tool load it)."""
    policy.model.save_pretrained(path)
    policy.tokenizer.save_pretrained(path)
    return path
