"""The shared judge: one PRM / hint judge for every setting, plus free rule judges.

A judge looks at one :class:`Turn` — context, action, next state — and returns a
:class:`JudgeResult` (or ``None`` when it has nothing to say). Results land in ``turn.judge[name]``.

- :class:`PRMJudge`: m votes from any Policy backend (often the frozen base model). Each vote must end
  with ``\\boxed{1}``, ``\\boxed{-1}`` or ``\\boxed{0}``; the *last* ``\\boxed{...}`` counts and anything
  else in it makes the vote invalid. Invalid output is retried (``max_retries``), then the vote is
  ``None`` and ignored. Majority of the valid votes -> {+1, -1, 0}; a tie or no valid vote -> 0.
- :class:`HintJudge`: m votes that may carry a hindsight hint between ``[HINT_START]`` and
  ``[HINT_END]`` when they score 1 (OpenClaw-RL's OPD format). Hints longer than ``min_hint_chars``
  (10) survive, are deduplicated after normalising case, whitespace and trailing punctuation, and the
  first ``max_hints`` (3) are kept **longest first** (OpenClaw-RL's ``_select_best_hint`` picks the
  longest; its top-k path keeps shortest first, available as ``hint_order="shortest"``).
  ``result.hints[0]`` is the chosen hint (:func:`chosen_hint`).
- Prompts come from ``clawgym/rl/judge_prompts/``: a frame per judge kind (``prm.txt``, ``hint.txt``)
  and a guide per setting (``guide.<setting>.txt``: terminal sees exit codes and output, toolcall the
  tool result, chat the user's reply, swe test output, gui the page observation). The setting comes
  from the judge's ``setting`` argument, else ``turn.info["setting"]``, else the env id. Templates are
  :class:`string.Template` text (``$task``, ``$context``, ``$action``, ``$next_state``), so the braces
  of ``\\boxed{}`` need no escaping and no template engine is needed.
- Every LLM judge bounds its concurrent calls with a semaphore and caches results by a hash of the
  rendered prompt (template + context tail + action + next state) and the judge model's name and m:
  the same turn twice costs one set of calls, even when both arrive at once.
- Rule judges read verifiable next states: tool errors (``Error:``), non-zero exit codes, failing
  tests, and the env's own answer check at termination. :class:`CompositeJudge` combines them with an
  LLM judge (the rule is documented there).
- :class:`JudgeStage` is the async stage: a worker pool draining a turn queue, so rollouts only ever
  enqueue (``on_turn=stage.submit``) and never wait for a verdict.
"""

from __future__ import annotations

import asyncio
import collections
import copy
import dataclasses
import hashlib
import json
import logging
import re
import string
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Awaitable, Callable, Iterable, Protocol, Sequence, Union

from clawgym.core.messages import Message, text_of
from clawgym.core.policy import Policy, SamplingParams
from clawgym.rl.types import JudgeResult, Turn

logger = logging.getLogger(__name__)

PROMPT_DIR = Path(__file__).parent / "judge_prompts"
SETTINGS = ("terminal", "toolcall", "chat", "swe", "gui")
SETTING_NAMES = {
    "default": "an agent environment",
    "terminal": "a terminal (Linux shell) environment",
    "toolcall": "a tool-calling environment",
    "chat": "a live chat with a user",
    "swe": "a software-engineering environment (a repository with tests)",
    "gui": "a web browser (GUI) environment",
}
_ENV_HINTS = (  # substring of the lower-cased env id -> setting
    ("terminal", "terminal"),
    ("toolcall", "toolcall"),
    ("tool_call", "toolcall"),
    ("chat", "chat"),
    ("swe", "swe"),
    ("gui", "gui"),
    ("browser", "gui"),
)

BOXED = re.compile(r"\\boxed\{([^{}]*)\}")
VOTE_VALUE = re.compile(r"\s*([+-]?)([01])\s*")
HINT = re.compile(r"\[HINT_START\](.*?)\[HINT_END\]", re.DOTALL)


# ---------------------------------------------------------------------------------------------- parsing
def parse_boxed(text: str) -> int | None:
    """The last ``\\boxed{...}`` in ``text`` as 1, -1 or 0; None when absent or anything else."""
    matches = BOXED.findall(text or "")
    if not matches:
        return None
    value = VOTE_VALUE.fullmatch(matches[-1])
    if value is None:
        return None
    sign, digit = value.groups()
    if digit == "0":
        return 0
    return -1 if sign == "-" else 1


def parse_hint(text: str) -> str | None:
    """The last ``[HINT_START] ... [HINT_END]`` span, stripped; None when absent or empty."""
    matches = HINT.findall(text or "")
    if not matches:
        return None
    hint = matches[-1].strip()
    return hint or None


def majority(votes: Iterable[float | None]) -> float:
    """Majority of the valid votes; a tie for the top count, or no valid vote, gives 0."""
    counts = collections.Counter(v for v in votes if v is not None)
    if not counts:
        return 0.0
    ranked = counts.most_common()
    if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
        return 0.0
    return float(ranked[0][0])


def normalise_hint(hint: str) -> str:
    return " ".join(hint.lower().split()).strip(" .!;:,")


def select_hints(hints: Iterable[str | None], *, min_chars: int = 10, max_hints: int = 3, order: str = "longest") -> list[str]:
    """Informative hints (longer than ``min_chars``), deduplicated, best first, at most ``max_hints``.

    ``order="longest"`` follows OpenClaw-RL's OPD selection; ties keep vote order.
    """
    if order not in ("longest", "shortest"):
        raise ValueError(f"hint order must be 'longest' or 'shortest', got {order!r}")
    seen: set[str] = set()
    kept: list[str] = []
    for hint in hints:
        if hint is None or len(hint.strip()) <= min_chars:
            continue
        key = normalise_hint(hint)
        if key in seen:
            continue
        seen.add(key)
        kept.append(hint.strip())
    kept.sort(key=len, reverse=order == "longest")  # stable: equal lengths keep vote order
    return kept[:max_hints]


def chosen_hint(result: JudgeResult | None) -> str | None:
    """The hint a hint judge chose (its first), or None."""
    return result.hints[0] if result is not None and result.hints else None


# ---------------------------------------------------------------------------------------------- prompts
def setting_for(env_id: str) -> str:
    """Map an env id (``clawgym/Terminal-v0``) to a prompt setting; unknown ids get ``default``."""
    name = env_id.lower().split("/")[-1]
    for needle, setting in _ENV_HINTS:
        if needle in name:
            return setting
    return "default"


class PromptTemplates:
    """Frames (``<kind>.txt``) and setting guides (``guide.<setting>.txt``) from a directory.

    A frame has a ``### system`` and a ``### user`` section; both are :class:`string.Template` text
    with ``$setting_name``, ``$guide``, ``$task``, ``$context``, ``$action`` and ``$next_state``.
    """

    def __init__(self, directory: str | Path = PROMPT_DIR) -> None:
        self.directory = Path(directory)
        if not self.directory.is_dir():
            raise FileNotFoundError(f"judge prompt directory {self.directory} does not exist")
        self._cache: dict[str, str] = {}

    def _read(self, name: str) -> str:
        if name not in self._cache:
            self._cache[name] = (self.directory / name).read_text(encoding="utf-8").strip()
        return self._cache[name]

    def frame(self, kind: str) -> tuple[str, str]:
        try:
            text = self._read(f"{kind}.txt")
        except FileNotFoundError:
            raise FileNotFoundError(f"no judge prompt {kind}.txt in {self.directory}") from None
        match = re.fullmatch(r"### system\n(.*?)\n### user\n(.*)", text, re.DOTALL)
        if match is None:
            raise ValueError(f"{kind}.txt must have a '### system' then a '### user' section")
        return match.group(1).strip(), match.group(2).strip()

    def guide(self, setting: str) -> str:
        try:
            return self._read(f"guide.{setting}.txt")
        except FileNotFoundError:
            return self._read("guide.default.txt")

    def render(self, kind: str, setting: str, fields: dict[str, str]) -> list[Message]:
        system_t, user_t = self.frame(kind)
        values = {"setting_name": SETTING_NAMES.get(setting, SETTING_NAMES["default"]), "guide": self.guide(setting), **fields}
        try:
            return [
                {"role": "system", "content": string.Template(system_t).substitute(values)},
                {"role": "user", "content": string.Template(user_t).substitute(values)},
            ]
        except KeyError as exc:
            raise ValueError(f"judge prompt {kind}.txt uses an unknown field {exc}") from None


def clip(text: str, limit: int) -> str:
    """Keep the head and the tail of long text (errors are usually at the end)."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n...[{len(text) - limit} characters cut]...\n{text[-half:]}"


def render_message(message: Message, limit: int) -> str:
    role = message.get("role", "?")
    header = f"[{role}{(' ' + message['name']) if role == 'tool' and message.get('name') else ''}]"
    body = text_of(message)
    for call in message.get("tool_calls") or []:
        function = call.get("function", call)
        body += f"\n-> call {function.get('name')}({function.get('arguments')})"
    return f"{header} {clip(body.strip(), limit)}"


def turn_fields(turn: Turn, *, context_messages: int = 6, max_chars: int = 3000) -> dict[str, str]:
    """The task, the context tail, the action and the next state as prompt text."""
    task_index = next((i for i, m in enumerate(turn.context) if m.get("role") == "user"), None)
    task = clip(text_of(turn.context[task_index]), max_chars) if task_index is not None else "(no task message)"
    rest = [m for i, m in enumerate(turn.context) if i != task_index and m.get("role") != "system"]
    tail = rest[-context_messages:] if context_messages > 0 else []
    context = "\n".join(render_message(m, max_chars // 3) for m in tail) or "(none: this is the first action)"
    if len(rest) > len(tail):
        context = f"({len(rest) - len(tail)} earlier messages omitted)\n{context}"
    action = render_message(turn.action, max_chars)
    if turn.next_state:
        next_state = "\n".join(render_message(m, max_chars) for m in turn.next_state)
    else:
        next_state = "(nothing: the episode ended with this action)" if turn.terminated or turn.truncated else "(nothing)"
    return {"task": task, "context": context, "action": action, "next_state": next_state}


# ---------------------------------------------------------------------------------------------- judges
class Judge(Protocol):
    """Anything that can judge a turn. ``None`` means "no opinion" (e.g. a rule that does not apply)."""

    name: str

    async def judge(self, turn: Turn) -> JudgeResult | None: ...


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
        payload = json.dumps([self.kind, getattr(self.policy, "name", ""), self.m, messages], sort_keys=True)
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
                    generation = await self.policy.generate(copy.deepcopy(messages), None, sampling)
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
    """Process reward: was the action good given the next state? -> {+1, -1, 0} by majority."""

    kind = "prm"


class HintJudge(LLMJudge):
    """Hindsight hints for on-policy distillation; ``score`` is the vote majority, ``hints`` best first."""

    kind = "hint"

    def __init__(self, policy: Policy, *, min_hint_chars: int = 10, max_hints: int = 3, hint_order: str = "longest", **kwargs: Any) -> None:
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


# ---------------------------------------------------------------------------------------------- rule judges
EXIT_CODE = re.compile(r"exit[ _]code\s*[:=]?\s*(-?\d+)", re.IGNORECASE)
TEST_COUNTS = re.compile(r"(\d+)\s+(failed|passed|errors?)\b", re.IGNORECASE)
UNITTEST_FAILED = re.compile(r"FAILED \((?:failures|errors)=\d+")


def _tool_texts(turn: Turn) -> list[str]:
    return [text_of(m) for m in turn.next_state if m.get("role") == "tool"]


class RuleJudge:
    """A judge that costs nothing: ``verdict`` returns ``(score, reason)`` or None when it does not apply."""

    name = "rule"

    def verdict(self, turn: Turn) -> tuple[float, str] | None:
        raise NotImplementedError

    async def judge(self, turn: Turn) -> JudgeResult | None:
        verdict = self.verdict(turn)
        if verdict is None:
            return None
        score, reason = verdict
        return JudgeResult(score=float(score), votes=[float(score)], source=f"rule:{self.name}", raw=[reason])


class ToolErrorRule(RuleJudge):
    """-1 when a tool result in the next state starts with ``Error:`` (the env contract's tool errors)."""

    name = "tool_error"

    def verdict(self, turn: Turn) -> tuple[float, str] | None:
        for text in _tool_texts(turn):
            if text.lstrip().startswith("Error:"):
                return -1.0, f"tool error: {clip(text.strip(), 200)}"
        return None


class ExitCodeRule(RuleJudge):
    """-1 when a tool result reports a non-zero ``exit code: N``; +1 for all-zero only if ``zero_is_good``."""

    name = "exit_code"

    def __init__(self, zero_is_good: bool = False) -> None:
        self.zero_is_good = zero_is_good

    def verdict(self, turn: Turn) -> tuple[float, str] | None:
        codes = [int(c) for text in _tool_texts(turn) for c in EXIT_CODE.findall(text)]
        if not codes:
            return None
        bad = [c for c in codes if c != 0]
        if bad:
            return -1.0, f"non-zero exit code {bad[0]}"
        return (1.0, "exit code 0") if self.zero_is_good else None


class TestsRule(RuleJudge):
    """Test output in the next state: any failure or error -> -1; only passes -> +1.

    Reads ``info["tests_failed"]``/``info["tests_passed"]`` when the env gives them, else pytest
    summaries (``3 passed, 1 failed``) and unittest's ``FAILED (failures=N)``.
    """

    name = "tests"
    __test__ = False  # not a pytest class

    def verdict(self, turn: Turn) -> tuple[float, str] | None:
        failed = turn.info.get("tests_failed")
        passed = turn.info.get("tests_passed")
        if failed is None and passed is None:
            counts = {"failed": 0, "passed": 0, "error": 0}
            seen = False
            for text in _tool_texts(turn):
                for number, kind in TEST_COUNTS.findall(text):
                    kind = kind.lower()
                    counts["passed" if kind == "passed" else "failed" if kind == "failed" else "error"] += int(number)
                    seen = True
                if UNITTEST_FAILED.search(text):
                    counts["failed"] += 1
                    seen = True
            if not seen:
                return None
            failed, passed = counts["failed"] + counts["error"], counts["passed"]
        failed, passed = int(failed or 0), int(passed or 0)
        if failed > 0:
            return -1.0, f"{failed} test(s) failing"
        if passed > 0:
            return 1.0, f"{passed} test(s) passing, none failing"
        return None


class AnswerRule(RuleJudge):
    """At termination, the env's own check of the final answer: success -> +1, else -1."""

    name = "answer"

    def verdict(self, turn: Turn) -> tuple[float, str] | None:
        if not turn.terminated:
            return None
        success = bool(turn.info.get("success", turn.env_reward > 0))
        return (1.0, f"env reward {turn.env_reward}: answer accepted") if success else (-1.0, f"env reward {turn.env_reward}: answer rejected")


def default_rules() -> list[RuleJudge]:
    return [ToolErrorRule(), ExitCodeRule(), TestsRule(), AnswerRule()]


class CompositeJudge:
    """Rules plus an LLM judge, combined by one documented rule.

    The rules that apply give a rule verdict: -1 if any says -1 (a verifiable failure wins), else +1.
    - ``mode="replace"`` (default): a rule verdict is final and the LLM is not called (it costs
      nothing, and a verifiable outcome beats an opinion); with no rule verdict the LLM decides.
    - ``mode="join"``: the LLM is always called (its votes and hints are kept); the score is the rule
      verdict when there is one, else the LLM's.
    """

    def __init__(self, rules: Sequence[RuleJudge] | None = None, llm: LLMJudge | None = None, *, mode: str = "replace", name: str = "judge") -> None:
        if mode not in ("replace", "join"):
            raise ValueError(f"mode must be 'replace' or 'join', got {mode!r}")
        self.rules = list(default_rules() if rules is None else rules)
        self.llm = llm
        self.mode = mode
        self.name = name

    async def judge(self, turn: Turn) -> JudgeResult | None:
        ruled = [r for r in await asyncio.gather(*(rule.judge(turn) for rule in self.rules)) if r is not None]
        rule_score = None
        if ruled:
            rule_score = -1.0 if any(r.score < 0 for r in ruled) else 1.0
        if rule_score is not None and (self.mode == "replace" or self.llm is None):
            return JudgeResult(
                score=rule_score,
                votes=[r.score for r in ruled],
                source="+".join(r.source for r in ruled),
                raw=[reason for r in ruled for reason in r.raw],
            )
        if self.llm is None:
            return None
        result = await self.llm.judge(turn)
        if rule_score is not None:
            result.score = rule_score
            result.source = "+".join([r.source for r in ruled] + [result.source])
            result.raw = [reason for r in ruled for reason in r.raw] + result.raw
        return result


# ---------------------------------------------------------------------------------------------- the stage
TurnCallback = Callable[[Turn], Union[Awaitable[None], None]]


@dataclass
class StageStats:
    submitted: int = 0
    judged: int = 0
    errors: int = 0


class JudgeStage:
    """A worker pool draining a turn queue through one or more judges (the async judge loop).

    ``submit`` never waits (the queue is unbounded), so it is a valid ``on_turn`` for the rollout
    pool. Each turn is judged by every judge concurrently; results go into ``turn.judge[judge.name]``,
    a judge that fails leaves a 0 result with the error in ``raw`` (the turn is never lost), and
    ``on_judged(turn)`` runs after all judges are done with it. ``await stage.join()`` waits for the
    queue to drain.
    """

    def __init__(self, judges: Judge | Sequence[Judge], *, workers: int = 4, on_judged: TurnCallback | None = None) -> None:
        self.judges: list[Judge] = [judges] if not isinstance(judges, (list, tuple)) else list(judges)
        if not self.judges:
            raise ValueError("a judge stage needs at least one judge")
        names = [j.name for j in self.judges]
        if len(set(names)) != len(names):
            raise ValueError(f"judge names must be unique, got {names}")
        if workers < 1:
            raise ValueError("workers must be at least 1")
        self.workers = workers
        self.on_judged = on_judged
        self.stats = StageStats()
        self._queue: asyncio.Queue[Turn] = asyncio.Queue()
        self._tasks: list[asyncio.Task] = []

    async def start(self) -> "JudgeStage":
        if not self._tasks:
            self._tasks = [asyncio.create_task(self._worker(), name=f"clawgym-judge-{i}") for i in range(self.workers)]
        return self

    def submit(self, turn: Turn) -> None:
        """Enqueue a turn (never blocks). Start the stage first."""
        if not self._tasks:
            raise RuntimeError("the judge stage is not running: call `await stage.start()` first")
        turn.timings.setdefault("queued_at", time.time())
        self.stats.submitted += 1
        self._queue.put_nowait(turn)

    async def join(self) -> None:
        await self._queue.join()

    async def close(self) -> None:
        """Finish the queued turns, then stop the workers."""
        if self._tasks:
            await self.join()
            for task in self._tasks:
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
            self._tasks = []

    async def __aenter__(self) -> "JudgeStage":
        return await self.start()

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    async def judge_turn(self, turn: Turn) -> Turn:
        """Judge one turn with every judge now (also what the workers do)."""
        results = await asyncio.gather(*(j.judge(turn) for j in self.judges), return_exceptions=True)
        for judge, result in zip(self.judges, results):
            if isinstance(result, BaseException):
                if isinstance(result, asyncio.CancelledError):
                    raise result
                self.stats.errors += 1
                logger.error("judge %s failed on turn %s: %r", judge.name, turn.turn_id, result)
                turn.judge[judge.name] = JudgeResult(score=0.0, source="error", raw=[f"{type(result).__name__}: {result}"])
            elif result is not None:
                turn.judge[judge.name] = result
        turn.timings["judged_at"] = time.time()
        return turn

    async def _worker(self) -> None:
        while True:
            turn = await self._queue.get()
            try:
                await self.judge_turn(turn)
                self.stats.judged += 1
                if self.on_judged is not None:
                    out = self.on_judged(turn)
                    if asyncio.iscoroutine(out):
                        await out
            except asyncio.CancelledError:
                raise
            except Exception:
                self.stats.errors += 1
                logger.exception("judging turn %s failed", turn.turn_id)
            finally:
                self._queue.task_done()


JUDGE_TYPES = ("rules", "prm", "hint", "rules+prm")  # the parts of a judge spec, comma-joined


def make_judges(spec: str, policy: Policy | None = None, *, m: int = 3, setting: str | None = None, **kwargs: Any) -> list[Judge]:
    """Judges from a CLI string: ``prm``, ``hint``, ``rules``, ``rules+prm`` (composite), comma-joined.

    ``prm``/``hint`` need a judge ``policy``. ``rules+prm`` is a :class:`CompositeJudge` named ``judge``.
    """
    judges: list[Judge] = []
    for part in (p.strip() for p in spec.split(",") if p.strip()):
        if part in ("prm", "hint", "rules+prm") and policy is None:
            raise ValueError(f"judge {part!r} needs a judge policy")
        if part == "prm":
            judges.append(PRMJudge(policy, m=m, setting=setting, **kwargs))  # type: ignore[arg-type]
        elif part == "hint":
            judges.append(HintJudge(policy, m=m, setting=setting, **kwargs))  # type: ignore[arg-type]
        elif part == "rules":
            judges.append(CompositeJudge(default_rules(), None, name="rules"))
        elif part == "rules+prm":
            judges.append(CompositeJudge(default_rules(), PRMJudge(policy, m=m, setting=setting, **kwargs)))  # type: ignore[arg-type]
        else:
            raise ValueError(f"unknown judge {part!r}: use prm, hint, rules or rules+prm (comma-separated)")
    if not judges:
        raise ValueError("no judge given")
    return judges


__all__ = [
    "AnswerRule",
    "CompositeJudge",
    "ExitCodeRule",
    "HintJudge",
    "JUDGE_TYPES",
    "Judge",
    "JudgeStage",
    "LLMJudge",
    "PRMJudge",
    "PromptTemplates",
    "RuleJudge",
    "TestsRule",
    "ToolErrorRule",
    "chosen_hint",
    "default_rules",
    "make_judges",
    "majority",
    "parse_boxed",
    "parse_hint",
    "select_hints",
    "setting_for",
]
