"""The rubric judge's shortcut for clear cases: wishes that state something code can measure.

A wish that forbids or asks for a format (lists, bold or headings, LaTeX, emoji, code or JSON: "plain words,
not JSON" is missed by a reply that is a JSON object, a tool call written as text or a fenced block), sets a count
("under 80 words", "at least two sentences", "two sentences max") or names a scale ("give a score out
of 10": a "7/10" or "7 out of 10" in the reply) is decided by looking at the reply:
a model reading "keep it under 80 words" cannot count words, code can. Everything else ("address the
student by name", "make it friendlier", "state the correct result") goes to the model.
:func:`cue_check` returns None for those, and for a wish whose measurable part is only part of it,
it decides only a violation ("no lists; and be warm" with a list in the reply is not met; without
one, the model decides).

Names are the other clear case. A wish that names the name ("call me Sam", "address me as Dr. Ng") is
met exactly when the reply says it; a wish to be addressed "by name" without saying which ("address the
student by name") is clearly *not* met by a reply that contains none of the names in the request
(:func:`name_check`); whether a reply that does contain one addresses the right person is the model's call.

Warmth is the third: a wish for a friendlier, more encouraging or warmer reply is met by a reply with
words of encouragement or praise (:data:`ENCOURAGEMENT`, general phrases, not any persona's list) and
missed by one without any (:func:`warmth_check`). Both the 0.5B and the 1.5B judge say Yes to "make it
friendlier" for every reply, praise or not, so the model part carries nothing here.

A refusal is the last: a short reply that declines the request ("I'm sorry, but I can't assist with
that.") does none of what the person asked, so with ``refusals_fail`` the rubric judge counts it as
meeting no wish (:func:`refuses`). No wish names it, because the scripted people never say "just write
it"; every person would.

Some wishes no reply can show: how fast the answer came, being reminded or emailed, remembering
something for later (:data:`UNCHECKABLE`). :func:`checkable` says so; the rubric leaves such a wish
out of every reward (unsure) instead of letting the model guess, and the dashboard marks it.
"""

from __future__ import annotations

import re

from clawgym.personal.wishes import aspects

LIST_LINE = re.compile(r"^\s*(?:\d+[.)]|[-*\u2022])\s+", re.MULTILINE)
MARKDOWN = re.compile(r"\*\*|__|^\s*#+\s", re.MULTILINE)
LATEX = re.compile(r"\\\(|\\\[|\\frac|\\boxed|\\times|\\cdot|\$[^$\n]+\$")
EMOJI = re.compile("[\U0001F300-\U0001FAFF\u2600-\u27BF]")
# code or a JSON value in a reply: a fenced block, a reply that opens with a JSON object or array (a tool call
# written as text), a <tool_call> block
CODE = re.compile(r"```|\A\s*[\[{]|<tool_call>")
NUMBER_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
                "ten": 10, "a couple of": 2, "a few": 3}
_N = r"(\d+|one|two|three|four|five|six|seven|eight|nine|ten|a couple of|a few)"
MAX_WORDS = re.compile(rf"(?i)\b(?:under|at most|no more than|fewer than|less than|max(?:imum)?(?: of)?|within|below|"
                       rf"up to)\s+{_N}\s+words\b|\b{_N}\s+words?\s+(?:max|maximum|or less|or fewer|tops)\b")
MAX_SENTENCES = re.compile(rf"(?i)\b(?:at most|no more than|max(?:imum)?(?: of)?|up to)\s+{_N}\s+sentences?\b|"
                           rf"\b{_N}\s+sentences?\s+(?:max|maximum|or less|or fewer|tops)\b")
MIN_SENTENCES = re.compile(rf"(?i)\bat least\s+{_N}\s+sentences?\b")
SCALE = re.compile(r"(?i)\b(?:score|grade|mark|rating|rate it)\s+(?:it\s+)?"
                   r"(?:out of|on a scale of|from 0 to|from 1 to)\s+(\d+)\b")
_FORMATS = {"list": LIST_LINE, "markdown": MARKDOWN, "latex": LATEX, "emoji": EMOJI, "code": CODE}
# words of a wish that the cues measure; a wish with other content words also has a part for the model
_MEASURED = re.compile(r"(?i)\b(?:no|not|don'?t|do not|use|without|avoid|skip|drop|remove|lose|stop|any|just|only|"
                       r"plain|text|symbols?|numbered|bullet(?:ed)?|bullet points|points?|lists?|bold|headings?|"
                       r"headers?|markdown|formatting|latex|emojis?|write|rewrite|it|as|normal|prose|paragraph|"
                       r"sentences?|keep|under|at most|at least|no more than|max(?:imum)?|words?|a|an|the|in|"
                       r"of|make|shorter|short|please|and|or|with|put|give|score|grade|mark|rating|rate|out of|"
                       r"scale|from|to|like|json|code|snippets?|tell|answer|me)\b|\d+")


UNCHECKABLE = re.compile(r"(?i)\b(?:faster|quicker|sooner|quickly|right away|immediately|remind(?:er)?|remember|"
                         r"e-?mail|sms|notif(?:y|ication)|schedule|tomorrow|tonight|next week|every "
                         r"(?:day|morning|week))\b")


def any_word(words: str) -> re.Pattern:
    """Any one of the space-separated ``words``, whole and in any case: the words a wish may hold besides
    its subject (for :func:`nothing_else`), kept as a plain word list."""
    return re.compile(r"(?i)\b(?:" + "|".join(words.split()) + r")\b")


def nothing_else(wish: str, *covered: re.Pattern) -> bool:
    """The wish has no word of three letters or more beyond what the ``covered`` patterns match: it asks
    for that and nothing else (then a cue may decide it whole, not only its violation)."""
    for pattern in covered:
        wish = pattern.sub(" ", wish)
    return not re.search(r"[A-Za-z]{3,}", wish)


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


def scored_on(reply: str, scale: int) -> bool:
    """The reply gives a score on the scale: "7/10", "7 / 10", "7 out of 10", "8.5/10"; "58 out of 10" is a
    number put next to the scale, not a score on it."""
    scores = re.finditer(rf"(?i)(?<![\d.])(\d{{1,3}}(?:\.\d)?)\s*(?:/|out of)\s*{scale}\b", reply)
    return any(0 <= float(score.group(1)) <= scale for score in scores)


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
    for match in SCALE.finditer(wish):  # "give a score out of 10": a "7/10" or "7 out of 10" in the reply
        verdicts.append(scored_on(reply, int(match.group(1))))
    if not verdicts:
        return None
    if not all(verdicts):
        return False  # a clear violation decides the wish, whatever else it asks
    return True if nothing_else(wish, _MEASURED) else None


# ------------------------------------------------------------------ warmth
WARMTH_WISH = re.compile(r"(?i)\b(?:friendl(?:y|ier)|encourag(?:e|ing)|warm(?:er)?|kind(?:er)?|positive|supportive|"
                         r"nicer|praise|upbeat|cheerful)\b")
ENCOURAGEMENT = re.compile(r"(?i)\b(?:great|good (?:job|work|effort|try|thinking|start)|well done|nice|excellent|"
                           r"awesome|fantastic|wonderful|brilliant|amazing|terrific|superb|impressive|proud|bravo|"
                           r"congrat\w*|keep (?:it )?up|keep going|keep (?:on )?practi[cs]ing|you(?:'re| are) "
                           r"(?:close|almost there|on the right track|doing well)|don'?t worry|you can do it)\b")
_WARMTH_FILLER = any_word("make be it more a bit little lot much and please sound the comment reply tone to student "
                          "them him her me")


def warmth_check(wish: str, reply: str) -> bool | None:
    """True / False for a wish that asks only for warmth ("make it friendlier and more encouraging"):
    whether the reply has any word of encouragement; a wish with more in it is decided only when there is
    none; None when the wish is not about warmth."""
    if not WARMTH_WISH.search(wish):
        return None
    warm = ENCOURAGEMENT.search(reply) is not None
    return warm if not warm or nothing_else(wish, WARMTH_WISH, _WARMTH_FILLER) else None


# ------------------------------------------------------------------ names
_GIVEN_NAME = re.compile(r"(?:call me|address me as|refer to me as|my name is|sign (?:it )?(?:with|as))\s+"
                         r"((?:Dr|Mr|Mrs|Ms|Prof)\.?\s+)?([A-Z][\w'-]*)", re.IGNORECASE)
BY_NAME = re.compile(r"(?i)\bby (?:\w+\s+){0,2}name\b|\b(?:use|say|include|mention|add)\s+"
                      r"(?:my|his|her|their|the \w+(?:'s)?)\s+name\b|\bname the \w+\b")
_NOT_NAMES = frozenset("I I'm I'll Please Thanks Thank Hi Hello Dear Yes No OK Okay Mr Mrs Ms Dr Prof AI".split())


def names_in(text: str) -> set[str]:
    """Capitalised words that are not at the start of a sentence: the names a request mentions."""
    found = set()
    for match in re.finditer(r"\b[A-Z][a-z]+\b", text):  # "Ava's" is Ava
        before = text[:match.start()].rstrip()
        if before and before[-1] not in ".!?:;\"(" and match.group() not in _NOT_NAMES:
            found.add(match.group())
    return found


def name_check(wish: str, request: str, reply: str) -> bool | None:
    """True / False when a wish about a name is decided by the names alone, None when the model must
    decide (or the wish is not about a name)."""
    given = _GIVEN_NAME.search(wish)
    if given and given.group(2)[0].isupper():
        said = re.search(rf"(?i)\b{re.escape(given.group(2))}\b", reply) is not None
        only_the_name = len(_GIVEN_NAME.sub(" ", wish).split()) == 0
        return said if not said or only_the_name else None  # "call me Sam and be brief": the rest is the model's
    if BY_NAME.search(wish):
        names = names_in(request)
        if names and not any(re.search(rf"\b{re.escape(n)}\b", reply) for n in names):
            return False  # no name of the request anywhere in the reply: clearly not addressed by name
    return None


# ------------------------------------------------------------------ refusals
REFUSAL = re.compile(r"(?i)\b(?:I|we)\s*(?:can['’]?t|cannot|can not|won['’]t|(?:am|['’]m|are|['’]re)\s+"
                     r"(?:unable|not able) to)\s+(?:assist|help|comply|fulfil+|provide|write|do|complete)\b"
                     r"(?:\s+(?:you\s+)?with)?\s+(?:that|this|it|the|your|such)\b")
MAX_REFUSAL_WORDS = 40  # a longer reply that declines one part has done something else too


def refuses(reply: str) -> bool:
    """The reply declines the request and does little else: a refusal phrase ("I can't assist with that",
    "I'm unable to help with this") in a reply of at most :data:`MAX_REFUSAL_WORDS` words. "I can't help
    but admire ..." is praise, not a refusal: the phrase must decline something ("that", "this", "your ...")."""
    return 0 < len(reply.split()) <= MAX_REFUSAL_WORDS and REFUSAL.search(reply) is not None
