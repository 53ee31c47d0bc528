"""Hindsight GRPO: every real chat turn becomes a GRPO group with variance.

A person's verdict says whether *one* reply pleased them; a scripted or busy person complains about
almost every reply, so the verdicts barely vary and, after any baseline, teach nothing. Here, once a
turn is judged (and its correction has become a wish, :mod:`clawgym.personal.wish_memory`), the served
policy samples ``k - 1`` more replies to the *same prompt tokens* at the trainer's temperature, and the
rubric judge (:class:`~clawgym.personal.rubric.RubricJudge`) scores all ``k`` replies against the
person's remembered wishes. The rewards are the fraction of wishes met; the real reply's reward also
counts the person's own verdict (``verdict_weight``: ``(1 - w) * rubric + w * (verdict + 1) / 2``).
GRPO normalises the rewards within the group, so a reply that meets more wishes than its siblings is
pushed up even when every one of them would have drawn a complaint.

Nothing is trained on noise: a turn whose person has no checkable wish, or whose real reply the rubric
cannot decide, makes no group (``refused``: ``no_wishes`` / ``unscorable``); a sibling the rubric cannot
decide is left out; a group whose rewards all agree carries no advantage and is dropped
(``zero_advantage_group``). Every scored group, trained or dropped, is reported (``on_group``: the turn
log's ``hindsight_group`` event, :func:`group_event`), and :func:`wish_signal` reads back, per wish,
what the groups pushed the policy toward. The siblings are decoded by the served policy, batched with
the people's requests (serving never waits for a group: the groups are built by a background task, one
turn at a time, and a turn arriving while ``max_queued`` wait is refused as ``hindsight_busy``).

A small model seldom samples what it was never told (a word of praise the base model never writes
gives a group no variance on "make it friendlier"), while the same model reading the wishes in its
prompt often does. ``prompted`` of the ``k - 1`` siblings are therefore sampled from the teacher's
context, the wishes placed as the OPD hint is (``hint_format``), and trained as replies to the person's
own prompt: ``off_policy`` samples, whose old policy in the PPO ratio is the trainer's own (the
sampler's logprobs belong to the other prompt). The rubric scores them like any sibling, so a prompted
reply is pushed up only where it meets more wishes than the group. The prompted siblings may come from
a bigger model of the same tokenizer (``sampler``, ``serve.hindsight_prompted_model``): on the teacher
persona the 1.5B model reading the wishes meets far more of the checks than the 0.5B model does
(``benchmarks/prompted_siblings.py --personas teacher ta`` measures it).

The groups built on a conversation's first reply, the reply a new conversation starts with, hold no
member that anticipates what the person will ask for (the TA's "give a score out of 10": no first-reply
sibling gave one), while the served reply to the correction often meets it. ``answered`` of the ``k - 1``
siblings are therefore the policy's own replies once the person's next message is in its context (the
conversation as the next request will hold it), trained as replies to the turn's prompt: what it writes
once told becomes a candidate for what it should have written before, off-policy like a prompted one.
A turn whose next state holds no words of the person gets own siblings instead.

A client's harness can hide from a small model what it would write to the person. Under OpenClaw's default
profile (a ~12.5k-token system prompt and 12 tools) Qwen2.5-Coder-0.5B answers "how do I keep basil alive?"
with a tool call written as JSON, every time, and its siblings and its reply to the correction do the same:
no member of the group meets "answer in plain words". ``plain`` of the ``k - 1`` siblings are therefore the
policy's reply to the conversation alone (its user, assistant and tool messages, the person's wishes placed as
the OPD hint is, no client system prompt, tool schemas or internal-context block), trained as replies to the
turn's own prompt, off-policy like a prompted one: the rubric decides whether it meets the wishes better.

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
from typing import TYPE_CHECKING, Any, Callable, Iterable

import torch

from clawgym.core.chat_protocol import conversation, is_internal_context, person_last, user_text
from clawgym.core.messages import text_of
from clawgym.core.policy import SamplingParams
from clawgym.personal.rubric import RubricJudge, WishCheck, reward_of
from clawgym.personal.teacher_hint import hint_with_wishes, teacher_context
from clawgym.personal.wish_memory import next_words
from clawgym.rl import losses
from clawgym.rl.trainer.samples import hinted_messages, render_prompt_ids
from clawgym.rl.types import Sample, Turn

if TYPE_CHECKING:
    from clawgym.rl.launch.schema import ServeSection


@dataclass
class HindsightSettings:
    """``k``: replies per group, the person's included (>= 2); ``verdict_weight``: how much of the real
    reply's reward is the person's verdict; ``max_tokens``: the siblings' length limit when the turn
    did not record its own (a sibling gets the real reply's limit); ``max_queued``:
    judged turns waiting for their group before new ones are refused; ``prompted``: how many of the
    ``k - 1`` siblings read the wishes in their prompt; ``answered``: how many answer the person's next
    message; ``plain``: how many answer the conversation alone (the rest are sampled from the turn's own prompt);
    ``person_last``: the gateway reads OpenClaw's internal-context block before the person's words
    (``serve.person_last``), so an answered sibling's prompt does too."""

    k: int = 4
    verdict_weight: float = 0.5
    max_tokens: int = 512
    max_queued: int = 8
    prompted: int = 0
    answered: int = 0
    plain: int = 0
    person_last: bool = False

    def __post_init__(self) -> None:
        if self.k < 2:
            raise ValueError(f"hindsight groups need k >= 2 replies (the person's and a sibling), got {self.k}")
        if not 0.0 <= self.verdict_weight <= 1.0:
            raise ValueError(f"verdict_weight must be within [0, 1], got {self.verdict_weight}")
        if self.max_tokens < 1 or self.max_queued < 1:
            raise ValueError("max_tokens and max_queued must be >= 1")
        if not 0 <= self.prompted <= self.k - 1:
            raise ValueError(f"prompted siblings must be within [0, k - 1 = {self.k - 1}], got {self.prompted}")
        if self.answered < 0 or self.prompted + self.answered > self.k - 1:
            raise ValueError(f"prompted + answered siblings must be within [0, k - 1 = {self.k - 1}], "
                             f"got {self.prompted} + {self.answered}")
        if self.plain < 0 or self.prompted + self.answered + self.plain > self.k - 1:
            raise ValueError(f"prompted + answered + plain siblings must be within [0, k - 1 = {self.k - 1}], "
                             f"got {self.prompted} + {self.answered} + {self.plain}")


def hindsight_settings(serve: ServeSection) -> HindsightSettings | None:
    """The :class:`HindsightSettings` of a config's ``serve.hindsight_*`` keys (None when off); the config's
    validation has checked them (:func:`~clawgym.rl.launch.serve_rules.serve_problem`)."""
    if not serve.hindsight_k:
        return None
    return HindsightSettings(k=serve.hindsight_k, verdict_weight=serve.hindsight_verdict_weight,
                             max_tokens=serve.max_tokens, max_queued=serve.hindsight_max_queued,
                             prompted=serve.hindsight_prompted, answered=serve.hindsight_answered,
                             plain=serve.hindsight_plain, person_last=serve.person_last)


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
    ``wishes_of`` reads the wish memory.
    """

    def __init__(self, policy: Any, rubric: RubricJudge, settings: HindsightSettings, temperature: float,
                 teacher_hint: bool = False, hint_format: str = "inline", sampler: Any = None,
                 owns_sampler: bool = False, on_scored: Callable[[str, float], Any] | None = None,
                 on_group: Callable[[dict[str, Any]], Any] | None = None) -> None:
        self.sampler = sampler if sampler is not None else policy  # who writes the prompted siblings
        if settings.prompted and getattr(self.sampler, "tokenizer", None) is None:
            raise ValueError("prompted siblings render the teacher's prompt with the sampler's tokenizer, "
                             f"and {type(self.sampler).__name__} has none")
        if (settings.answered or settings.plain) and getattr(policy, "tokenizer", None) is None:
            raise ValueError("answered siblings render the continued conversation with the policy's tokenizer, "
                             f"and {type(policy).__name__} has none")
        self.owns_sampler = owns_sampler  # closed with the groups
        self.policy = policy
        self.rubric = rubric
        self.settings = settings
        self.temperature = float(temperature)
        self.teacher_hint = teacher_hint  # hybrid: every member also distils the teacher that reads the wishes
        self.hint_format = hint_format  # where a prompted sibling's prompt holds the wishes
        self.stats: collections.Counter[str] = collections.Counter()
        self.on_scored = on_scored  # (user, share of wishes the served reply met): the dashboard
        self.on_group = on_group  # every scored group as a ``hindsight_group`` event (:func:`group_event`)

    @property
    def wishes_of(self) -> Callable[[str], list[str]] | None:
        return self.rubric.wishes_of

    async def build(self, turn: Turn, verdict: float | None) -> tuple[list[Sample] | None, str | None]:
        wishes = list(self.wishes_of(user_of(turn))) if self.wishes_of is not None else []
        if not wishes:
            return None, "no_wishes"
        limit = (turn.info.get("sampling") or {}).get("max_tokens") or self.settings.max_tokens
        sampling = SamplingParams(temperature=self.temperature, max_tokens=int(limit))
        hint = hint_with_wishes(None, wishes)
        prompted = self.settings.prompted
        answered = self.settings.answered if next_words(turn) else 0  # nobody answered: own siblings instead
        served_version = int(self.policy.version)
        where = teacher_context(turn)  # the tools the student saw and where the person's words are
        teacher_prompt = self._prompted_ids(turn, hint, where) if prompted else []
        answered_prompt = self._answered_ids(turn, where) if answered else []
        plain = self.settings.plain
        plain_prompt = self._plain_ids(turn, hint) if plain else []
        siblings = await asyncio.gather(
            *(self.sampler.generate_ids(teacher_prompt, sampling) for _ in range(prompted)),
            *(self.policy.generate_ids(answered_prompt, sampling) for _ in range(answered)),
            *(self.policy.generate_ids(plain_prompt, sampling) for _ in range(plain)),
            *(self.policy.generate_ids(list(turn.prompt_ids), sampling)
              for _ in range(self.settings.k - 1 - prompted - answered - plain)))
        self.stats["siblings"] += len(siblings)
        self.stats["prompted_siblings"] += prompted
        self.stats["answered_siblings"] += answered
        self.stats["plain_siblings"] += plain
        context = conversation(list(turn.context))
        replies = [text_of(turn.action)] + [g.text for g in siblings]
        own = len(siblings) - prompted - answered - plain
        kinds = ["real"] + ["prompted"] * prompted + ["answered"] * answered + ["plain"] * plain + ["sibling"] * own
        checks = await asyncio.to_thread(self.rubric.check_many, [(wishes, context, r) for r in replies],
                                         users=[user_of(turn)] * len(replies))
        rubric = [reward_of(c) for c in checks]
        if rubric[0] is None:
            unknown = [None] * len(replies)
            self._report(turn, wishes, kinds, replies, checks, unknown, unknown, "unscorable")
            return None, "unscorable"
        if self.on_scored is not None:
            self.on_scored(user_of(turn), rubric[0])
        # a reply that answers nothing (the rubric's ``answers_request``) earns nothing, the person's verdict
        # included: the message after it is a correction the verdict judge misread far more often than praise
        if any(c.source == "unanswered" for c in checks[0]):
            verdict = None
        rewards: list[float | None] = [real_reward(rubric[0], verdict, self.settings.verdict_weight)]
        members = [(rewards[0], _real_sample(turn))]
        for i, (generation, reward) in enumerate(zip(siblings, rubric[1:])):
            if reward is None or not generation.response_ids:
                self.stats["sibling_unscorable"] += 1
                rewards.append(None)
                continue
            rewards.append(reward)
            members.append((reward, _sibling_sample(turn, generation, kinds[i + 1], served_version)))
        advantages = losses.grpo_advantages(torch.tensor([r for r, _ in members]), [turn.turn_id] * len(members))
        in_group = iter(advantages.tolist())
        member_advantages = [None if r is None else next(in_group) for r in rewards]
        if not bool(advantages.abs().gt(0).any()):
            self._report(turn, wishes, kinds, replies, checks, rewards, member_advantages, "zero_advantage_group")
            return None, "zero_advantage_group"
        self._report(turn, wishes, kinds, replies, checks, rewards, member_advantages, "queued")
        # hybrid: one hint for the whole group, the teacher reading every remembered wish
        samples = []
        for (reward, sample), advantage in zip(members, advantages.tolist()):
            sample.reward, sample.advantage = float(reward), float(advantage)
            if self.teacher_hint:
                sample.hint, sample.hint_messages = hint, list(turn.context)
                sample.metadata.update(where)
            samples.append(sample)
        self.stats["groups"] += 1
        return samples, None

    def _report(self, turn: Turn, wishes: list[str], kinds: list[str], replies: list[str],
                checks: list[list[WishCheck]], rewards: list[float | None], advantages: list[float | None],
                outcome: str) -> None:
        if self.on_group is not None:
            self.on_group(group_event(turn, wishes, kinds, replies, checks, rewards, advantages, outcome))

    def _prompted_ids(self, turn: Turn, hint: str, where: dict[str, Any]) -> list[int]:
        """The teacher's prompt: the turn's context with the wishes placed as the OPD hint, rendered as the
        policy renders any prompt (with the tools the student saw; ``where``: :func:`teacher_context`)."""
        messages = hinted_messages(list(turn.context), hint, self.hint_format, where.get("hint_at"))
        return render_prompt_ids(self.sampler.tokenizer, messages, where.get("tools"))

    def _answered_ids(self, turn: Turn, where: dict[str, Any]) -> list[int]:
        """The prompt of the person's next turn: the turn's context, the served reply and the next state,
        rendered as the policy renders any prompt (with the tools the student saw). OpenClaw's next request
        does not replay the turn's internal-context block where it was but sends one after the person's
        words: so does this prompt (read before them, as the gateway will, with ``person_last``)."""
        internal = [m for m in turn.context if is_internal_context(m)][-1:]
        messages = [*conversation(list(turn.context)), dict(turn.action), *turn.next_state, *internal]
        if self.settings.person_last:
            messages = person_last(messages)
        return render_prompt_ids(self.policy.tokenizer, messages, where.get("tools"))

    def _plain_ids(self, turn: Turn, hint: str) -> list[int]:
        """The conversation alone: its user, assistant and tool messages, the person's words without a client's
        timestamp or Runtime suffix, no system prompt, no tool schemas, no internal-context block; the wishes
        placed as the OPD hint is. What the policy writes to the person outside the client's harness."""
        messages = [dict(m, content=user_text(m)) if m.get("role") == "user" else m
                    for m in conversation(list(turn.context)) if m.get("role") != "system"]
        return render_prompt_ids(self.policy.tokenizer, hinted_messages(messages, hint, self.hint_format), None)

    async def close(self) -> None:
        if self.owns_sampler:
            await self.sampler.close()


def group_event(turn: Turn, wishes: list[str], kinds: list[str], replies: list[str],
                checks: list[list[WishCheck]], rewards: list[float | None], advantages: list[float | None],
                outcome: str) -> dict[str, Any]:
    """A scored group as a turn-log event: what the trainer was shown for this turn and why.

    ``outcome``: ``queued`` (its samples went to the trainer), ``zero_advantage_group`` or ``unscorable``;
    a member's ``reward``/``advantage`` is None where it was left out. Keyed by the turn and its user, so
    forget-me erases it with the turn (:meth:`~clawgym.serve.turn_log.TurnLog.forget_user`).
    """
    members = [{"kind": kind, "reply": reply, "reward": reward, "advantage": advantage,
                "met": {c.wish: c.met for c in member_checks}}
               for kind, reply, member_checks, reward, advantage in zip(kinds, replies, checks, rewards, advantages)]
    return {"event": "hindsight_group", "id": f"group:{turn.turn_id}", "turn_id": turn.turn_id,
            "user": user_of(turn), "policy_version": int(turn.policy_version), "wishes": list(wishes),
            "outcome": outcome, "members": members}


def wish_signal(events: Iterable[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per wish, what the scored groups of a turn log (``hindsight_group`` events) offered the trainer.

    ``groups``: groups that checked the wish (trained or of equal rewards); ``real``: the share of them
    whose served reply met it; ``none_met``: the share where no member met it, so the group had nothing
    to learn it from; ``push``: over the trained groups, the mean of ``sum_i A_i * met_i / n`` (members
    with an advantage): GRPO's step on the log-probability of the members that meet the wish, so a
    positive push trains toward meeting it and a negative one away from it. ``sibling`` / ``prompted`` /
    ``answered``: the share of the own, the prompted and the answered siblings that met it (did the
    wish-reading prompt, or the person's words, supply it?).
    """
    table: dict[str, dict[str, list[float]]] = {}
    for event in events:
        if event.get("event") != "hindsight_group" or event.get("outcome") not in ("queued", "zero_advantage_group"):
            continue
        members = event["members"]
        for wish in event["wishes"]:
            decided = [m for m in members if m["met"].get(wish) is not None]
            if not decided:
                continue
            row = table.setdefault(wish, {"real": [], "sibling": [], "prompted": [], "answered": [], "none_met": [],
                                          "push": []})
            for member in decided:
                row[member["kind"]].append(float(member["met"][wish]))
            row["none_met"].append(float(not any(m["met"][wish] for m in decided)))
            trained = [m for m in decided if m["advantage"] is not None]
            if event["outcome"] == "queued" and trained:
                row["push"].append(sum(m["advantage"] * m["met"][wish] for m in trained) / len(trained))
    return {wish: {"groups": float(len(row["none_met"])), **{key: _mean(values) for key, values in row.items()}}
            for wish, row in table.items()}


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


def _real_sample(turn: Turn) -> Sample:
    return Sample(prompt_ids=list(turn.prompt_ids), response_ids=list(turn.response_ids),
                  old_logprobs=list(turn.response_logprobs), group_id=turn.turn_id,
                  policy_version=int(turn.policy_version), turn_id=turn.turn_id,
                  metadata={"session_id": turn.session_id, "user": user_of(turn), "hindsight": "real"})


def _sibling_sample(turn: Turn, generation: Any, kind: str, served_version: int) -> Sample:
    """A sibling, trained as a reply to the person's prompt. A ``prompted`` or ``answered`` one came from
    another prompt (and maybe another model, whose versions are its own): it is off-policy, dated by the
    served weights' version when it was sampled."""
    off_policy = kind != "sibling"
    return Sample(prompt_ids=list(turn.prompt_ids), response_ids=list(generation.response_ids),
                  old_logprobs=list(generation.response_logprobs), group_id=turn.turn_id,
                  policy_version=int(served_version if off_policy else generation.policy_version),
                  turn_id=turn.turn_id, off_policy=off_policy,
                  metadata={"session_id": turn.session_id, "user": user_of(turn), "hindsight": kind})
