"""The rubric judge's shortcut for clear cases: wishes that state something code can measure.

A wish that forbids or asks for a format (lists, bold or headings, LaTeX, emoji) or sets a count
("under 80 words", "at least two sentences", "two sentences max") is decided by looking at the reply:
a model reading "keep it under 80 words" cannot count words, code can. Everything else ("address the
student by name", "make it friendlier", "state the correct result") goes to the model.
:func:`cue_check` returns None for those, and for a wish whose measurable part is only part of it,
it decides only a violation ("no lists; and be warm" with a list in the reply is not met; without
one, the model decides).

Some wishes no reply can show: how fast the answer came, being reminded or emailed, remembering
something for later (:data:`UNCHECKABLE`). :func:`checkable` says so; the rubric leaves such a wish
out of every reward (unsure) instead of letting the model guess, and the dashboard marks it.
"""

from __future__ import annotations

import re

from clawgym.rl.judge.wishes import aspects

LIST_LINE = re.compile(r"^\s*(?:\d+[.)]|[-*\u2022])\s+", re.MULTILINE)
MARKDOWN = re.compile(r"\*\*|__|^\s*#+\s", re.MULTILINE)
LATEX = re.compile(r"\\\(|\\\[|\\frac|\\boxed|\\times|\\cdot|\$[^$\n]+\$")
EMOJI = re.compile("[\U0001F300-\U0001FAFF\u2600-\u27BF]")
NUMBER_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
                "ten": 10, "a couple of": 2, "a few": 3}
_N = r"(\d+|one|two|three|four|five|six|seven|eight|nine|ten|a couple of|a few)"
MAX_WORDS = re.compile(rf"(?i)\b(?:under|at most|no more than|fewer than|less than|max(?:imum)?(?: of)?|within|below|"
                       rf"up to)\s+{_N}\s+words\b|\b{_N}\s+words?\s+(?:max|maximum|or less|or fewer|tops)\b")
MAX_SENTENCES = re.compile(rf"(?i)\b(?:at most|no more than|max(?:imum)?(?: of)?|up to)\s+{_N}\s+sentences?\b|"
                           rf"\b{_N}\s+sentences?\s+(?:max|maximum|or less|or fewer|tops)\b")
MIN_SENTENCES = re.compile(rf"(?i)\bat least\s+{_N}\s+sentences?\b")
_FORMATS = {"list": LIST_LINE, "markdown": MARKDOWN, "latex": LATEX, "emoji": EMOJI}
# words of a wish that the cues measure; a wish with other content words also has a part for the model
_MEASURED = re.compile(r"(?i)\b(?:no|not|don'?t|do not|use|without|avoid|skip|drop|remove|lose|stop|any|just|only|"
                       r"plain|text|symbols?|numbered|bullet(?:ed)?|bullet points|points?|lists?|bold|headings?|"
                       r"headers?|markdown|formatting|latex|emojis?|write|rewrite|it|as|normal|prose|paragraph|"
                       r"sentences?|keep|under|at most|at least|no more than|max(?:imum)?|words?|a|an|the|in|"
                       r"of|make|shorter|short|please|and|or|with|put)\b|\d+")


UNCHECKABLE = re.compile(r"(?i)\b(?:faster|quicker|sooner|quickly|right away|immediately|remind(?:er)?|remember|"
                         r"e-?mail|sms|notif(?:y|ication)|schedule|tomorrow|tonight|next week|every "
                         r"(?:day|morning|week))\b")


def checkable(wish: str) -> bool:
    """Whether a reply can show the wish at all (see :data:`UNCHECKABLE`)."""
    return UNCHECKABLE.search(wish) is None


def _number(text: str) -> int:
    return int(text) if text.isdigit() else NUMBER_WORDS[text.lower()]


def _first(match: re.Match) -> int:
    return _number(next(g for g in match.groups() if g))


def sentences(reply: str) -> int:
    """Sentences of at least three words."""
    return len([s for s in re.split(r"[.!?]+", reply) if len(s.split()) >= 3])


def cue_check(wish: str, reply: str) -> bool | None:
    """True / False when the wish's measurable constraints decide it, None when the model must."""
    verdicts: list[bool] = []
    for aspect, sign in aspects(wish).items():
        pattern = _FORMATS.get(aspect)
        if pattern is not None:
            present = pattern.search(reply) is not None
            verdicts.append(present if sign > 0 else not present)
    words = len(reply.split())
    for match in MAX_WORDS.finditer(wish):
        verdicts.append(0 < words <= _first(match))
    for match in MAX_SENTENCES.finditer(wish):
        verdicts.append(0 < sentences(reply) <= _first(match))
    for match in MIN_SENTENCES.finditer(wish):
        verdicts.append(sentences(reply) >= _first(match))
    if not verdicts:
        return None
    if not all(verdicts):
        return False  # a clear violation decides the wish, whatever else it asks
    rest = _MEASURED.sub(" ", wish)
    return True if not re.search(r"[A-Za-z]{3,}", rest) else None
