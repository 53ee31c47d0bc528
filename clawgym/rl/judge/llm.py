"""LLM judges: m votes from any Policy backend, parsed from free text (PRM verdicts and OPD hints)."""

from __future__ import annotations

import asyncio
import collections
import copy
import dataclasses
import hashlib
import json
import logging
from dataclasses import dataclass
from typing import Any, Sequence

from clawgym.core.messages import Message
from clawgym.core.policy import Policy, SamplingParams
from clawgym.rl.judge.base import JudgeUnavailable
from clawgym.rl.judge.parsing import majority, parse_boxed, parse_hint, parse_verdict, select_hints
from clawgym.rl.judge.prompts import SETTINGS, PromptTemplates, setting_for, turn_fields
from clawgym.rl.types import JudgeResult, Turn

logger = logging.getLogger(__name__)


@dataclass
class Vote:
    score: int | None  # None: invalid after retries
    raw: str
    hint: str | None = None
    attempts: int = 1


@dataclass
class JudgeStats:
    judged: int = 0
    cache_hits: int = 0
    calls: int = 0
    invalid: int = 0
    errors: int = 0


class LLMJudge:
    """m concurrent votes from a Policy backend on a rendered prompt; subclasses parse and aggregate."""

    kind = "prm"
    default_sampling = SamplingParams(temperature=0.6, top_p=1.0, max_tokens=1024)

    def __init__(
        self,
        policy: Policy,
        *,
        m: int = 3,
        name: str | None = None,
        setting: str | None = None,
        templates: PromptTemplates | None = None,
        sampling: SamplingParams | None = None,
        max_retries: int = 2,
        concurrency: int = 8,
        context_messages: int = 6,
        max_chars: int = 3000,
        cache_size: int = 100_000,
        call_timeout_s: float | None = None,
    ) -> None:
        if m < 1:
            raise ValueError("m (votes per turn) must be at least 1")
        if max_retries < 0:
            raise ValueError("max_retries must be >= 0")
        if setting is not None and setting != "default" and setting not in SETTINGS:
            raise ValueError(f"unknown setting {setting!r}; expected one of {('default',) + SETTINGS}")
        self.policy = policy
        self.m = m
        self.name = name or self.kind
        self.setting = setting
        self.templates = templates or PromptTemplates()
        self.sampling = sampling or self.default_sampling
        self.max_retries = max_retries
        self.context_messages = context_messages
        self.max_chars = max_chars
        self.cache_size = cache_size
        self.call_timeout_s = call_timeout_s  # a call slower than this counts as the backend being down
        self.stats = JudgeStats()
        self._semaphore = asyncio.Semaphore(concurrency)
        self._cache: collections.OrderedDict[str, JudgeResult] = collections.OrderedDict()
        self._inflight: dict[str, asyncio.Future] = {}

    # --- prompt and cache key --------------------------------------------------------------------
    def setting_of(self, turn: Turn) -> str:
        return self.setting or str(turn.info.get("setting") or "") or setting_for(turn.env_id)

    def prompt(self, turn: Turn) -> list[Message]:
        fields = turn_fields(turn, context_messages=self.context_messages, max_chars=self.max_chars)
        return self.templates.render(self.kind, self.setting_of(turn), fields)

    def cache_key(self, messages: list[Message]) -> str:
        # the policy version is part of the key: with ``judge.model: policy`` new weights give new verdicts
        version = int(getattr(self.policy, "version", 0) or 0)
        payload = json.dumps([self.kind, getattr(self.policy, "name", ""), version, self.m, messages], sort_keys=True)
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()

    # --- judging ---------------------------------------------------------------------------------
    async def judge(self, turn: Turn) -> JudgeResult:
        messages = self.prompt(turn)
        key = self.cache_key(messages)
        if key in self._cache:
            self.stats.cache_hits += 1
            self._cache.move_to_end(key)
            return copy.deepcopy(self._cache[key])
        if key in self._inflight:  # the same content is being judged right now: share that verdict
            self.stats.cache_hits += 1
            return copy.deepcopy(await asyncio.shield(self._inflight[key]))
        future: asyncio.Future = asyncio.get_running_loop().create_future()
        self._inflight[key] = future
        try:
            votes = await asyncio.gather(*(self._vote(messages, i) for i in range(self.m)))
            if all(v.raw.startswith("<judge call failed") for v in votes):  # no answer at all: down, not a verdict
                raise JudgeUnavailable(f"judge {self.name}: every call failed ({votes[0].raw})")
            result = self.aggregate(votes)
            self._cache[key] = result
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
            self.stats.judged += 1
            future.set_result(result)
            return copy.deepcopy(result)
        except BaseException as exc:
            if isinstance(exc, asyncio.CancelledError):
                future.cancel()
            else:
                future.set_exception(exc)
                future.exception()  # mark retrieved: waiters re-raise it, nobody else should warn
            raise
        finally:
            del self._inflight[key]

    async def _vote(self, messages: list[Message], index: int) -> Vote:
        raw = ""
        for attempt in range(self.max_retries + 1):
            sampling = self.sampling
            if sampling.seed is not None:  # distinct, reproducible seeds per vote and attempt
                sampling = dataclasses.replace(sampling, seed=sampling.seed + index + attempt * self.m)
            try:
                async with self._semaphore:
                    self.stats.calls += 1
                    generation = await asyncio.wait_for(
                        self.policy.generate(copy.deepcopy(messages), None, sampling), self.call_timeout_s)
                raw = generation.text
            except Exception as exc:
                self.stats.errors += 1
                raw = f"<judge call failed: {type(exc).__name__}: {exc}>"
                logger.warning("judge %s vote %d attempt %d failed: %s", self.name, index, attempt, exc)
                continue
            vote = self.parse(raw)
            vote.attempts = attempt + 1
            if vote.score is not None:
                return vote
            self.stats.invalid += 1
        return Vote(score=None, raw=raw, attempts=self.max_retries + 1)

    def parse(self, text: str) -> Vote:
        return Vote(score=parse_boxed(text), raw=text)

    def aggregate(self, votes: Sequence[Vote]) -> JudgeResult:
        scores = [float(v.score) if v.score is not None else None for v in votes]
        return JudgeResult(score=majority(scores), votes=scores, source=self.kind, raw=[v.raw for v in votes])


class PRMJudge(LLMJudge):
    """Process reward: was the action good given the next state? -> {+1, -1, 0} by majority.

    Votes are read by :func:`parse_verdict`: the box, or the prompt's own class label when a small model
    leaves the box out.
    """

    kind = "prm"

    def parse(self, text: str) -> Vote:
        return Vote(score=parse_verdict(text), raw=text)


class HintJudge(LLMJudge):
    """Hindsight hints for on-policy distillation; ``score`` is the vote majority, ``hints`` best first."""

    kind = "hint"

    def __init__(self, policy: Policy, *, min_hint_chars: int = 10, max_hints: int = 3,
                 hint_order: str = "longest", **kwargs: Any) -> None:
        super().__init__(policy, **kwargs)
        if hint_order not in ("longest", "shortest"):
            raise ValueError(f"hint_order must be 'longest' or 'shortest', got {hint_order!r}")
        self.min_hint_chars = min_hint_chars
        self.max_hints = max_hints
        self.hint_order = hint_order

    def parse(self, text: str) -> Vote:
        score = parse_boxed(text)
        return Vote(score=score, raw=text, hint=parse_hint(text) if score == 1 else None)

    def aggregate(self, votes: Sequence[Vote]) -> JudgeResult:
        result = super().aggregate(votes)
        result.hints = select_hints(
            (v.hint for v in votes), min_chars=self.min_hint_chars, max_hints=self.max_hints, order=self.hint_order
        )
        return result
