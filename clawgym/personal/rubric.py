"""The rubric judge: does a reply meet each of the person's remembered wishes? A graded reward.

A verdict on the person's next message says only whether *that* reply pleased them. The rubric judge
scores *any* reply to a context against the wishes the person expressed before (the wish memory,
:mod:`clawgym.personal.wish_memory`), so a trainer can score replies nobody answered (hindsight GRPO):

    reward, checks = rubric.score(user, context_messages, reply)   # reward in [0, 1] or None
    results = rubric.score_many([(user, context, reply), ...])     # one batched forward pass

A wish with a compiled check (:mod:`clawgym.personal.wish_checks`: code the judge model wrote for it once and
tested, ``checks_of(user)`` from the wish memory) is decided by that code first, run in the sandbox of
:mod:`clawgym.personal.check_runner` (one process for every compiled check of a ``check_many`` call; source
"compiled"); a check that errs on a reply leaves the wish to what follows. Otherwise each wish is checked by a
model: one short question per (reply, wish) whose answer is read as
``log p("Yes") - log p("No")`` at the next token (like :class:`~clawgym.rl.judge.prob.ProbJudge`),
cached by (model, version, wish, request, reply). The wish comes last in the question, so the wishes
of one reply share everything before it: that part is read once and only the wishes run as a batch
(:func:`~clawgym.inference.scoring.grouped_label_margins`). Wishes
that state something measurable (a format, a word or sentence count, a name, warmth) are decided by
:mod:`clawgym.personal.rubric_cues` first when ``cues=True``; a wish for the correct result, or to be
addressed by a name it does not say, is decided by a fact the judge model reads off the request once
(:mod:`clawgym.personal.request_facts`, ``read_facts=True``: the problem's result, the name meant) and
looks for in the reply; the model decides the rest.

The reward is the fraction of decided wishes that are met. A margin within ``band`` of the
threshold is *unsure* (``met=None``) and leaves the wish out, as does a wish no reply can show
("answer faster", "email me the summary": :func:`~clawgym.personal.rubric_cues.checkable`); a reply
with no decided wish (the person has no wishes yet, or none the judge can check) gets reward None,
and a trainer must not train on it. With ``refusals_fail`` a reply that declines the request outright
(:func:`~clawgym.personal.rubric_cues.refuses`) meets no wish, like an empty one; with ``answers_request`` so
does a reply the task hardly bears on (:func:`request_information`: how much more likely the judge model finds the
reply after the conversation's first request than after :data:`NEUTRAL_REQUEST`, in nats, at most
``answer_threshold``; not the latest message, since a correction that names the form wanted, "start with
Approve", makes a bare "Approve" likely), so that
wishes about form alone ("no code blocks", "keep it short") cannot be met by saying nothing of substance: a
collapse to one-word replies, or a reply that would fit any request, earns nothing.
``context_messages`` is the conversation the reply answers; the question shows the model its first user message
(the task) and its last one (often a correction), each clipped.
"""

from __future__ import annotations

import collections
import hashlib
import json
import logging
import threading
from dataclasses import KW_ONLY, InitVar, asdict, dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence

from clawgym.core.chat_protocol import is_internal_context, user_text
from clawgym.core.messages import Message
from clawgym.personal.request_facts import RequestFacts
from clawgym.personal.rubric_cues import checkable, cue_check, name_check, refuses, warmth_check
from clawgym.personal.wishes import wish_question

logger = logging.getLogger(__name__)

SYSTEM = ("You check an AI assistant's reply against one wish of the user. Answer Yes if the reply does what the "
          "wish asks, No if it does not.")
FEW_SHOT: tuple[tuple[str, str, str, str], ...] = (  # (request, reply, wish, label): tuning examples only
    ("When is the team meeting?", "The team meeting is on Thursday at 3 pm in room 4.", "answer in French", "No"),
    ("Summarise the report.", "The report finds that sales rose 4% while costs fell, so profit grew.",
     "mention the numbers", "Yes"),
    ("Write a note to my landlord about the heating.", "Hello, the heating has been broken since Monday. "
     "Could you send someone this week? Thanks, Priya", "end with my name", "Yes"),
    ("What is recursion?", "Recursion is when a function calls itself.", "give an example", "No"),
)
# with ``answers_request``: the request a reply's likelihood is compared against (what a reply to nobody in
# particular would follow), and the information below which a reply does not answer (benchmarks/answer_check.py)
NEUTRAL_REQUEST = ""
ANSWER_THRESHOLD = 19.0  # nats: chosen on the dev split of benchmarks/answer_check.py (95 % of answers above it)
THRESHOLD = 0.0  # log p(Yes) - log p(No) above it: met
BAND = 0.0  # |margin - threshold| below it: unsure (left out of the reward)
STYLES = ("question", "wish")  # ask "Does the reply <wish>?" or show the wish and ask whether it is met
MAX_REQUEST_CHARS = 600
MAX_REPLY_CHARS = 1500


@dataclass
class WishCheck:
    """One wish against one reply: met (True/False) or unsure (None), and who decided."""

    wish: str
    met: bool | None
    source: str  # "compiled", "cues", "facts", "model", "unsure", "uncheckable", "unanswered"
    margin: float | None = None  # the model's log p(Yes) - log p(No); None when the cues decided

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def reward_of(checks: Sequence[WishCheck]) -> float | None:
    """The fraction of decided wishes that are met; None when none was decided."""
    decided = [c.met for c in checks if c.met is not None]
    return sum(decided) / len(decided) if decided else None


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split()) if len(text) > limit else text.strip()
    return text if len(text) <= limit else text[: limit - 15].rstrip() + " …[cut]… " + text[-10:]


def _user_texts(context: Sequence[Message]) -> list[str]:
    """The person's words in each user message (OpenClaw's timestamp and Runtime suffix removed)."""
    texts = (user_text(m) for m in context if m.get("role") == "user" and not is_internal_context(m))
    return [text for text in texts if text]


def first_request(context: Sequence[Message]) -> str:
    """The conversation's first user message (the task), whole; empty when there is none."""
    users = _user_texts(context)
    return users[0] if users else ""


def request_of(context: Sequence[Message]) -> str:
    """What the reply answers: the conversation's first user message and, if later, its last one."""
    users = _user_texts(context)
    if not users:
        return "(no request)"
    first = _clip(users[0], MAX_REQUEST_CHARS)
    if len(users) == 1:
        return first
    return f"{first}\n(later the user said: {_clip(users[-1], MAX_REQUEST_CHARS // 2)})"


def _question(request: str, reply: str, wish: str, style: str) -> str:
    ask = (f"The user's wish: {wish}\nDoes the reply meet this wish?" if style == "wish"
           else f"{wish_question(wish)}")
    return (f"The user's request: {request}\n\nThe assistant's reply:\n\"\"\"\n"
            f"{_clip(reply, MAX_REPLY_CHARS)}\n\"\"\"\n\n"
            f"{ask} Answer Yes or No.")


def request_information(policy: Any, pairs: Sequence[tuple[str, str]]) -> list[float]:
    """Per ``(request, reply)``: ``log p(reply | request) - log p(reply | NEUTRAL_REQUEST)`` under ``policy``'s model
    (nats; the pointwise mutual information of request and reply). An answer to the request is far likelier after
    it; a fragment ("Sure!", "Approve"), or a reply to another request, is about as likely, or less, without it."""
    from clawgym.inference.scoring import reply_logprobs

    given = reply_logprobs(policy, [([{"role": "user", "content": request}], reply) for request, reply in pairs])
    alone = reply_logprobs(policy, [([{"role": "user", "content": NEUTRAL_REQUEST}], reply) for _, reply in pairs])
    return [a - b for a, b in zip(given, alone)]


def prompt_for(request: str, reply: str, wish: str, few_shot: bool = True, style: str = "wish") -> list[Message]:
    """The chat prompt whose next token is read: the few-shot examples, then the question."""
    if style not in STYLES:
        raise ValueError(f"style must be one of {STYLES}, got {style!r}")
    messages: list[Message] = [{"role": "system", "content": SYSTEM}]
    for ex_request, ex_reply, ex_wish, label in FEW_SHOT if few_shot else ():
        messages += [{"role": "user", "content": _question(ex_request, ex_reply, ex_wish, style)},
                     {"role": "assistant", "content": label}]
    messages.append({"role": "user", "content": _question(request, reply, wish, style)})
    return messages


@dataclass(eq=False)
class RubricJudge:
    """Scores replies against a person's wishes; see the module docstring.

    ``policy``: an in-process HF policy (``.model`` / ``.tokenizer``) whose label probabilities are
    read; None leaves only the cues (every wish they cannot decide is unsure). ``facts`` decides the
    result and by-name wishes (default: :class:`RequestFacts` on ``policy`` when ``read_facts``). ``wishes_of(user)``
    returns the person's current wishes (texts), e.g. :meth:`WishMemory.texts`. ``conversation``
    maps the context to the conversation proper (the gateway strips OpenClaw's internal blocks).
    ``refusals_fail``: a short refusal ("I'm sorry, but I can't assist with that.") meets no checkable wish.
    ``checks_of(user)``: the person's compiled checks by wish text (:meth:`WishMemory.checks`), run by ``runner``
    (default: a :class:`~clawgym.personal.check_runner.CheckRunner`, made on first use).
    Thread-safe; ``score``/``score_many`` block (call them from a worker thread, never the event loop).
    """

    policy: Any = None
    wishes_of: Callable[[str], list[str]] | None = None
    _: KW_ONLY
    cues: bool = True
    threshold: float = THRESHOLD
    band: float = BAND
    few_shot: bool = True
    style: str = "wish"
    cache_size: int = 50_000
    read_facts: InitVar[bool] = True
    facts: RequestFacts | None = None
    conversation: Callable[[list[Message]], list[Message]] | None = None
    refusals_fail: bool = False
    checks_of: Callable[[str], Mapping[str, str]] | None = None
    runner: Any = None
    answers_request: bool = False
    answer_threshold: float = ANSWER_THRESHOLD

    def __post_init__(self, read_facts: bool) -> None:
        if self.policy is None and not self.cues:
            raise ValueError("a rubric judge without a model needs cues=True")
        if self.policy is None and self.answers_request:
            raise ValueError("answers_request reads the judge model's likelihoods: it needs a policy")
        if self.band < 0:
            raise ValueError("band must be >= 0")
        if self.style not in STYLES:
            raise ValueError(f"style must be one of {STYLES}, got {self.style!r}")
        if self.facts is None and read_facts and self.policy is not None:
            self.facts = RequestFacts(self.policy)
        self.stats: collections.Counter[str] = collections.Counter()
        self._cache: collections.OrderedDict[str, float] = collections.OrderedDict()
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ the trainer's entry points
    def score(self, user: str, context_messages: list[Message], reply: str) -> tuple[float | None, list[WishCheck]]:
        """``(reward, per-wish checks)`` of one reply against ``user``'s wishes (reward None: not scorable)."""
        return self.score_many([(user, context_messages, reply)])[0]

    def score_many(self, items: Iterable[tuple[str, list[Message], str]]) -> list[tuple[float | None, list[WishCheck]]]:
        """Many replies (a GRPO group, several turns) in one batched pass; same order as ``items``."""
        if self.wishes_of is None:
            raise ValueError("score() needs wishes_of (the wish memory); use check_many() with explicit wishes")
        items = list(items)
        jobs = [(list(self.wishes_of(user)), context, reply) for user, context, reply in items]
        checks = self.check_many(jobs, users=[user for user, _, _ in items])
        return [(reward_of(c), c) for c in checks]

    # ------------------------------------------------------------------ explicit wishes
    def check_many(self, jobs: Sequence[tuple[Sequence[str], list[Message], str]],
                   users: Sequence[str] | None = None) -> list[list[WishCheck]]:
        """Per-wish checks for each ``(wishes, context, reply)``; ``users`` (one per job) says whose compiled
        checks apply (none without it)."""
        compiled = self._compiled(jobs, users)
        results: list[list[WishCheck | None]] = []
        pending: list[tuple[int, int, str, list[Message]]] = []  # (job, wish index, cache key, prompt)
        asked: list[tuple[int, str, str]] = []  # (job, request, reply): does the reply answer the request?
        for j, (wishes, context, reply) in enumerate(jobs):
            row: list[WishCheck | None] = []
            reply = reply or ""
            conversation = self.conversation(context) if self.conversation else context
            request, task = request_of(conversation), first_request(conversation)
            refused = self.refusals_fail and refuses(reply)
            for w, wish in enumerate(wishes):
                if not checkable(wish):  # no reply can show it: left out, never guessed
                    row.append(WishCheck(wish, None, "uncheckable"))
                    self.stats["uncheckable"] += 1
                    continue
                if not reply.strip():
                    row.append(WishCheck(wish, False, "cues"))  # saying nothing meets no wish
                    self.stats["empty_reply"] += 1
                    continue
                if refused:
                    row.append(WishCheck(wish, False, "cues"))  # declining the request does none of it
                    self.stats["refusal"] += 1
                    continue
                met_by_code = compiled.get((j, w))
                if met_by_code is not None:
                    row.append(WishCheck(wish, met_by_code, "compiled"))
                    self.stats["by_compiled"] += 1
                    continue
                cue = None
                if self.cues:  # the formats and counts, the names, warmth; a violation of any decides
                    decided = [c for c in (cue_check(wish, reply), name_check(wish, request, reply),
                                           warmth_check(wish, reply)) if c is not None]
                    cue = all(decided) if decided else None
                if cue is not None:
                    row.append(WishCheck(wish, cue, "cues"))
                    self.stats["by_cues"] += 1
                    continue
                met = self.facts.check(wish, task, reply)[0] if self.facts is not None else None
                if met is not None:
                    row.append(WishCheck(wish, met, "facts"))
                    self.stats["by_facts"] += 1
                    continue
                row.append(None)
                if self.policy is not None:
                    pending.append((j, w, self._key(request, reply, wish),
                                    prompt_for(request, reply, wish, self.few_shot, self.style)))
            results.append(row)
            if self.answers_request and reply.strip() and not refused and any(checkable(w) for w in wishes):
                asked.append((j, task, reply))  # the task, not a correction that names the form wanted
        margins = self._margins([(j, key, prompt) for j, _, key, prompt in pending])
        for (j, w, _, _), margin in zip(pending, margins):
            results[j][w] = self._decide(jobs[j][0][w], margin)
        unanswered = {j: round(info, 3) for (j, _, _), info in zip(asked, self._information(asked))
                      if info <= self.answer_threshold}
        for j, margin in unanswered.items():  # answering nothing does none of what the person wished
            self.stats["unanswered"] += 1
            results[j] = [check if check is not None and check.source == "uncheckable"
                          else WishCheck(jobs[j][0][w], False, "unanswered", margin)
                          for w, check in enumerate(results[j])]
        for j, row in enumerate(results):  # no model: what the cues left open is unsure
            for w, check in enumerate(row):
                if check is None:
                    row[w] = WishCheck(jobs[j][0][w], None, "unsure")
                    self.stats["unsure"] += 1
        return results  # type: ignore[return-value]

    def _compiled(self, jobs: Sequence[tuple[Sequence[str], list[Message], str]],
                  users: Sequence[str] | None) -> dict[tuple[int, int], bool]:
        """What the compiled checks say, by (job, wish index): every check of the call in one sandboxed batch;
        a check that erred on its reply, or a sandbox that failed, says nothing (the cues and the model decide)."""
        if self.checks_of is None or users is None:
            return {}
        if len(users) != len(jobs):
            raise ValueError("check_many: one user per job")
        pending: list[tuple[tuple[int, int], tuple[str, str, str]]] = []
        codes_of: dict[str, Mapping[str, str]] = {}
        for j, ((wishes, context, reply), user) in enumerate(zip(jobs, users)):
            if user not in codes_of:
                codes_of[user] = self.checks_of(user) or {}
            codes = codes_of[user]
            if not codes or not (reply or "").strip() or (self.refusals_fail and refuses(reply)):
                continue
            conversation = self.conversation(context) if self.conversation else context
            for w, wish in enumerate(wishes):
                if wish in codes and checkable(wish):
                    # the check sees the person's task, as the replies it was tested on answered it
                    pending.append(((j, w), (codes[wish], first_request(conversation), reply)))
        if not pending:
            return {}
        try:
            if self.runner is None:
                from clawgym.personal.check_runner import CheckRunner

                self.runner = CheckRunner()
            results = self.runner.run([job for _, job in pending])
        except Exception as exc:  # no sandbox: the wishes go to the cues and the model, as without checks
            self.stats["compiled_unavailable"] += len(pending)
            logger.warning("compiled wish checks could not run: %s", exc)
            return {}
        decided = {}
        for (where, _), result in zip(pending, results):
            if result.met is None:
                self.stats["compiled_errors"] += 1
            else:
                decided[where] = result.met
        return decided

    def _decide(self, wish: str, margin: float) -> WishCheck:
        if abs(margin - self.threshold) < self.band:
            self.stats["unsure"] += 1
            return WishCheck(wish, None, "unsure", round(margin, 4))
        self.stats["by_model"] += 1
        return WishCheck(wish, margin > self.threshold, "model", round(margin, 4))

    # ------------------------------------------------------------------ the model
    def _information(self, asked: Sequence[tuple[int, str, str]]) -> list[float]:
        """:func:`request_information` of each ``(job, request, reply)``, cached like the margins."""
        keys = [self._key(request, reply, "answers_request") for _, request, reply in asked]
        with self._lock:
            known = {key: self._cache[key] for key in keys if key in self._cache}
        todo = {key: (request, reply) for key, (_, request, reply) in zip(keys, asked) if key not in known}
        if todo:
            values = request_information(self.policy, list(todo.values()))
            self.stats["information_pairs"] += len(todo)
            with self._lock:
                for key, value in zip(todo, values):
                    self._cache[key] = known[key] = value
                while len(self._cache) > self.cache_size:
                    self._cache.popitem(last=False)
        return [known[key] for key in keys]

    def _key(self, request: str, reply: str, wish: str) -> str:
        payload = [getattr(self.policy, "name", ""), int(getattr(self.policy, "version", 0) or 0), self.few_shot,
                   self.style, request, reply, wish]
        return hashlib.sha256(json.dumps(payload).encode()).hexdigest()

    def _margins(self, keyed: list[tuple[int, str, list[Message]]]) -> list[float]:
        """Margins of ``(job, cache key, prompt)`` triples; a job's prompts share their reply, so each job
        is one group whose shared beginning is read once (:func:`grouped_label_margins`)."""
        from clawgym.inference.scoring import grouped_label_margins

        with self._lock:
            known = {key: self._cache[key] for _, key, _ in keyed if key in self._cache}
        groups: dict[int, dict[str, list[Message]]] = {}
        scheduled: set[str] = set()
        for job, key, prompt in keyed:
            if key not in known and key not in scheduled:  # the same reply twice in a batch is read once
                groups.setdefault(job, {})[key] = prompt
                scheduled.add(key)
        if groups:
            ordered = [list(g.items()) for g in groups.values()]
            values = grouped_label_margins(self.policy, [[p for _, p in g] for g in ordered], ("Yes", "No"))
            self.stats["forward_prompts"] += sum(len(g) for g in ordered)
            with self._lock:
                for group, margins in zip(ordered, values):
                    for (key, _), value in zip(group, margins):
                        self._cache[key] = value
                        known[key] = value
                while len(self._cache) > self.cache_size:
                    self._cache.popitem(last=False)
        self.stats["cached_prompts"] += sum(1 for _, key, _ in keyed) - sum(len(g) for g in groups.values())
        return [known[key] for _, key, _ in keyed]
