"""The publish gate: a step's new weights serve the people only when they are not worse for them.

Before the personal trainer publishes a step, the new weights answer a held-back slice of the people's
own earlier requests: each person's 1st, ``every + 1``-th, ``2 * every + 1``-th, ... judged turn, up to
``requests`` of them, which training never sees (:class:`HeldBack`). Each is replayed from the turn's own
prompt token ids, so the prompt is exactly what the served model read (OpenClaw's tools and system prompt
included), at most as long as the request allowed (and ``max_tokens``): greedily, or with ``sampled`` at the
request's own temperature under a seed of the turn's, the same for both weights, as the person is served.
The rubric judge that scores the hindsight groups (:class:`~clawgym.personal.rubric.RubricJudge`) scores every
reply against the person's *current* wishes; the weights that serve now answer the same requests (decoded once
per served version and kept). A person's score is the mean over their held-back requests the judge could
decide for both weights; the gate's score is the mean over people (each person counts the same). The step
publishes when the new score is at least the serving one minus ``margin``; otherwise the old weights keep
serving, the trainer goes back to them and the refusal is recorded with both scores (:class:`GateVerdict`).

With no held-back request yet, or no wish the judge can decide on them, there is nothing to measure: the
step publishes and says why (``reason``), and the collapse alarms (:mod:`clawgym.personal.alarms`) still
read its replies. The new weights are decoded on a copy of the served model (the candidate), never on the
served policy, so nobody is answered by weights the gate has not passed; the replies' lengths and
repetition, each against the first served weights' reply to the same request, feed the alarms.
"""

from __future__ import annotations

import asyncio
import collections
import hashlib
import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Mapping, Sequence

from clawgym.core.chat_protocol import conversation
from clawgym.core.policy import SamplingParams
from clawgym.personal.alarms import repetition_within, similarity_across
from clawgym.personal.rubric import reward_of

if TYPE_CHECKING:
    import torch

    from clawgym.core.policy import Policy
    from clawgym.personal.rubric import RubricJudge
    from clawgym.rl.launch.serve_section import GateSection
    from clawgym.rl.trainer.base import UpdatablePolicy
    from clawgym.rl.types import JSONObject, Turn


def user_of(turn: Turn) -> str:
    return str(turn.info.get("user") or "default")


class HeldBack:
    """The requests the gate replays: per person, every ``every``-th judged turn (the first included) up to
    ``requests`` of them. The choice depends only on the order of a person's judged turns, so replaying the
    turn log after a restart holds back the same turns."""

    def __init__(self, every: int, requests: int) -> None:
        self.every = every
        self.requests = requests
        self.turns: dict[str, list[Turn]] = collections.defaultdict(list)
        self._seen: collections.Counter[str] = collections.Counter()

    def hold(self, turn: Turn) -> bool:
        """Whether ``turn`` is held back (then it must not be trained on)."""
        user = user_of(turn)
        position = self._seen[user]
        self._seen[user] += 1
        if position % self.every or len(self.turns[user]) >= self.requests or not turn.prompt_ids:
            return False
        self.turns[user].append(turn)
        return True

    def all(self) -> list[Turn]:
        return [turn for user in sorted(self.turns) for turn in self.turns[user]]

    def forget(self, user: str) -> int:
        self._seen.pop(user, None)
        return len(self.turns.pop(user, []))


@dataclass
class Reply:
    text: str
    tokens: int
    ids: tuple[int, ...] = ()  # the reply's token ids: the next weights' draft (clawgym.inference.draft_replay)
    drafted: int = 0  # of its tokens, those taken from the serving weights' reply without a decoding step


@dataclass
class GateVerdict:
    """What the gate decided about one step's weights. ``candidate`` / ``serving``: the gate's scores (None:
    nothing measurable); ``users``: per person, [candidate, serving]; ``scored``: held-back requests the judge
    decided for both; the replies' mean length (tokens), repetition and similarity feed the alarms."""

    publish: bool
    reason: str  # not_worse | worse | no_held_back | unscored
    candidate: float | None = None
    serving: float | None = None
    margin: float = 0.0
    held_back: int = 0
    scored: int = 0
    users: dict[str, list[float]] = field(default_factory=dict)
    candidate_tokens: float = 0.0
    serving_tokens: float = 0.0
    initial_tokens: float = 0.0  # the first served weights' replies (this server's): the length alarm's yardstick
    # the repetition alarm's signal: the most a reply's share of repeated word 3-grams exceeds that of the first
    # served weights' reply to the same request (a model that already repeats itself under a client's prompt,
    # e.g. OpenClaw's, has not collapsed); candidate_repetition: the largest share itself
    repetition: float = 0.0
    candidate_repetition: float = 0.0
    similarity: float = 0.0
    seconds: float = 0.0  # the whole verdict: loading the weights, decoding both replies, scoring them
    decode_seconds: float = 0.0
    score_seconds: float = 0.0
    drafted: float = 0.0  # the share of the candidate's reply tokens taken from the serving weights' replies

    def to_json(self) -> JSONObject:
        return asdict(self)


@dataclass
class PublishGate:
    """Scores a step's weights against the serving ones on the held-back requests; see the module docstring.

    ``candidate``: a policy on a copy of the served model that takes each step's weights (``update_weights``);
    ``served``: the policy that serves now (it answers the held-back requests once per version).
    ``state_path`` keeps the first served weights' reply lengths across restarts (the length alarm's yardstick).
    """

    settings: GateSection
    rubric: RubricJudge
    wishes_of: Callable[[str], list[str]]
    candidate: UpdatablePolicy
    served: Policy
    state_path: Path | None = None
    owns_candidate: bool = True

    def __post_init__(self) -> None:
        self.held = HeldBack(self.settings.every, self.settings.requests)
        self._serving: dict[str, Reply] = {}  # turn id -> the serving weights' reply
        self._serving_version: int | None = None
        self._pending: dict[str, Reply] = {}  # the last judged candidate's replies (accept() makes them serving's)
        self._initial: dict[str, tuple[int, float | None]] = self._load_initial()  # turn id -> (tokens, repetition)

    # ------------------------------------------------------------------ the trainer's entry points
    async def judge(self, weights: Mapping[str, torch.Tensor], served_version: int, version: int) -> GateVerdict:
        """The verdict on ``weights`` (the step's, not served yet) against the weights serving at
        ``served_version``."""
        started = time.perf_counter()
        turns = self.held.all()
        if not turns:
            return GateVerdict(True, "no_held_back", margin=self.settings.margin)
        await self.candidate.update_weights(weights, version=version)
        decoding = time.perf_counter()
        if self._drafts():  # the serving weights' replies first: they are the candidate's drafts
            old = await self._serving_replies(turns, served_version)
            new = await self._drafted_replies(turns, old)
        else:
            new, old = await asyncio.gather(self._replies(self.candidate, turns),
                                            self._serving_replies(turns, served_version))
        self._pending = {t.turn_id: r for t, r in zip(turns, new)}
        new_yardsticks = [t for t in turns if t.turn_id not in self._initial]
        for turn, reply in zip(turns, old):
            self._initial.setdefault(turn.turn_id, (reply.tokens, repetition_within(reply.text)))
        if new_yardsticks:  # written when it changes, not every step
            self._save_initial()
        scoring = time.perf_counter()
        verdict = await asyncio.to_thread(self._score, turns, new, old)
        verdict.drafted = round(sum(r.drafted for r in new) / max(1, sum(r.tokens for r in new)), 3)
        verdict.initial_tokens = _mean([self._initial[t.turn_id][0] for t in turns])
        verdict.repetition = round(max(repetition_within(r.text) - (self._initial[t.turn_id][1] or 0.0)
                                       for t, r in zip(turns, new)), 3)
        done = time.perf_counter()
        verdict.seconds, verdict.decode_seconds, verdict.score_seconds = (
            round(done - started, 3), round(scoring - decoding, 3), round(done - scoring, 3))
        return verdict

    def accept(self, version: int) -> None:
        """The judged weights were published as ``version``: their replies are the serving weights' now."""
        self._serving.update(self._pending)
        self._serving_version = version

    def forget(self, user: str) -> int:
        """Forget-me: the person's held-back requests and every reply to them."""
        ids = {t.turn_id for t in self.held.turns.get(user, [])}
        for table in (self._serving, self._pending, self._initial):
            for turn_id in ids:
                table.pop(turn_id, None)
        self._save_initial()
        return self.held.forget(user)

    async def close(self) -> None:
        if self.owns_candidate:
            await self.candidate.close()

    # ------------------------------------------------------------------ replies and scores
    async def _replies(self, policy: Policy, turns: Sequence[Turn]) -> list[Reply]:
        """Replies as :meth:`_sampling` says, each at most as long as the request allowed (and ``max_tokens``)."""
        generations = await asyncio.gather(*(policy.generate_ids(list(t.prompt_ids), self._sampling(t)) for t in turns))
        return [Reply(g.text, len(g.response_ids), tuple(g.response_ids)) for g in generations]

    def _drafts(self) -> bool:
        """Whether the candidate replays from the serving weights' replies (``draft``; an in-process HF model)."""
        from clawgym.inference.hf import HFPolicy

        return self.settings.draft and not self.settings.sampled and isinstance(self.candidate, HFPolicy)

    async def _drafted_replies(self, turns: Sequence[Turn], drafts: Sequence[Reply]) -> list[Reply]:
        """The candidate's greedy replies, each checked against the serving weights' reply to the same request
        first: the same replies as :meth:`_replies`, with the tokens both weights choose alike not decoded."""
        from clawgym.inference.draft_replay import replay_many

        replayed = await replay_many(self.candidate, [(list(t.prompt_ids), list(d.ids), self._sampling(t))
                                                      for t, d in zip(turns, drafts)])
        return [Reply(r.generation.text, len(r.generation.response_ids), tuple(r.generation.response_ids), r.accepted)
                for r in replayed]

    def _sampling(self, turn: Turn) -> SamplingParams:
        """Greedy, or with ``sampled`` the request's own temperature and top-p under a seed of the turn's own."""
        asked = turn.info.get("sampling") or {}
        max_tokens = min(int(asked.get("max_tokens") or self.settings.max_tokens), self.settings.max_tokens)
        if not self.settings.sampled:
            return SamplingParams(temperature=0.0, max_tokens=max_tokens)
        seed = int.from_bytes(hashlib.sha256(turn.turn_id.encode()).digest()[:8], "big") >> 1
        return SamplingParams(temperature=float(asked.get("temperature", 1.0)), top_p=float(asked.get("top_p", 1.0)),
                              max_tokens=max_tokens, seed=seed)

    async def _serving_replies(self, turns: Sequence[Turn], served_version: int) -> list[Reply]:
        """The serving weights' replies: kept from the candidate they were published as, else decoded now."""
        if self._serving_version != served_version:
            self._serving, self._serving_version = {}, served_version
        missing = [t for t in turns if t.turn_id not in self._serving]
        if missing:
            for turn, reply in zip(missing, await self._replies(self.served, missing)):
                self._serving[turn.turn_id] = reply
        return [self._serving[t.turn_id] for t in turns]

    def _score(self, turns: Sequence[Turn], new: Sequence[Reply], old: Sequence[Reply]) -> GateVerdict:
        wishes = {user: list(self.wishes_of(user)) for user in {user_of(t) for t in turns}}
        jobs = []
        for turn, a, b in zip(turns, new, old):  # the candidate's reply, then the serving weights', per request
            context = conversation(list(turn.context))
            jobs += [(wishes[user_of(turn)], context, a.text), (wishes[user_of(turn)], context, b.text)]
        checks = self.rubric.check_many(jobs, users=[user_of(t) for t in turns for _ in range(2)])
        per_user: dict[str, list[tuple[float, float]]] = collections.defaultdict(list)
        for i, turn in enumerate(turns):
            a, b = reward_of(checks[2 * i]), reward_of(checks[2 * i + 1])
            if a is not None and b is not None:
                per_user[user_of(turn)].append((a, b))
        verdict = GateVerdict(True, "unscored", margin=self.settings.margin, held_back=len(turns),
                              scored=sum(len(v) for v in per_user.values()),
                              candidate_tokens=_mean([r.tokens for r in new]),
                              serving_tokens=_mean([r.tokens for r in old]),
                              candidate_repetition=round(max(repetition_within(r.text) for r in new), 3),
                              similarity=round(similarity_across([r.text for r in new]), 3))
        if per_user:
            verdict.users = {u: [round(_mean([a for a, _ in v]), 4), round(_mean([b for _, b in v]), 4)]
                             for u, v in sorted(per_user.items())}
            verdict.candidate = round(_mean([c for c, _ in verdict.users.values()]), 4)
            verdict.serving = round(_mean([s for _, s in verdict.users.values()]), 4)
            verdict.publish = verdict.candidate >= verdict.serving - self.settings.margin - 1e-9
            verdict.reason = "not_worse" if verdict.publish else "worse"
        return verdict

    # ------------------------------------------------------------------ the length and repetition alarms' yardstick
    def _load_initial(self) -> dict[str, tuple[int, float | None]]:
        """turn id -> the first served weights' reply (tokens, repetition); a file of tokens alone (written before
        the repetition was kept) gives no repetition yardstick: the alarm reads those replies' own share."""
        if self.state_path is None or not self.state_path.exists():
            return {}
        saved = json.loads(self.state_path.read_text(encoding="utf-8"))
        return {k: (int(v), None) if isinstance(v, (int, float)) else (int(v[0]), None if v[1] is None else float(v[1]))
                for k, v in saved.items()}

    def _save_initial(self) -> None:
        if self.state_path is not None:
            tmp = self.state_path.with_suffix(".tmp")
            tmp.write_text(json.dumps({k: list(v) for k, v in self._initial.items()}, sort_keys=True), encoding="utf-8")
            tmp.replace(self.state_path)


def _mean(values: Sequence[float]) -> float:
    return float(sum(values) / len(values)) if values else 0.0
