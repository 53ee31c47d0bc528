"""What an episode is (its spec, its GRPO group, its sampling seeds) and how one is played.

The episode loop (reset -> (policy -> step)*) runs in the driver's event loop; only ``reset``/``step``
go to the executor, so the policy and its weights stay in one process.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Sequence, Union

from clawgym.core.env import recorded_action
from clawgym.core.messages import Message
from clawgym.core.policy import Generation, Policy, SamplingParams
from clawgym.rl.types import Action, Trajectory, Turn, new_id

if TYPE_CHECKING:
    import gymnasium

EnvSpec = Union[str, Callable[..., "gymnasium.Env"]]  # a gym id ("clawgym/ToolCall-v0", "module:Id") or a factory
EnvKwargs = dict[str, object]  # keywords for gym.make or the env factory, passed through
ResetOptions = dict[str, object]  # ``reset(options=...)``: ``{"task_id": ...}`` and what a setting adds
TurnSink = Callable[[Turn], Union[Awaitable[None], None]]
TrajectorySink = Callable[[Trajectory], Union[Awaitable[None], None]]


@dataclass(frozen=True)
class EpisodeSpec:
    """One episode to play. ``index`` orders results; ``task_id=None`` lets the env pick by seed."""

    index: int
    seed: int
    task_id: str | None = None
    group_id: str = ""
    episode_id: str = ""


def make_groups(task_ids: Sequence[str | None], group_size: int = 1, seed: int = 0) -> list[EpisodeSpec]:
    """G specs per task (a GRPO group): same ``task_id``, distinct seeds ``seed, seed+1, ...``.

    Group ids are fresh per call so groups from different calls never merge in a trainer.
    """
    if group_size < 1:
        raise ValueError("group_size must be at least 1")
    specs = []
    for g, task_id in enumerate(task_ids):
        group_id = new_id()
        for k in range(group_size):
            index = g * group_size + k
            specs.append(EpisodeSpec(index, seed + index, task_id, group_id, f"{group_id}-{k}"))
    return specs


def sampling_seed(episode_seed: int, turn_index: int) -> int:
    """The sampling seed of one policy call: fixed by the episode seed and the turn, never global."""
    return (episode_seed * 1_000_003 + turn_index) % (2**31 - 1)


async def play_episode(
    policy: Policy,
    executor: Any,
    slot: int,
    spec: EpisodeSpec,
    trajectory: Trajectory,
    sampling: SamplingParams,
    emit: Callable[[Turn], Awaitable[None]],
) -> None:
    """Play one episode on ``executor``'s env ``slot`` into ``trajectory``; ``emit`` gets every Turn.

    Errors propagate: the pool turns them into ``trajectory.error`` and rebuilds the env.
    """
    options = {"task_id": spec.task_id} if spec.task_id is not None else None
    observation, reset_info, tools = await executor.reset(slot, spec.seed, options)
    trajectory.task_id = str(reset_info.get("task_id", trajectory.task_id))
    context: list[Message] = list(observation)
    turn_index = 0
    while True:
        params = dataclasses.replace(sampling, seed=sampling_seed(spec.seed, turn_index))
        t0 = time.perf_counter()
        # a fresh list of shallow copies: cheap (a deep copy was the pool's main cost), and a policy
        # that edits top-level message fields cannot change the recorded turns
        generation: Generation = await policy.generate([dict(m) for m in context], tools, params)
        t1 = time.perf_counter()
        action: Action = generation.message or generation.text
        message = recorded_action(action, reset_info)  # as the env reads it (a bare JSON call is a call)
        observation, reward, terminated, truncated, info = await executor.step(slot, action)
        t2 = time.perf_counter()
        turn = Turn(
            episode_id=trajectory.episode_id,
            turn_index=turn_index,
            context=context,
            action=message,
            next_state=list(observation),
            prompt_ids=list(generation.prompt_ids),
            response_ids=list(generation.response_ids),
            response_logprobs=list(generation.response_logprobs),
            policy_version=generation.policy_version,
            env_id=trajectory.env_id,
            task_id=trajectory.task_id,
            group_id=spec.group_id,
            env_reward=reward,
            terminated=terminated,
            truncated=truncated,
            info=info,
            timings={"generate_s": t1 - t0, "step_s": t2 - t1, "ready_at": time.time()},
        )
        trajectory.turns.append(turn)
        trajectory.reward += reward
        await emit(turn)
        context = context + [message] + list(observation)
        turn_index += 1
        if terminated or truncated:
            trajectory.success = bool(info.get("success", False))
            trajectory.info = dict(info)
            return
