"""A judge for the CPU default model: verdicts from label-token probabilities, hints from the user's words.

Generating free-text votes with a 135M model is slow (m generations of up to 1,024 tokens) and mostly
wrong. :class:`ProbJudge` asks one short few-shot question about the user's next message — "is the
user asking for a change?" — and reads ``log p("Yes") - log p("No")`` from a single forward pass,
batching the turns that wait at the same moment. ``cues=True`` (the default) first applies a small
documented lexicon of correction / acceptance phrases (:data:`CORRECTION_CUES`,
:data:`ACCEPT_CUES`); the model decides only what the lexicon leaves open.

The hint (OPD) is rule-based, not generated: the user's correction in their own words, without a
leading refusal such as "No," (:func:`hint_from_reply`; "No lists" keeps its "No"), so it always
names what the user asked for.

The few-shot examples and the threshold here are the *tuning* set; ``benchmarks/judge_quality.py``
evaluates on a separate set that none of them were chosen from.
"""

from __future__ import annotations

import asyncio
import collections
import hashlib
import json
import re

from clawgym.core.chat_protocol import user_text
from clawgym.core.messages import Message
from clawgym.core.policy import Policy
from clawgym.rl.types import JudgeResult, Turn

SYSTEM = ("You read the message a user sent after an AI assistant's answer. Say Yes if the user complains, "
          "corrects the assistant or asks for a change. Say No if the user is satisfied.")
FEW_SHOT: tuple[tuple[str, str], ...] = (  # tuning examples: not in the benchmark's evaluation set
    ("Can you put that in Spanish instead?", "Yes"),
    ("Great, this is just right, cheers.", "No"),
    ("You forgot to include the total.", "Yes"),
    ("Sounds good to me.", "No"),
)
CORRECTION_CUES = re.compile(  # a correction, a complaint or a request for a change
    r"(?i)(\b(not what i|doesn'?t|don'?t|didn'?t|isn'?t|wasn'?t|not|wrong|incorrect|instead|too \w+|"
    r"please|could you|can you|would you|rewrite|redo|try again|should|must|missing|forgot|left out|without|"
    r"where'?s|where is|no (more|lists?|bold)|i asked|i said|i wanted|i need|more \w+|less \w+|"
    r"(in|into) (english|french|german|spanish|italian|chinese|japanese|portuguese|dutch|hindi|arabic))\b|\?|"
    r"^\W*(put|skip|lose|cut|drop|remove|add|include|be|write|use|give|make|keep|shorten|change|fix|answer|"
    r"reply|say|translate|stop|avoid|state|mention|explain|address|show|list|format|grade|score)\b)")
ACCEPT_CUES = re.compile(  # satisfaction: anywhere in the message, or a short word that opens it
    r"(?i)(\b(thanks?|thank you|perfect|exactly|works for me|looks good|sounds good|all set|that'?s fine|"
    r"that'?ll do|love it|spot on|nothing to change|no changes|as is|just right|that'?s it|that'?s right)\b|"
    r"^\W*(ok(ay)?|yes|yep|good|nice|super|cheers|lovely|excellent|awesome|brilliant|alright|right|fine|"
    r"wonderful|great|done)\b)")
# The margin above which a model's answer means "a correction", fitted per judge model on the tuning set
# (benchmarks/judge_quality.py --tune --model M), never on the evaluation set. Margins do not carry across
# models: SmolLM2's sit around -1.3 for every message, Qwen's around 0, so one model's threshold calls
# every message the other reads a correction.
THRESHOLDS = {"smollm2-135m": -1.329, "qwen2.5-coder-0.5b": -0.125, "qwen2.5-coder-1.5b": -1.0}
THRESHOLD = 0.0  # a model not fitted: "Yes" more likely than "No"
DONE_TOKEN = re.compile(r"\b[A-Z]+_DONE\b")


def next_user_text(turn: Turn) -> str:
    """The user's message that followed the action (empty when the episode ended without one), in their own
    words: a client's timestamp prefix and Runtime suffix (OpenClaw's) removed, so the cues anchored at the start
    of a message read it."""
    return "\n".join(user_text(m) for m in turn.next_state if m.get("role") == "user").strip()


def threshold_for(model: str) -> float:
    """The fitted threshold of a judge model by its name, whatever role prefix the launcher gave it
    (``judge:qwen2.5-coder-1.5b`` is the 1.5B's); :data:`THRESHOLD` for any other model."""
    for part in reversed(model.split(":")):
        if part in THRESHOLDS:
            return THRESHOLDS[part]
    return THRESHOLD


def cue_verdict(reply: str) -> float | None:
    """The lexicon's verdict on a user reply: -1 (correction), +1 (acceptance) or None (undecided)."""
    if not reply:
        return None
    if DONE_TOKEN.search(reply):
        return 1.0
    accept = ACCEPT_CUES.search(reply) is not None
    correct = CORRECTION_CUES.search(reply) is not None
    if accept and not correct:
        return 1.0
    if correct and not accept:
        return -1.0
    return None


# A leading interjection that is not part of the request. "no" and "well" only when punctuation or a
# spaced dash follows ("No, ...", "no - ..."): "No lists, please" is the request itself.
_LEAD = re.compile(r"(?i)^\W*(?:(?:no|well)(?:\s*[,.!:;\u2026]+|\s+[-\u2013\u2014]+(?=\s)|\s*[\u2013\u2014]+)"
                   r"|(?:nope|hmm+|ugh|sorry|actually|but)\b[\s,.!]*)\s*")


def hint_from_reply(reply: str) -> str | None:
    """The user's correction, in their words, as the hint for the next answer (None when too short).

    Not wrapped in an instruction, so the teacher prompt reads as the user having said it in the first
    place (``trainer.hint_format: inline``). Which form a 135M teacher follows best depends on the
    persona (``benchmarks/hint_teacher.py`` measures it; docs/benchmarks.md): on teacher-persona tasks the
    wrapper ("The user asked for a change: ... Do exactly what they ask") makes it talk about the change and score below
    the bare hint, on TA tasks the wrapper under OpenClaw-RL's header does best.
    """
    text = " ".join(reply.split())
    while (stripped := _LEAD.sub("", text, count=1).strip()) != text:  # "No, sorry, ..." has two
        text = stripped
    if len(text) < 4:
        return None
    return text[0].upper() + text[1:]


def prompt_for(reply: str) -> list[Message]:
    messages: list[Message] = [{"role": "system", "content": SYSTEM}]
    for example, label in FEW_SHOT:
        messages += [{"role": "user", "content": f"User: {example}\nAsking for a change?"},
                     {"role": "assistant", "content": label}]
    messages.append({"role": "user", "content": f"User: {reply}\nAsking for a change?"})
    return messages


class ProbScorer:
    """Batches and caches label margins; the cache key includes the policy version (new weights, new verdicts)."""

    def __init__(self, policy: Policy, *, batch_size: int = 16, cache_size: int = 50_000) -> None:
        self.policy = policy
        self.batch_size = batch_size
        self.cache_size = cache_size
        self.forward_passes = 0
        self._cache: collections.OrderedDict[str, float] = collections.OrderedDict()
        self._pending: list[tuple[list[Message], str, asyncio.Future]] = []
        self._flusher: asyncio.Task | None = None

    def key(self, messages: list[Message]) -> str:
        payload = [getattr(self.policy, "name", ""), int(getattr(self.policy, "version", 0) or 0), messages]
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()

    async def margin(self, messages: list[Message]) -> float:
        key = self.key(messages)
        if key in self._cache:
            return self._cache[key]
        future: asyncio.Future = asyncio.get_running_loop().create_future()
        self._pending.append((messages, key, future))
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.create_task(self._flush())
        return await future

    async def _flush(self) -> None:
        from clawgym.inference.scoring import label_margins

        await asyncio.sleep(0)  # let the turns that arrive together join one batch
        while self._pending:
            batch, self._pending = self._pending[: self.batch_size], self._pending[self.batch_size:]
            try:
                margins = await asyncio.to_thread(label_margins, self.policy, [b[0] for b in batch], ("Yes", "No"))
            except Exception as exc:
                for _, _, future in batch:
                    if not future.done():
                        future.set_exception(exc)
                continue
            self.forward_passes += 1
            for (_, key, future), value in zip(batch, margins):
                self._cache[key] = value
                if not future.done():
                    future.set_result(value)
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)


class ProbJudge:
    """Verdict (+1 accepted / -1 corrected) on the user's next message; ``hints=True`` adds the OPD hint.

    ``threshold``: a margin ``log p(Yes) - log p(No)`` above it means "correction"; None takes the judge
    model's fitted one (:func:`threshold_for`). Turns without a user reply (the episode ended) get no
    opinion (None).
    """

    def __init__(self, policy: Policy | None = None, *, name: str = "prm", hints: bool = False, cues: bool = True,
                 threshold: float | None = None, scorer: ProbScorer | None = None) -> None:
        if policy is None and scorer is None and not cues:
            raise ValueError("a ProbJudge without a model needs cues=True")
        self.name = name
        self.hints = hints
        self.cues = cues
        self.scorer = scorer or (ProbScorer(policy) if policy is not None else None)
        model = str(getattr(self.scorer.policy, "name", "")) if self.scorer is not None else ""
        self.threshold = threshold if threshold is not None else threshold_for(model)
        self.stats: collections.Counter[str] = collections.Counter()

    async def verdict(self, reply: str) -> tuple[float, str]:
        if self.cues:
            cue = cue_verdict(reply)
            if cue is not None:
                self.stats["by_cues"] += 1
                return cue, "cues"
        if self.scorer is None:
            self.stats["undecided"] += 1
            return 0.0, "undecided (no model)"
        margin = await self.scorer.margin(prompt_for(reply))
        self.stats["by_model"] += 1
        return (-1.0 if margin > self.threshold else 1.0), f"margin {margin:+.3f}"

    async def judge(self, turn: Turn) -> JudgeResult | None:
        reply = next_user_text(turn)
        if not reply:
            return None
        score, why = await self.verdict(reply)
        hints = [h for h in [hint_from_reply(reply)] if h] if self.hints and score < 0 else []
        return JudgeResult(score=score, votes=[score], source="prob" if self.scorer else "cues", raw=[why], hints=hints)
