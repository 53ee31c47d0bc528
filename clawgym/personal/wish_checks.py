"""A wish compiled once into a check: code for what is measurable, tested before it is trusted.

Asked "Does the reply meet this wish?", a 0.5B judge is near chance on wishes nobody wrote cues for. What is
measurable in a wish ("keep it under 50 words", "no semicolons", "start with the total") a small coder model
can often write as code, and code gives the same answer every time. So when a wish is new:

1. the judge model writes a few short replies to the person's own request (the one the wish was a correction
   of; or one it writes), some told to **meet** the wish and some told to **miss** it (:func:`reply_prompt`);
2. it drafts ``def met(request: str, reply: str) -> bool`` a few times (the first greedy, the rest sampled),
   or answers ``CANNOT CHECK`` when no code can tell (:func:`code_prompt`, read by :func:`parse_code`); the
   drafts and the replies decode in one batch (:func:`draft`);
3. every draft runs on every example and on the person's earlier replies in one sandboxed batch
   (:class:`~clawgym.personal.check_runner.CheckRunner`) and :func:`choose` keeps one: by default
   (``"consensus"``) the draft that tells the meet- from the miss-replies apart and agrees best with the other
   drafts on the person's replies, else the greedy draft; a draft that crashes on any is never kept. None
   kept: the wish is *refused* and stays with the model's Yes/No question.

The prompts speak of wishes in general; nothing in them names a persona, a task or a benchmark item. The
compiled code is kept with the wish (:meth:`WishMemory.set_check`), shown to the person on the dashboard, and
removable on its own. :class:`BackgroundCompiler` does all of this on its own thread, never on a reply's path.
"""

from __future__ import annotations

import logging
import queue
import re
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Sequence

from clawgym.core.messages import Message
from clawgym.personal.check_runner import MODULES, CheckRunner, refusal
from clawgym.personal.rubric_cues import checkable

if TYPE_CHECKING:
    from clawgym.rl.types import Turn

log = logging.getLogger(__name__)

CANNOT = "CANNOT CHECK"
SYSTEM = "You write small, exact Python functions that check a chatbot's reply against what its user asked for."
_ASK = ('A user told their AI assistant: "{wish}"\n\n'
        "Write a Python function\n\n    def met(request: str, reply: str) -> bool:\n\n"
        "that returns True when the assistant's reply (``reply``, to the user's message ``request``) does what the "
        "user asked, and False when it does not. Check only what code can measure: words or phrases that must or "
        "must not appear, length, counts, format (lists, headings, punctuation, capitals), the script of the "
        f"language. Import only {', '.join(MODULES)}; no files, no printing, no other functions called met.\n"
        f"If no code can tell whether a reply does it (it needs understanding or taste), answer only: {CANNOT}\n"
        "Otherwise answer with the function alone, in one ```python block.")
# two general examples (a measurable wish and one that is not) so the answer's form is clear; neither is a wish of
# a bundled persona or of the wish benchmark
FEW_SHOT: tuple[tuple[str, str], ...] = (
    ("be more tactful", CANNOT),
    ("use no semicolons", '```python\ndef met(request: str, reply: str) -> bool:\n    return ";" not in reply\n```'),
    ("at most three sentences", '```python\nimport re\n\ndef met(request: str, reply: str) -> bool:\n'
     '    sentences = [s for s in re.split(r"[.!?]+", reply) if s.strip()]\n    return len(sentences) <= 3\n```'),
)
ASSISTANT = "You are a helpful assistant. "
MEET = 'The user told you before: "{wish}". Do exactly as they asked.'
MISS = ('The user once asked: "{wish}". Ignore that wish: write your reply so that it clearly does NOT do what they '
        "asked (do the opposite).")
REQUEST_ASK = ('A user told their AI assistant: "{wish}"\n\nWrite one short message this user might send to the '
               "assistant next, where the wish matters. Reply with the message only.")
MAX_CODE_TOKENS = 320
MAX_EXAMPLE_TOKENS = 160  # each example reply: short, so drafts are tested on many cheaply
EXAMPLES_EACH = 3


def code_prompt(wish: str) -> list[Message]:
    messages: list[Message] = [{"role": "system", "content": SYSTEM}]
    for example, answer in FEW_SHOT:
        messages += [{"role": "user", "content": _ASK.format(wish=example)}, {"role": "assistant", "content": answer}]
    return messages + [{"role": "user", "content": _ASK.format(wish=wish)}]


def reply_prompt(request: str, wish: str, meet: bool) -> list[Message]:
    """A reply to ``request`` written to meet the wish (``meet``) or to miss it: the examples a draft is tested on."""
    return [{"role": "system", "content": ASSISTANT + (MEET if meet else MISS).format(wish=wish)},
            {"role": "user", "content": request}]


def request_prompt(wish: str) -> list[Message]:
    return [{"role": "user", "content": REQUEST_ASK.format(wish=wish)}]


_FENCE = re.compile(r"```[ \t]*(?:python|py)?[ \t]*\n(.*?)(?:```|$)", re.S | re.I)


def parse_code(answer: str) -> str | None:
    """The check in a model's answer: the fenced block (or the answer itself) from its imports and ``def met``
    on, with any example calls or ``if __name__ == "__main__":`` block after it dropped; None when the answer
    says it cannot be checked or holds no ``def met``."""
    blocks = [b for b in _FENCE.findall(answer) if "def met" in b]
    text = blocks[0] if blocks else answer
    if "def met" not in text:
        return None
    lines = text.replace("\t", "    ").splitlines()
    start = next(i for i, line in enumerate(lines) if line.lstrip().startswith("def met"))
    while start > 0 and re.match(r"\s*(import |from \w+ import |[A-Z_][A-Z0-9_]* = |@|#|$)", lines[start - 1]):
        start -= 1  # the imports and constants just above it
    kept = []
    for line in lines[start:]:
        top = line[:1] not in ("", " ")
        if top and not re.match(r"(def |import |from \w+ import |[A-Za-z_]\w* = |\)|\]|\})", line):
            break  # a call, a print, the __main__ block: the function is over
        kept.append(line)
    code = "\n".join(kept).strip() + "\n"
    return code if "def met" in code else None


def says_cannot(answer: str) -> bool:
    return CANNOT.lower() in answer.lower() and "def met" not in answer


@dataclass
class Examples:
    """A sample request and replies written to meet and to miss one wish."""

    request: str
    meet: list[str]
    miss: list[str]


def examples_of(request: str, meet: Sequence[str], miss: Sequence[str]) -> Examples | None:
    """The examples from the replies written to meet and to miss the wish: distinct, none on both sides; None
    with fewer than two of each (too few to tell a check that works from one that guesses)."""
    meet = [r.strip() for r in dict.fromkeys(meet) if r.strip()]
    miss = [r.strip() for r in dict.fromkeys(miss) if r.strip() and r.strip() not in meet]
    if not request.strip() or len(meet) < 2 or len(miss) < 2:
        return None
    return Examples(request.strip(), meet, miss)


@dataclass
class Draft:
    """One draft's test: how many meet-replies it met and miss-replies it did not, and its first error."""

    code: str
    meet_hits: int = 0
    miss_hits: int = 0
    error: str = ""

    @property
    def score(self) -> int:
        return self.meet_hits + self.miss_hits


ACCEPT = ("majority", "separates", "consensus")


def passes(draft: Draft, examples: Examples, accept: str = "majority") -> bool:
    """Whether a draft's test on the examples trusts it. It never crashed and, with ``accept="majority"``, met most
    meet-replies and missed most miss-replies; with ``"separates"`` (for a judge model whose replies often fail the
    side they were told to take), met a larger share of the meet-replies than of the miss-replies, each side at
    least once. ``"consensus"`` asks ``"separates"`` of the examples and more of the person's replies
    (:func:`choose`)."""
    if draft.error:
        return False
    meet, miss = len(examples.meet), len(examples.miss)
    if accept in ("separates", "consensus"):
        met_miss = miss - draft.miss_hits
        return draft.meet_hits >= 1 and draft.miss_hits >= 1 and draft.meet_hits * miss > met_miss * meet
    if accept != "majority":
        raise ValueError(f"accept must be one of {ACCEPT}, got {accept!r}")
    return 2 * draft.meet_hits > meet and 2 * draft.miss_hits > miss


def choose(drafts: Sequence[str], examples: Examples, runner: CheckRunner, accept: str = "majority",
           replies: Sequence[tuple[str, str]] = ()) -> tuple[str | None, list[Draft]]:
    """The draft to keep (or None) and every draft's test; every draft runs on every example (and reply) in one
    sandboxed batch.

    ``"majority"`` / ``"separates"``: the passing draft right on most examples (then the earliest).
    ``"consensus"``, for a small judge model whose sampled drafts and example replies are both noisy: among the
    drafts that pass ``"separates"`` and do not give every one of the person's replies (``replies``: their
    ``(request, reply)`` pairs, unlabelled; none: the examples) the same verdict, the one that agrees most there
    with the majority verdict of all drafts that ran; none such, the first draft (the greedy one) when it ran on
    every example and reply, for it is the model's best single guess. A draft that crashes on any is never kept."""
    if accept not in ACCEPT:
        raise ValueError(f"accept must be one of {ACCEPT}, got {accept!r}")
    tests = [Draft(code) for code in dict.fromkeys(drafts)]
    runnable = []
    for draft in tests:
        reason = refusal(draft.code)
        if reason is not None:
            draft.error = f"refused: {reason}"
        else:
            runnable.append(draft)
    labelled = [(r, True) for r in examples.meet] + [(r, False) for r in examples.miss]
    jobs = [(examples.request, r) for r, _ in labelled] + (list(replies) if accept == "consensus" else [])
    results = runner.run([(d.code, request, reply) for d in runnable for request, reply in jobs])
    verdicts: dict[str, list[bool | None]] = {}
    for k, draft in enumerate(runnable):
        mine = results[k * len(jobs):(k + 1) * len(jobs)]
        for (_, should), result in zip(labelled, mine):
            if result.met is None:
                draft.error = draft.error or result.error
            elif result.met == should:
                draft.meet_hits += should
                draft.miss_hits += not should
        verdicts[draft.code] = [r.met for r in (mine[len(labelled):] or mine)]  # the person's, else the examples
        if accept == "consensus" and not draft.error:
            draft.error = next((r.error or "no verdict" for r in mine if r.met is None), "")
    if accept == "consensus":
        return _consensus(tests, examples, verdicts), tests
    passing = [d for d in tests if passes(d, examples, accept)]
    best = max(passing, key=lambda d: d.score, default=None)  # max keeps the first of equals
    return (best.code if best else None), tests


def _consensus(tests: Sequence[Draft], examples: Examples, verdicts: dict[str, list[bool | None]]) -> str | None:
    ran = [d for d in tests if not d.error]
    if not ran:
        return None
    columns = zip(*(verdicts[d.code] for d in ran))
    majority = [sum(column) * 2 >= len(column) for column in columns]  # ties: met
    candidates = [d for d in ran if passes(d, examples, "separates") and len(set(verdicts[d.code])) > 1]
    if candidates:  # max keeps the first of equals
        best = max(candidates, key=lambda d: (sum(v == m for v, m in zip(verdicts[d.code], majority)), d.score))
        return best.code
    return tests[0].code if not tests[0].error else None


MAX_PERSON_REPLIES = 24


def person_replies(turns: Sequence[Turn], user: str, limit: int = MAX_PERSON_REPLIES) -> list[tuple[str, str]]:
    """The person's last ``limit`` answered turns as ``(request, reply)``: the request as a compiled check sees it
    (the conversation's first message, OpenClaw's internal blocks left out), the reply the assistant's text."""
    from clawgym.core.chat_protocol import conversation
    from clawgym.personal.rubric import first_request

    pairs = []
    for turn in turns:
        reply = str(turn.action.get("content") or "")
        if str(turn.info.get("user") or "default") == user and reply.strip():
            pairs.append((first_request(conversation(list(turn.context))), reply))
    return pairs[-limit:]


@dataclass
class Drafted:
    """The judge model's part of compiling a wish: its answers to :func:`code_prompt` (the first greedy) and the
    replies it wrote to the request to meet and to miss the wish."""

    answers: list[str]
    request: str
    meet: list[str]
    miss: list[str]


def draft(policy: Any, wish: str, request: str = "", drafts: int = 6, temperature: float = 0.7,
          max_code_tokens: int = MAX_CODE_TOKENS, max_example_tokens: int = MAX_EXAMPLE_TOKENS) -> Drafted:
    """Everything the model writes for one wish, in as few batches as the order allows: with the person's
    ``request`` known, the drafts and the example replies decode together (one batch instead of five calls in a
    row: 1.3x faster on 2 CPU cores, docs/results/wish_compile_speed.md); without it, the drafts and a request
    the model writes come first, and the examples (only when some draft holds code to test) in a second batch."""
    from clawgym.inference.completion import completions, greedy, sampled

    code, drafts = code_prompt(wish), max(1, drafts)
    jobs = [(code, greedy(max_code_tokens))] + [(code, sampled(max_code_tokens, temperature))] * (drafts - 1)

    def example_jobs(request: str) -> list[tuple[list[Message], Any]]:
        return [job for side in (True, False)
                for job in [(reply_prompt(request, wish, side), sampled(max_example_tokens, temperature))]
                * EXAMPLES_EACH]

    if request:
        texts = completions(policy, jobs + example_jobs(request))
        examples = texts[drafts:]
    else:
        texts = completions(policy, jobs + [(request_prompt(wish), greedy(64))])
        request = texts[drafts].strip().strip('"')
        wrote_code = any(parse_code(answer) for answer in texts[:drafts])
        examples = completions(policy, example_jobs(request)) if wrote_code else []
    meet, miss = examples[:EXAMPLES_EACH], examples[EXAMPLES_EACH:]
    return Drafted(texts[:drafts], request, meet, miss)


@dataclass
class Compiled:
    """What compiling one wish gave: the code, or None (refused) with the reason; ``note`` is shown with it."""

    wish: str
    code: str | None
    note: str
    seconds: float = 0.0
    drafts: list[Draft] = field(default_factory=list)


class WishCompiler:
    """Compiles wishes with a judge model (an in-process HF policy: ``.model``, ``.tokenizer``) and a runner.

    ``drafts``: how many drafts of the check to test (the first greedy, the rest sampled at ``temperature``);
    ``accept``: the rule that keeps a draft (:func:`choose`; the default, ``"consensus"``, is the one that agrees
    best with the wish benchmark's dev labels for the 0.5B judge: ``benchmarks/wish_check_drafts.py``).
    Blocking and model-bound: call :meth:`compile` from a worker thread (see :class:`BackgroundCompiler`).
    """

    def __init__(self, policy: Any, runner: CheckRunner | None = None, drafts: int = 6, temperature: float = 0.7,
                 max_code_tokens: int = MAX_CODE_TOKENS, max_example_tokens: int = MAX_EXAMPLE_TOKENS,
                 accept: str = "consensus"):
        self.policy, self.runner = policy, runner or CheckRunner()
        self.drafts, self.temperature = max(1, int(drafts)), float(temperature)
        self.max_code_tokens, self.max_example_tokens = max_code_tokens, max_example_tokens
        if accept not in ACCEPT:
            raise ValueError(f"accept must be one of {ACCEPT}, got {accept!r}")
        self.accept = accept  # see passes()

    def compile(self, wish: str, request: str = "", replies: Sequence[tuple[str, str]] = ()) -> Compiled:
        """Compile ``wish``; ``request``: a message of the person's where it mattered (the examples answer it; the
        model writes one when it is empty); ``replies``: the person's earlier ``(request, reply)`` pairs, unlabelled
        (the ``"consensus"`` rule tells drafts apart on them)."""
        start = time.monotonic()
        if not checkable(wish):
            return Compiled(wish, None, "no reply can show this wish", 0.0)
        drafted = draft(self.policy, wish, request, self.drafts, self.temperature, self.max_code_tokens,
                        self.max_example_tokens)
        return self.from_answers(wish, drafted.answers, drafted.request, drafted.meet, drafted.miss, replies, start)

    def from_answers(self, wish: str, answers: Sequence[str], request: str, meet: Sequence[str],
                     miss: Sequence[str], replies: Sequence[tuple[str, str]] = (),
                     start: float | None = None) -> Compiled:
        """What :meth:`compile` decides from the model's answers to :func:`code_prompt` and the replies it wrote
        to meet and to miss the wish (``benchmarks/wish_check_drafts.py`` keeps them and replays them here)."""
        start = time.monotonic() if start is None else start
        if not checkable(wish):
            return Compiled(wish, None, "no reply can show this wish", 0.0)
        codes = [c for c in (parse_code(a) for a in answers) if c is not None]
        if not codes:
            cannot = sum(says_cannot(a) for a in answers)
            note = "the judge model says code cannot check it" if cannot else "the judge model wrote no check"
            return Compiled(wish, None, note, time.monotonic() - start)
        examples = examples_of(request, meet, miss)
        if examples is None:
            return Compiled(wish, None, "the judge model wrote no replies to test a check on", time.monotonic() - start)
        return self.test(wish, codes, examples, start, replies)

    def test(self, wish: str, codes: Sequence[str], examples: Examples, start: float | None = None,
             replies: Sequence[tuple[str, str]] = ()) -> Compiled:
        """The chosen draft of ``codes`` on ``examples`` (no model needed: tests feed hand-written drafts)."""
        start = time.monotonic() if start is None else start
        code, tests = choose(codes, examples, self.runner, self.accept, replies)
        if code is None:
            best = max(tests, key=lambda d: (not d.error, d.score))
            why = best.error or (f"met {best.meet_hits}/{len(examples.meet)} replies written to meet it and missed "
                                 f"{best.miss_hits}/{len(examples.miss)} written to miss it")
            return Compiled(wish, None, f"no draft passed its test ({len(tests)} tried; the best: {why})",
                            time.monotonic() - start, tests)
        chosen = next(d for d in tests if d.code == code)
        note = (f"tested on {len(examples.meet)} replies written to meet it and {len(examples.miss)} to miss it: "
                f"right on {chosen.score}")
        return Compiled(wish, code, note, time.monotonic() - start, tests)


class BackgroundCompiler:
    """Compiles each new wish on a thread of its own and hands the outcome on (``on_compiled``: the wish
    memory's :meth:`~clawgym.personal.wish_memory.WishMemory.set_check`); a user's reply never waits for it.
    ``replies_of(user)``: the person's earlier ``(request, reply)`` pairs, read on that thread when a wish of theirs
    is compiled."""

    def __init__(self, compiler: WishCompiler, on_compiled: Callable[[str, str, Compiled], object],
                 replies_of: Callable[[str], Sequence[tuple[str, str]]] | None = None) -> None:
        self.compiler, self.on_compiled, self.replies_of = compiler, on_compiled, replies_of
        self.stats: dict[str, int] = {"compiled": 0, "refused": 0, "errors": 0}
        self._queue: queue.Queue[tuple[str, str, str, str] | None] = queue.Queue()
        self._queued: set[tuple[str, str]] = set()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._loop, name="clawgym-wish-checks", daemon=True)
        self._thread.start()

    def submit(self, user: str, wish_id: str, text: str, request: str = "") -> bool:
        """Queue a wish (once while it waits; ``request``: where it mattered); False when it is already queued."""
        with self._lock:
            if (wish_id, text) in self._queued:
                return False
            self._queued.add((wish_id, text))
        self._queue.put((user, wish_id, text, request))
        return True

    def idle(self) -> bool:
        with self._lock:
            return not self._queued

    def _loop(self) -> None:
        while True:
            job = self._queue.get()
            if job is None:
                return
            user, wish_id, text, request = job
            try:
                replies = self.replies_of(user) if self.replies_of is not None else ()
                outcome = self.compiler.compile(text, request, replies)
                self.stats["compiled" if outcome.code else "refused"] += 1
                self.on_compiled(user, wish_id, outcome)
            except Exception:  # a failed compile leaves the wish with the model's question
                self.stats["errors"] += 1
                log.exception("compiling the check of wish %s failed", wish_id)
            finally:
                with self._lock:
                    self._queued.discard((wish_id, text))

    def close(self) -> None:
        self._queue.put(None)
        self._thread.join(timeout=30)
