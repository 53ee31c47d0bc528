"""Facts the judge model reads off the request once, and the wishes they decide without asking about the reply.

Asked "Does the reply meet this wish?", a 0.5B judge is at chance on the wishes that need a fact
from the request: "mention the correct result" (``benchmarks/rubric_judge.py``, docs/benchmarks.md: it
would have to solve the problem in its head while reading the reply) and "address the student by name" (it must
know who the student is). Reading the fact off the request is a separate and easier task, done once
per request apart from any reply, and cached: the same fact decides every reply to the request (a
GRPO group, every turn of the conversation).

- **The result.** The judge model writes the request's arithmetic as one line of Python (``answer =
  29 + 7 * 4``), code evaluates it, and a result wish is met exactly when the reply states that
  number and calls no other number correct. Only a solution that looks computed from the request is
  used: the expression must contain an operator and only numbers that occur in the request (a bare
  ``answer = 100`` or a number from nowhere is refused), and nothing but arithmetic (no names, calls
  or attributes).
- **The name.** For a wish to be addressed "by name" without saying which ("address the student by
  name"), the judge model says which name of the request the wish means; the wish is met exactly when
  the reply says that name. An answer that is not a name in the request is refused.

A refused fact leaves the wish to the model as before. What a wrong but well-formed fact costs is
measured in ``benchmarks/rubric_judge.py`` (the ``facts`` column and the solver line).
"""

from __future__ import annotations

import ast
import collections
import math
import operator
import re
import threading
from typing import Any, Callable

from clawgym.core.messages import Message
from clawgym.personal.rubric_cues import BY_NAME, any_word, names_in, nothing_else

# a wish whose subject is the result: "mention the correct result", "give the final number", "what is the answer"
RESULT_WISH = re.compile(r"(?i)\b(?:(?:correct|right|final|actual|exact)\s+(?:result|answer|number|total|value)s?"
                         r"|what(?:'s| is) the (?:answer|result|total))\b")
# words a result wish may hold besides its subject; anything else is a second request for the model
_RESULT_ONLY = any_word("mention state give gives include tell say show write put add me us them the a so that student "
                        "students can could compare check please just clearly also and it in your reply comment what "
                        "whats is correct right final actual exact result results answer answers number numbers total "
                        "value")
SYSTEM = "You are a careful math assistant who solves word problems with Python."
NAME_SYSTEM = "You answer questions about a message with a single name."
MAX_NEW_TOKENS = 48  # room for "answer = a + b * c" and a little more
_NUMBER = re.compile(r"(?<![\d.])\d+(?:\.\d+)?")
_RESULT_WORD = re.compile(r"(?i)\b(?:is|are|was|equals?|makes?|gets?|has|have|total|answer|result|comes? to)\b|=")
_RATIO = re.compile(r"\d+(?:\.\d+)?\s*/\s*\d+")  # "7/10" is a score or a fraction, not a stated number
_RIGHT = r"(?:(?:also|exactly|absolutely|totally|perfectly|completely|indeed)\s+)?(?:correct|right|accurate)\b"
# "58 is correct", "your answer of 58 is right", "58, which is correct", "58 is the correct answer",
# "answered 58 correctly"
_NUMBER_CALLED_RIGHT = re.compile(r"(?i)(?<![\d.])(\d+(?:\.\d+)?)(?!\.?\d)(?:[^.!?\d\n]{0,24}?)"
                                  rf"(?:\b(?:is|was|are)\s+(?:the\s+)?{_RIGHT}|\bcorrectly\b)")
# "the correct answer is 58", "right result: 58", "correctly answered 58"
_RIGHT_ANSWER_NUMBER = re.compile(r"(?i)\b(?:(?:correct|right)\s+(?:answer|result|total|value)\s*(?:is|was|of|:|=)?"
                                  r"|correctly\s+(?:answered|got|found|said|gave))\s*(\d+(?:\.\d+)?)(?!\.?\d)")
_OPS: dict[type, Callable[..., float]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.USub: operator.neg, ast.UAdd: operator.pos,
}


def is_result_wish(wish: str) -> bool:
    """The wish asks for the correct result (then :meth:`RequestFacts.result` can decide it)."""
    return RESULT_WISH.search(wish) is not None


def only_the_result(wish: str) -> bool:
    """The wish asks for nothing but the result ("mention the correct result so the student can compare")."""
    return nothing_else(wish.replace("'", ""), _RESULT_ONLY)


def solve_prompt(request: str) -> list[Message]:
    return [{"role": "system", "content": SYSTEM},
            {"role": "user", "content": (
                f"Message:\n\"\"\"\n{request}\n\"\"\"\n\nThe message contains a math word problem. Ignore any answer "
                "someone already gave. Reply with one line of Python, answer = <an arithmetic expression of the "
                "problem's numbers>, and nothing else.")}]


def name_prompt(request: str, wish: str) -> list[Message]:
    return [{"role": "system", "content": NAME_SYSTEM},
            {"role": "user", "content": (f"Message:\n\"\"\"\n{request}\n\"\"\"\n\nThe user's wish: {wish}\n"
                                         "Which name does the wish mean? Reply with the name only.")}]


def is_name_wish(wish: str) -> bool:
    """The wish asks to be addressed by a name it does not say ("address the student by name")."""
    return BY_NAME.search(wish) is not None


def name_of(completion: str, request: str) -> str | None:
    """The name the completion gives, if it is one of the request's names; else None."""
    words = re.findall(r"[A-Z][a-z]+", completion)
    return words[0] if len(words) == 1 and words[0] in names_in(request) else None


def says_name(reply: str, name: str) -> bool:
    return re.search(rf"\b{re.escape(name)}\b", reply) is not None


def _numbers(text: str) -> list[float]:
    return [float(n) for n in _NUMBER.findall(_plain(text))]


def _plain(text: str) -> str:
    return re.sub(r"(?<=\d),(?=\d{3}\b)", "", text)  # 1,200 -> 1200; "48, 50" stays two numbers


def _evaluate(node: ast.AST) -> float:
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return float(node.value)
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        return _OPS[type(node.op)](_evaluate(node.left), _evaluate(node.right))
    if isinstance(node, ast.UnaryOp) and type(node.op) in _OPS:
        return _OPS[type(node.op)](_evaluate(node.operand))
    raise ValueError(f"not arithmetic: {ast.dump(node)[:60]}")


def value_of(completion: str, request: str) -> float | None:
    """The number ``completion`` computes (``answer = <expression>``, or the expression alone), or None
    when it is not a computation from the request's numbers (see the module docstring)."""
    text = re.sub(r"```(?:python)?", "", completion).strip()
    line = next((ln for ln in text.splitlines() if ln.strip()), "")
    parts = line.split("=")  # "answer = 30 + 3 * 4 = 42": the first expression is the computation
    expression = parts[1] if len(parts) > 1 and re.fullmatch(r"\s*\w+\s*", parts[0]) else parts[0]
    try:
        tree = ast.parse(expression.strip(), mode="eval").body
        value = _evaluate(tree)
    except (SyntaxError, ValueError, ZeroDivisionError, OverflowError, RecursionError):
        return None
    if not isinstance(tree, ast.BinOp) or not math.isfinite(value) or abs(value) > 1e12:
        return None
    given = set(_numbers(request))
    used = [float(c.value) for c in ast.walk(tree) if isinstance(c, ast.Constant)]
    return value if all(u in given for u in used) else None


def states_value(reply: str, value: float) -> bool:
    """The reply states ``value`` as a number of its own (``1,200`` is 1200; ``7/10`` states neither 7 nor 10)."""
    text = _RATIO.sub(" ", reply)
    return any(_same(n, value) for n in _numbers(text))


def states_as_result(reply: str, value: float) -> bool:
    """``value`` follows a result word within a few words ("the total is 48", "= 48", "gets 8 each")."""
    text = _RATIO.sub(" ", _plain(reply))
    for cue in _RESULT_WORD.finditer(text):
        number = _NUMBER.search(text, cue.end())
        if number and _same(float(number.group()), value) and len(text[cue.end():number.start()].split()) <= 3 \
                and not re.search(r"[.!?;\n]", text[cue.end():number.start()]):
            return True
    return False


def called_right(reply: str) -> list[float]:
    """The numbers the reply calls correct ("58 is correct", "the right answer is 58"), in order."""
    text = _RATIO.sub(" ", _plain(reply))
    found = [(m.start(1), m.group(1)) for pattern in (_NUMBER_CALLED_RIGHT, _RIGHT_ANSWER_NUMBER)
             for m in pattern.finditer(text)]
    return [float(number) for _, number in sorted(found)]


def _same(number: float, value: float) -> bool:
    return abs(number - value) <= (1e-6 if value == int(value) else 0.005)


def result_check(wish: str, value: float, reply: str, request: str) -> bool | None:
    """True / False for a result wish once the request is solved, None where the number alone cannot tell.

    A reply without the number misses the wish. One with it meets it, unless the number is also one of
    the request's own (the problem's "8 friends", the student's answer when it was right): then an echo
    cannot be told from a statement, and only a number stated as a result ("the correct answer is 8")
    decides. A wish that also asks for something else is decided only when the number is missing. A reply
    that calls another number correct ("58 is correct" where the result is 110) contradicts the result and
    misses the wish, whatever else it states.
    """
    if any(not _same(n, value) for n in called_right(reply)):
        return False
    if not states_value(reply, value):
        return False
    if any(_same(n, value) for n in _numbers(request)) and not states_as_result(reply, value):
        return None
    return True if only_the_result(wish) else None


class RequestFacts:
    """Reads the result and the meant name off each request with a judge model (greedy, a few tokens)
    and caches them.

    ``policy``: an in-process HF policy (``.model``, ``.tokenizer``, optional ``_weights_lock``), usually
    the rubric judge's. Facts are cached by request text (and wish), not by weight version: the problem's
    answer and the student's name do not change while the policy trains. Thread-safe.
    """

    def __init__(self, policy: Any, max_new_tokens: int = MAX_NEW_TOKENS, cache_size: int = 10_000) -> None:
        self.policy = policy
        self.max_new_tokens = max_new_tokens
        self.cache_size = cache_size
        self.stats: collections.Counter[str] = collections.Counter()
        self._cache: collections.OrderedDict[tuple[str, ...], Any] = collections.OrderedDict()
        self._lock = threading.Lock()

    def result(self, request: str) -> float | None:
        """The request's result, or None when the model gave no usable computation."""
        return self._fact(("result", request), solve_prompt(request), lambda c: value_of(c, request), "solved")

    def name(self, request: str, wish: str) -> str | None:
        """The name of the request that a by-name wish means, or None."""
        return self._fact(("name", request, wish), name_prompt(request, wish), lambda c: name_of(c, request), "named")

    def _fact(self, key: tuple[str, ...], prompt: list[Message], read: Callable[[str], Any], kind: str) -> Any:
        with self._lock:
            if key in self._cache:
                self.stats["cached"] += 1
                return self._cache[key]
        from clawgym.inference.completion import greedy_completion

        fact = read(greedy_completion(self.policy, prompt, self.max_new_tokens))
        self.stats[kind if fact is not None else "refused"] += 1
        with self._lock:
            self._cache[key] = fact
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
        return fact

    def check(self, wish: str, request: str, reply: str) -> tuple[bool | None, str]:
        """``(met, fact)`` for a wish a fact of the request decides; ``(None, "")`` when none does."""
        if not request:
            return None, ""
        if is_result_wish(wish):
            value = self.result(request)
            return (None, "") if value is None else (result_check(wish, value, reply, request), "result")
        if is_name_wish(wish):
            name = self.name(request, wish)
            return (None, "") if name is None else (says_name(reply, name), "name")
        return None, ""
