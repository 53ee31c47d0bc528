"""Collapse alarms: signs, per train step, that the weights are drifting somewhere nobody wants them.

A personal agent that trains on every turn can slide into a collapse its person only notices later: replies
that shrink or balloon, repeat themselves, or say the same thing whatever was asked, a policy whose token
entropy falls towards zero or that drifts far from the weights it started from (OpenClaw-RL's users report
entropy and KL rising and replies shortening under OPD). Each step the personal trainer reads:

- ``entropy``: the mean token entropy of the step's batch under the new weights (the trainer's metric; an
  alarm when it falls below ``min_entropy`` or rises above ``max_entropy``);
- ``kl``: the k3 KL to the initial weights on the step's batch (``trainer.monitor_kl`` or ``kl_coef > 0``);
- ``length_ratio``: the publish gate's replies' mean length over the first served weights' on the same requests;
- ``repetition``: the most that the share of repeated word 3-grams within one of the gate's replies exceeds that
  of the first served weights' reply to the same request;
- ``similarity``: the mean 3-gram overlap between the gate's replies to *different* requests;
- ``refusals``: how many steps in a row the gate refused.

A signal past its threshold (``serve.alarms``; None: that alarm is off) raises an :class:`Alarm`: the step is
not published and training pauses until the person or an admin resumes it (``POST /v1/training/resume``).
"""

from __future__ import annotations

import itertools
import re
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Mapping

if TYPE_CHECKING:
    from clawgym.rl.launch.serve_section import AlarmSection
    from clawgym.rl.types import JSONObject

_WORD = re.compile(r"\w+")


def _trigrams(text: str) -> list[tuple[str, ...]]:
    words = _WORD.findall(text.lower())
    return [tuple(words[i:i + 3]) for i in range(len(words) - 2)]


def repetition_within(text: str) -> float:
    """The share of the reply's word 3-grams that already occurred earlier in it (0: none repeats)."""
    grams = _trigrams(text)
    return 1.0 - len(set(grams)) / len(grams) if grams else 0.0


def similarity_across(texts: list[str]) -> float:
    """The mean Jaccard overlap of word 3-gram sets over every pair of replies (1: all the same); 0 with
    fewer than two replies that have 3-grams."""
    sets = [set(_trigrams(t)) for t in texts]
    sets = [s for s in sets if s]
    pairs = list(itertools.combinations(sets, 2))
    return sum(len(a & b) / len(a | b) for a, b in pairs) / len(pairs) if pairs else 0.0


@dataclass(frozen=True)
class Alarm:
    signal: str
    value: float
    threshold: float
    message: str

    def to_json(self) -> JSONObject:
        return asdict(self)


# signal -> (the AlarmSection field, whether the alarm fires below the threshold, what it means)
CHECKS: dict[str, tuple[str, bool, str]] = {
    "entropy": ("min_entropy", True, "the token entropy fell"),
    "entropy_high": ("max_entropy", False, "the token entropy rose"),
    "kl": ("max_kl", False, "the weights drifted far from the initial ones"),
    "length_ratio": ("min_length_ratio", True, "replies shrank"),
    "length_ratio_high": ("max_length_ratio", False, "replies grew"),
    "repetition": ("max_repetition", False, "a reply repeats itself more than the first weights' did"),
    "similarity": ("max_similarity", False, "replies to different requests are alike"),
    "refusals": ("max_refusals", False, "the publish gate refused step after step"),
}


def check(settings: AlarmSection, signals: Mapping[str, float]) -> list[Alarm]:
    """Every alarm the step's ``signals`` raise (a signal that is absent raises none)."""
    alarms = []
    for signal, (key, low, meaning) in CHECKS.items():
        threshold = getattr(settings, key)
        value = signals.get(signal.removesuffix("_high"))
        if threshold is None or value is None:
            continue
        if (value < threshold) if low else (value > threshold):
            sign = "<" if low else ">"
            alarms.append(Alarm(signal, round(float(value), 4), float(threshold),
                                f"{meaning}: {signal.removesuffix('_high')} {value:.3g} {sign} {threshold:g}"))
    return alarms
