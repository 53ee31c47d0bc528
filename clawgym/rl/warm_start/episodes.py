"""The warm start's episodes: the setting's oracle played through the env, and the policy's own successes.

Token in, token out, as in RL. An oracle turn's prompt is the policy's own rendering of the context
(:func:`~clawgym.inference.chat_template.encode_prompt`) and its response is the oracle's action tokenized as
the model would write it (:func:`~clawgym.inference.chat_template.reply_ids`, read off the chat template);
the env is stepped with that action, so the tool results, observations and the template's rendering of
the tool calls are exactly what the policy sees when it acts itself. A turn whose tokens would not make the
env read the same action is refused (:class:`DemonstrationError`), never trained on.

The policy's own successes (rejection sampling, RAFT / expert iteration) are ordinary rollouts of the
rollout pool, kept when they succeed: their tokens and logprobs are the sampler's.
"""

from __future__ import annotations

import asyncio
import threading
from typing import TYPE_CHECKING, Sequence

from clawgym.core.env import recorded_action
from clawgym.core.messages import Message, parse_action, text_of
from clawgym.core.policy import Policy, SamplingParams
from clawgym.rl.rollout import EnvKwargs, EnvSpec, RolloutPool, make_groups
from clawgym.rl.rollout.local import describe, make_env
from clawgym.rl.types import JSONObject, Trajectory, Turn, new_id

if TYPE_CHECKING:
    import gymnasium
    from transformers import PreTrainedTokenizerBase

ORACLE_VERSION = -1  # the policy_version of a demonstration turn: no weights sampled it


class DemonstrationError(RuntimeError):
    """The oracle's action cannot be written by the model as the env would read it."""


def _same_action(text_action: Message, oracle_action: Message) -> bool:
    """Whether the model's text of a reply makes the env read the oracle's action: the same calls, same words."""
    def calls(message: Message) -> list[tuple[str, dict[str, object]]]:
        return [(call.name, call.arguments) for call in parse_action(message)[1]]

    return (calls(text_action) == calls(oracle_action)
            and (text_of(text_action) or "").strip() == (text_of(oracle_action) or "").strip())


class TokenizerLock:
    """One tokenizer shared by the demonstration threads (a fast tokenizer is not safe to call concurrently)."""

    def __init__(self, tokenizer: PreTrainedTokenizerBase) -> None:
        self.tokenizer = tokenizer
        self._lock = threading.Lock()

    def turn_ids(self, context: list[Message], tools: list[JSONObject] | None,
                 reply: Message) -> tuple[list[int], list[int], str]:
        """(prompt ids, reply ids ending with the end-of-turn token, the reply's text as the model writes it)."""
        from clawgym.inference.chat_template import encode_prompt, reply_ids

        with self._lock:
            prompt = encode_prompt(self.tokenizer, context, tools)
            response = reply_ids(self.tokenizer, context, tools, reply)
            text = self.tokenizer.decode(response[:-1], skip_special_tokens=False)
        return prompt, response, text


def play_demonstration(env: gymnasium.Env, tokens: TokenizerLock, seed: int, task_id: str | None, env_id: str = "",
                       episode_id: str | None = None) -> Trajectory:
    """One episode of the env's oracle (``env.unwrapped.oracle_action()``), turn by turn, as token records."""
    episode_id = episode_id or new_id()
    observation, reset_info = env.reset(seed=seed, options={"task_id": task_id} if task_id is not None else None)
    trajectory = Trajectory(episode_id, env_id, str(reset_info.get("task_id", task_id or "")), seed=seed)
    tools = list(getattr(env.unwrapped, "tools", None) or []) or None
    context: list[Message] = list(observation)
    for turn_index in range(10_000):  # the env's max_turns ends it long before
        action = env.unwrapped.oracle_action()
        message = recorded_action(action, reset_info)
        prompt_ids, response_ids, text = tokens.turn_ids(context, tools, message)
        if not _same_action(recorded_action(text, reset_info), message):
            raise DemonstrationError(f"turn {turn_index} of task {trajectory.task_id!r}: the template's tokens of the "
                                     f"oracle's action read back as another action: {text[:200]!r}")
        observation, reward, terminated, truncated, info = env.step(action)
        trajectory.turns.append(Turn(
            episode_id=episode_id, turn_index=turn_index, context=context, action=message,
            next_state=list(observation), prompt_ids=prompt_ids, response_ids=response_ids,
            response_logprobs=[0.0] * len(response_ids),  # no sampler: the SFT loss never reads them
            policy_version=ORACLE_VERSION, env_id=env_id, task_id=trajectory.task_id,
            env_reward=float(reward), terminated=bool(terminated), truncated=bool(truncated),
            info={**info, "source": "oracle"}))
        trajectory.reward += float(reward)
        context = context + [message] + list(observation)
        if terminated or truncated:
            trajectory.success = bool(info.get("success", False))
            trajectory.info = {**info, "source": "oracle"}
            return trajectory
    raise DemonstrationError(f"the oracle of task {trajectory.task_id!r} did not end its episode")


def _play_many(env_spec: EnvSpec, env_kwargs: EnvKwargs, tokens: TokenizerLock,
               episodes: Sequence[tuple[str | None, int]], env_id: str) -> list[Trajectory]:
    """Play ``episodes`` ((task id, seed) each) on one env, in this thread; a failed one is recorded, not fatal."""
    env = make_env(env_spec, env_kwargs)
    out = []
    try:
        for task_id, seed in episodes:
            try:
                out.append(play_demonstration(env, tokens, seed, task_id, env_id))
            except Exception as exc:  # an oracle that cannot act (no script for a task) or a refused turn
                out.append(Trajectory(new_id(), env_id, str(task_id or ""), seed=seed, error=describe(exc)))
    finally:
        env.close()
    return out


async def collect_demonstrations(env_spec: EnvSpec, env_kwargs: EnvKwargs, tokenizer: PreTrainedTokenizerBase,
                                 episodes: Sequence[tuple[str | None, int]], workers: int = 2) -> list[Trajectory]:
    """The oracle's episodes, ``workers`` envs at once (each env created, played and closed on its own thread)."""
    tokens = TokenizerLock(tokenizer)
    env_id = env_spec if isinstance(env_spec, str) else ""
    shares = [list(range(i, len(episodes), workers)) for i in range(min(max(1, workers), len(episodes)))]
    played = await asyncio.gather(*(asyncio.to_thread(_play_many, env_spec, env_kwargs, tokens,
                                                      [episodes[i] for i in share], env_id) for share in shares))
    ordered: list[Trajectory | None] = [None] * len(episodes)  # back in the order asked
    for share, results in zip(shares, played):
        for index, trajectory in zip(share, results):
            ordered[index] = trajectory
    return [t for t in ordered if t is not None]


async def collect_successes(env_spec: EnvSpec, env_kwargs: EnvKwargs, policy: Policy,
                            task_ids: Sequence[str], attempts: int, sampling: SamplingParams, seed: int,
                            workers: int, executor: str = "local",
                            episode_timeout_s: float | None = None) -> tuple[list[Trajectory], int]:
    """The policy's own episodes on ``task_ids`` (``attempts`` each, sampled), kept when they succeed.

    Returns (the successful trajectories, how many episodes were played)."""
    pool = RolloutPool(env_spec, policy, num_workers=workers, executor=executor, env_kwargs=env_kwargs,
                       sampling=sampling, episode_timeout_s=episode_timeout_s)
    await pool.start()
    try:
        trajectories = await pool.run(make_groups(list(task_ids), attempts, seed=seed))
    finally:
        await pool.close()
    return [t for t in trajectories if t.error is None and t.success], len(trajectories)
