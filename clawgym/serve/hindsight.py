"""Hindsight GRPO: every real chat turn becomes a GRPO group with variance.

A person's verdict says whether *one* reply pleased them; a scripted or busy person complains about
almost every reply, so the verdicts barely vary and, after any baseline, teach nothing. Here, once a
turn is judged (and its correction has become a wish, :mod:`clawgym.serve.wish_memory`), the served
policy samples ``k - 1`` more replies to the *same prompt tokens* at the trainer's temperature, and the
rubric judge (:class:`~clawgym.rl.judge.rubric.RubricJudge`) scores all ``k`` replies against the
person's remembered wishes. The rewards are the fraction of wishes met; the real reply's reward also
counts the person's own verdict (``verdict_weight``: ``(1 - w) * rubric + w * (verdict + 1) / 2``).
GRPO normalises the rewards within the group, so a reply that meets more wishes than its siblings is
pushed up even when every one of them would have drawn a complaint.

Nothing is trained on noise: a turn whose person has no checkable wish, or whose real reply the rubric
cannot decide, makes no group (``refused``: ``no_wishes`` / ``unscorable``); a sibling the rubric cannot
decide is left out; a group whose rewards all agree carries no advantage and is dropped
(``zero_advantage_group``). The siblings are decoded by the served policy, batched with the people's
requests (serving never waits for a group: the groups are built by a background task, one turn at a
time, and a turn arriving while ``max_queued`` wait is refused as ``hindsight_busy``).

With ``method: hybrid`` (``teacher_hint``) every member of a group also carries the OPD term: the
teacher reads the person's remembered wishes as its hint, so the trainer adds
``w_opd * (log pi_teacher - log pi_old)`` per token to the group's advantage. The rubric's reward holds
what the replies already do; the teacher's tokens show what none of the siblings tried (a word of
praise the base model never samples gives a group no variance on "make it friendlier").
"""

from __future__ import annotations

import asyncio
import collections
from dataclasses import dataclass
from typing import Any, Callable

import torch

from clawgym.core.messages import text_of
from clawgym.core.policy import SamplingParams
from clawgym.rl import losses
from clawgym.rl.judge.rubric import RubricJudge, reward_of
from clawgym.rl.types import Sample, Turn
from clawgym.serve.protocol import conversation
from clawgym.serve.teacher_hint import hint_with_wishes, teacher_context


@dataclass
class HindsightSettings:
    """``k``: replies per group, the person's included (>= 2); ``verdict_weight``: how much of the real
    reply's reward is the person's verdict; ``max_tokens``: the siblings' length limit when the turn
    did not record its own (a sibling gets the real reply's limit); ``max_queued``:
    judged turns waiting for their group before new ones are refused."""

    k: int = 4
    verdict_weight: float = 0.5
    max_tokens: int = 512
    max_queued: int = 8

    def __post_init__(self) -> None:
        if self.k < 2:
            raise ValueError(f"hindsight groups need k >= 2 replies (the person's and a sibling), got {self.k}")
        if not 0.0 <= self.verdict_weight <= 1.0:
            raise ValueError(f"verdict_weight must be within [0, 1], got {self.verdict_weight}")
        if self.max_tokens < 1 or self.max_queued < 1:
            raise ValueError("max_tokens and max_queued must be >= 1")


def user_of(turn: Turn) -> str:
    return str(turn.info.get("user") or "default")


def real_reward(rubric: float, verdict: float | None, weight: float) -> float:
    """The person's reply: its rubric score, mixed with their verdict (+1 -> 1, -1 -> 0) when they gave one."""
    if verdict is None or not weight:
        return rubric
    return (1.0 - weight) * rubric + weight * (float(verdict) + 1.0) / 2.0


class HindsightGroups:
    """Builds one turn's group: ``await groups.build(turn, verdict)`` -> (samples, None) or (None, why not).

    ``policy``: the served policy (``generate_ids``); ``rubric``: a :class:`RubricJudge` whose
    ``wishes_of`` reads the wish memory (set by the server once the memory exists).
    """

    def __init__(self, policy: Any, rubric: RubricJudge, settings: HindsightSettings, temperature: float,
                 teacher_hint: bool = False) -> None:
        self.policy = policy
        self.rubric = rubric
        self.settings = settings
        self.temperature = float(temperature)
        self.teacher_hint = teacher_hint  # hybrid: every member also distils the teacher that reads the wishes
        self.stats: collections.Counter[str] = collections.Counter()
        # (user, share of wishes the served reply met): the dashboard
        self.on_scored: Callable[[str, float], Any] | None = None

    @property
    def wishes_of(self) -> Callable[[str], list[str]] | None:
        return self.rubric.wishes_of

    async def build(self, turn: Turn, verdict: float | None) -> tuple[list[Sample] | None, str | None]:
        wishes = list(self.wishes_of(user_of(turn))) if self.wishes_of is not None else []
        if not wishes:
            return None, "no_wishes"
        limit = (turn.info.get("sampling") or {}).get("max_tokens") or self.settings.max_tokens
        sampling = SamplingParams(temperature=self.temperature, max_tokens=int(limit))
        siblings = await asyncio.gather(*(self.policy.generate_ids(list(turn.prompt_ids), sampling)
                                          for _ in range(self.settings.k - 1)))
        self.stats["siblings"] += len(siblings)
        context = conversation(list(turn.context))
        replies = [text_of(turn.action)] + [g.text for g in siblings]
        checks = await asyncio.to_thread(self.rubric.check_many, [(wishes, context, r) for r in replies])
        rubric = [reward_of(c) for c in checks]
        if rubric[0] is None:
            return None, "unscorable"
        if self.on_scored is not None:
            self.on_scored(user_of(turn), rubric[0])
        members = [(real_reward(rubric[0], verdict, self.settings.verdict_weight), _real_sample(turn))]
        for generation, reward in zip(siblings, rubric[1:]):
            if reward is None or not generation.response_ids:
                self.stats["sibling_unscorable"] += 1
                continue
            members.append((reward, _sibling_sample(turn, generation)))
        rewards = torch.tensor([r for r, _ in members])
        advantages = losses.grpo_advantages(rewards, [turn.turn_id] * len(members))
        if not bool(advantages.abs().gt(0).any()):
            return None, "zero_advantage_group"
        # hybrid: one hint for the whole group, the teacher reading every remembered wish
        hint = hint_with_wishes(None, wishes) if self.teacher_hint else None
        extra = teacher_context(turn) if hint else {}
        samples = []
        for (reward, sample), advantage in zip(members, advantages.tolist()):
            sample.reward, sample.advantage = float(reward), float(advantage)
            if hint:
                sample.hint, sample.hint_messages = hint, list(turn.context)
                sample.metadata.update(extra)
            samples.append(sample)
        self.stats["groups"] += 1
        return samples, None


def _real_sample(turn: Turn) -> Sample:
    return Sample(prompt_ids=list(turn.prompt_ids), response_ids=list(turn.response_ids),
                  old_logprobs=list(turn.response_logprobs), group_id=turn.turn_id,
                  policy_version=int(turn.policy_version), turn_id=turn.turn_id,
                  metadata={"session_id": turn.session_id, "user": user_of(turn), "hindsight": "real"})


def _sibling_sample(turn: Turn, generation: Any) -> Sample:
    return Sample(prompt_ids=list(turn.prompt_ids), response_ids=list(generation.response_ids),
                  old_logprobs=list(generation.response_logprobs), group_id=turn.turn_id,
                  policy_version=int(generation.policy_version), turn_id=turn.turn_id,
                  metadata={"session_id": turn.session_id, "user": user_of(turn), "hindsight": "sibling"})
