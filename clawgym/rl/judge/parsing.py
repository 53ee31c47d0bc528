"""Reading judge output: ``\\boxed{}`` votes, ``[HINT_START]`` hints, majority and hint selection."""

from __future__ import annotations

import collections
import re
from typing import Iterable

from clawgym.rl.types import JudgeResult

BOXED = re.compile(r"\\boxed\{([^{}]*)\}")
VOTE_VALUE = re.compile(r"\s*([+-]?)([01])\s*")
HINT = re.compile(r"\[HINT_START\](.*?)\[HINT_END\]", re.DOTALL)
LEADING_LABEL = re.compile(r"\s*\(([abc])\)(?=[\s:.,]|$)")
LABEL_VOTES = {"a": 1, "b": -1, "c": 0}  # the PRM prompt's classes: (a) progress, (b) failure, (c) ambiguous


def parse_boxed(text: str) -> int | None:
    """The last ``\\boxed{...}`` in ``text`` as 1, -1 or 0; None when absent or anything else."""
    matches = BOXED.findall(text or "")
    return vote_value(matches[-1]) if matches else None


def vote_value(text: str) -> int | None:
    """``1``, ``+1``, ``-1``, ``0`` (spaces around allowed) as a vote; None for anything else."""
    value = VOTE_VALUE.fullmatch(text)
    if value is None:
        return None
    sign, digit = value.groups()
    if digit == "0":
        return 0
    return -1 if sign == "-" else 1


def parse_verdict(text: str) -> int | None:
    """A PRM vote: the last ``\\boxed{...}`` (:func:`parse_boxed`); without one, a reply that is only a vote
    (``1``, ``-1``, ``0``), or one that opens with the prompt's own class label ``(a)`` / ``(b)`` / ``(c)``.

    Small judge models (Qwen2.5-Coder-0.5B) often answer "1" or "(a) progress: ..." and stop without the box;
    reading only boxes turned every such answer into an invalid vote, hence a 0 verdict, on every call.
    Anything else stays invalid (None): prose is not guessed at.
    """
    text = text or ""
    if BOXED.search(text):
        return parse_boxed(text)
    bare = vote_value(text.strip().removesuffix("."))
    if bare is not None:
        return bare
    label = LEADING_LABEL.match(text)
    return LABEL_VOTES[label.group(1)] if label is not None else None


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


def select_hints(hints: Iterable[str | None], *, min_chars: int = 10, max_hints: int = 3,
                 order: str = "longest") -> list[str]:
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
