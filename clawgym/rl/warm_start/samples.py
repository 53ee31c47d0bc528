"""Warm-start episodes -> SFT samples: the assistant's tokens are trained, nothing else.

An episode whose every prompt begins with the previous prompt and reply (the chat template renders a
conversation the same way as it grows: true of Qwen's and of the ChatML fallback) becomes ONE sample: the
first prompt, then every later token, with the loss mask on the assistant's replies and off on what the
env added (tool results, observations) and the template's headers; the whole episode runs once per
forward. An episode whose prompts do not nest is one sample per turn, each the turn's own prompt and reply.
Either way the token ids are the episode's own (token in, token out: nothing is re-tokenized here).
"""

from __future__ import annotations

from typing import Sequence

from clawgym.rl.groups import refuse_reason
from clawgym.rl.types import Sample, Trajectory, Turn


def nests(turns: Sequence[Turn]) -> bool:
    """Whether each turn's prompt begins with the previous turn's prompt + reply."""
    for before, after in zip(turns, turns[1:]):
        head = before.prompt_ids + before.response_ids
        if after.prompt_ids[: len(head)] != head:
            return False
    return True


def sft_samples(trajectory: Trajectory) -> list[Sample]:
    """The SFT samples of one episode (see the module docstring); [] for a turn without its tokens."""
    turns = trajectory.turns
    if not turns or any(refuse_reason(turn) for turn in turns):
        return []
    metadata = {"task_id": trajectory.task_id, "episode_id": trajectory.episode_id,
                "source": str(trajectory.info.get("source", "policy"))}
    if not nests(turns):
        return [Sample(prompt_ids=list(t.prompt_ids), response_ids=list(t.response_ids),
                       old_logprobs=list(t.response_logprobs), reward=trajectory.reward, advantage=1.0,
                       group_id=trajectory.episode_id, policy_version=t.policy_version, turn_id=t.turn_id,
                       metadata={**metadata, "turns": 1}, off_policy=True)
                for t in turns]
    first = turns[0]
    response: list[int] = []
    logprobs: list[float] = []
    mask: list[int] = []
    for index, turn in enumerate(turns):
        if index:  # what the env and the template added between the previous reply and this one
            gap = turn.prompt_ids[len(first.prompt_ids) + len(response):]
            response += gap
            logprobs += [0.0] * len(gap)
            mask += [0] * len(gap)
        response += turn.response_ids
        logprobs += turn.response_logprobs
        mask += [1] * len(turn.response_ids)
    return [Sample(prompt_ids=list(first.prompt_ids), response_ids=response, old_logprobs=logprobs,
                   reward=trajectory.reward, loss_mask=mask, advantage=1.0, group_id=trajectory.episode_id,
                   policy_version=first.policy_version, turn_id=first.turn_id,
                   metadata={**metadata, "turns": len(turns)}, off_policy=True)]
