"""A user's correction as a short wish, and when two wishes are about the same thing.

The wish memory (:mod:`clawgym.personal.wish_memory`) keeps what a person asked for across
conversations; the rubric judge (:mod:`clawgym.personal.rubric`) checks replies against it. Both need
the request in a short, stable form, built from the person's own words only:

- :func:`wish_from_correction` keeps the request sentences of a message and drops what is not the
  request: interjections ("No," "ok but"), politeness ("please", "could you"), reasons ("so the
  student can compare", ", it looks AI-written"), examples (", like 7/10"). Complaints are turned
  into the request they imply: "You didn't include the total" -> "include the total", "That's too
  long" -> "make it shorter", "I literally just said call me Sam" -> "call me Sam", "what's the
  answer?" -> "give the answer". A message with no request in it (thanks, a statement such as "the
  sum is 17", a new task longer than :data:`MAX_WISH_WORDS`) gives no wish: nothing is remembered
  from noise. Neither does a sentence in the assistant's voice ("Don't hesitate to ask if you need
  anything else", "I'm here to help"): a model playing the person swaps roles now and then, and an
  offer of help asks nothing of the assistant.
- :func:`relation` says whether a later wish repeats an earlier one (same key, or at least half of
  their content words shared), contradicts it (the same aspect with the opposite sign: "use bullet
  points" / "no lists", "keep it short" / "more detail", "reply in French" / "reply in English"),
  or is about something else. In the first two cases the later wish wins. The aspects are a small
  documented table (:data:`ASPECTS`); anything outside it is compared by its words only.
"""

from __future__ import annotations

import re

MAX_WISH_WORDS = 16  # longer "requests" are new tasks or explanations, not a wish to remember
MAX_PARTS = 2  # request sentences kept in the one-line wish of wish_from_correction
MAX_WISHES = 4  # separate wishes kept from one message (wishes_from_correction)

_DONE = re.compile(r"\b[A-Z]+_DONE\b")
_LEAD = re.compile(r"(?i)^\W*(?:(?:no|well)(?:\s*[,.!:;\u2026]+|\s+[-\u2013\u2014]+(?=\s)|\s*[\u2013\u2014]+)"
                   r"|(?:ok(?:ay)?|nope|hmm+|ugh|sorry|actually|but|and|so|yeah|yes|sure|also|again|"
                   r"literally|just|seriously)\b[\s,.!]*)\s*")
# an offer of help, in the assistant's voice: never a request of the person's
_OFFER = re.compile(r"(?i)\b(?:(?:don'?t|do not) hesitate to|feel free to)\s+(?:ask|reach out|contact|let me know)\b"
                    r"|\blet me know if (?:you|there)\b|\bi'?m (?:always )?(?:here|happy|glad) to help\b"
                    r"|\bif you have any (?:other |more |further )?questions\b")
_POLITE = re.compile(r"(?i)\b(?:please|pls|kindly)\b")
_ASK = re.compile(r"(?i)^(?:(?:could|can|would|will) you(?: please)?(?: just)?|i(?:'d| would) like you to|"
                  r"i want you to|i need you to|make sure (?:to|you)|remember to|try to|you should|you need to|"
                  r"you must|you have to|you've got to|let's)\s+")
_REASON = re.compile(r"(?i)(?:\s+so(?: that)?\s+(?=(?:the|i|you|he|she|they|we|it|my|your|his|her|our|their)\b)"
                     r"|\s*,\s*(?:like|e\.g\.|for example|for instance|such as)\b"
                     r"|\s+and\s+(?=(?:you|it|that|this|i)\b)"
                     r"|\s+(?:because|since|otherwise|or else)\b).*$")
_CONTINUES = re.compile(r"(?i)^(?:not|no|just|only|without|at least|at most|under|max|in|plain|never|nothing)\b"
                        r"|\b(?:max|maximum|only)$")
_IMPERATIVE = frozenset(
    "add address answer avoid be call change cut drop end explain fix format give grade include keep leave list "
    "lose make mention name put remove rephrase reply respond rewrite say score show shorten simplify skip start "
    "state stick stop summarise summarize tell translate try use write speak sign spell round check count "
    "describe double limit".split())
_NEGATIVE_START = re.compile(r"(?i)^(?:no|not(?! (?:quite|really|exactly|that|what|sure|bad|great|right|correct|it)\b)|"
                             r"don'?t|do not|never|without|less|fewer|more|only|just|in|plain)\b|^\w+(?: \w+)? only$")
_COMPARATIVE = re.compile(r"(?i)^(?:shorter|longer|simpler|friendlier|warmer|nicer|clearer|briefer|kinder|"
                          r"calmer|politer|plainer|more \w+|less \w+)\b")
_SAID = re.compile(r"(?i)^i\s+(?:(?:just|literally|already|clearly|did|specifically)\s+)*"
                   r"(?:said|asked(?: you)?(?: for| to)?|told you(?: to)?|wanted|want|need|prefer|meant)"
                   r"\s+(?:you\s+to\s+)?")
_TOO = re.compile(r"(?i)^(?:(?:that|this|it|the \w+)(?:'s| is| was| looks| sounds| reads)"
                  r"|way|much|far|still|a bit|bit)?"
                  r"\s*(?:way |much |far |a bit |still )?too\s+(\w+)")
_SHORTER = {"long", "wordy", "verbose", "lengthy", "much", "detailed"}
_LONGER = {"short", "brief", "terse", "thin", "vague"}
_MISSED = re.compile(r"(?i)^(?:you|it|that|this|the \w+)\s+(?:didn'?t|doesn'?t|did not|does not|don'?t|never|forgot to|"
                     r"failed to)\s+(give|include|mention|state|say|use|answer|explain|add|show|have|contain|list|name)"
                     r"\s+(?:me\s+|us\s+)?(.+)$")
_FORGOT = re.compile(r"(?i)^(?:you\s+)?(?:forgot|left out|missed|skipped|omitted)\s+(?:to\s+(\w+)\s+)?(.+)$")
_MISSING = re.compile(r"(?i)^(.+?)\s+(?:is|are)\s+missing$|^(?:where'?s|where is|where are|what'?s|what is|"
                      r"what are)\s+(.+?)\??$")
_SHOULD = re.compile(r"(?i)^(?:it|that|this|the \w+)\s+(?:should|must|needs to|has to)\s+(.+)$")
_NEEDS = re.compile(r"(?i)^(?:it|that|this|the \w+)\s+(?:needs|lacks|is missing)\s+(?!to\b)(.+)$")
_ABBREVIATION = re.compile(r"(?i)(?:\b(?:dr|mr|mrs|ms|prof|st|jr|sr|vs|etc|e\.g|i\.e)|\b[A-Z])\.$")
_VERB_FOR = {"have": "include", "contain": "include"}


def _clean(text: str) -> str:
    text = " ".join(_DONE.sub("", text).split())
    while (stripped := _LEAD.sub("", text, count=1).strip()) != text:  # "ok but ...", "No, sorry, ..."
        text = stripped
    return text


def _clause_request(text: str) -> str | None:
    """The request one clause makes, in its own words, or None."""
    text = text.strip(" ,.!?;:-")
    while (stripped := _ASK.sub("", _clean(text))) != text:
        text = stripped
    if not text:
        return None
    said = _SAID.match(text)
    if said:
        rest = text[said.end():]
        if re.match(r"(?i)(?:it|this|that)\b", rest):
            return f"make {rest}"
        return _clause_request(rest) or f"give {rest}"
    too = _TOO.match(text)
    if too:
        word = too.group(1).lower()
        return ("make it shorter" if word in _SHORTER
                else "make it longer" if word in _LONGER else f"make it less {word}")
    missed = _MISSED.match(text)
    if missed:
        verb = missed.group(1).lower()
        return f"{_VERB_FOR.get(verb, verb)} {missed.group(2)}"
    forgot = _FORGOT.match(text)
    if forgot:
        return f"{(forgot.group(1) or 'include').lower()} {forgot.group(2)}"
    missing = _MISSING.match(text)
    if missing:
        return f"{'give' if text.lower().startswith('what') else 'include'} {missing.group(1) or missing.group(2)}"
    needs = _NEEDS.match(text)
    if needs:
        return f"include {needs.group(1)}"
    should = _SHOULD.match(text)
    if should:
        rest = should.group(1)
        verb = rest.split()[0].lower()
        return rest if verb in _IMPERATIVE else f"make it {rest}" if verb != "to" else None
    first = text.split()[0].lower()
    if first in _IMPERATIVE or _NEGATIVE_START.match(text) or _COMPARATIVE.match(text):
        return text
    return None


def _request(sentence: str) -> str | None:
    """The request of one sentence: its first requesting clause and the clauses that continue it
    (", not a list", ", just plain text", ", two sentences max", another request); reasons and
    examples left out."""
    text = _REASON.sub("", _clean(sentence).strip(" ,.!?;:-"))
    text = " ".join(_POLITE.sub(" ", text).split())
    clauses = [c.strip(" .!?;:-") for c in text.split(",") if c.strip(" .!?;:-")]
    for index, clause in enumerate(clauses):
        request = _clause_request(clause)
        if request is None:
            continue
        for follow in clauses[index + 1:]:
            if not _CONTINUES.search(follow) and _clause_request(follow) is None:
                break
            request += f", {follow}"
        return request
    return None


def _request_parts(text: str) -> list[str]:
    """The distinct requests of a message, one per sentence (the requests of a sentence's ";"-clauses
    joined: "That's too long; keep it under 80 words" is one thing). Statements and polite requests
    ("Could you make it friendlier?") come first; another question ("What is the answer?") counts only
    when nothing else was asked."""
    if not isinstance(text, str) or not text.strip():
        return []
    sentences: list[str] = []
    for piece in (p for p in re.split(r"(?<=[.!?])\s+|\n+", text) if p.strip()):
        if sentences and _ABBREVIATION.search(sentences[-1]):  # "Dr. Ng" is one sentence
            sentences[-1] += f" {piece}"
        else:
            sentences.append(piece)

    def asks(sentence: str) -> bool:
        return not sentence.rstrip().endswith("?") or bool(_ASK.match(_clean(sentence)))

    sentences = [s for s in sentences if not _OFFER.search(s)]
    ordered = [s for s in sentences if asks(s)] + [s for s in sentences if not asks(s)]
    parts: list[str] = []
    for sentence in ordered:
        if parts and not asks(sentence):
            break
        clauses = [r for r in (_request(c) for c in re.split(r"\s*;\s*", sentence) if c.strip()) if r]
        request = "; ".join(dict.fromkeys(c[0].lower() + c[1:] if not c[:2].isupper() else c for c in clauses))
        if not request or any(relation(p, request) == "same" for p in parts):
            continue
        parts.append(request)
        if len(parts) == MAX_WISHES:
            break
    return parts


def _short_enough(wish: str) -> bool:
    return len(wish.split()) <= MAX_WISH_WORDS and len(wish_key(wish)) >= 3


def wish_from_correction(text: str) -> str | None:
    """The short wish a correction asks for (see the module docstring), or None when it asks for nothing:
    its first :data:`MAX_PARTS` requests in one line."""
    parts = _request_parts(text)[:MAX_PARTS]
    wish = "; ".join(parts)
    return wish if parts and _short_enough(wish) else None


def wishes_from_correction(text: str) -> list[str]:
    """Every request of a correction as a wish of its own (at most :data:`MAX_WISHES`), so that a person
    who lists several things at once ("Address the student by name. Keep it under 80 words.") leaves
    one wish per thing, each checked on its own by the rubric judge. Empty when it asks for nothing."""
    return [p for p in _request_parts(text) if _short_enough(p)]


def wish_key(text: str) -> str:
    """Case, punctuation and spacing removed: two wishes with the same key are the same wish."""
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())


# ------------------------------------------------------------------ same topic, contradiction
ASPECTS: dict[str, tuple[str, int]] = {  # word stem -> (aspect, sign); a negator before it flips the sign
    **{w: ("length", -1) for w in ("short", "shorter", "brief", "briefer", "concise", "shorten", "terse", "succinct")},
    **{w: ("length", +1)
       for w in ("long", "longer", "detail", "detailed", "elaborate", "thorough", "lengthy", "expand")},
    **{w: ("register", +1) for w in ("formal", "professional")},
    **{w: ("register", -1) for w in ("casual", "informal", "relaxed", "chatty")},
    **{w: ("warmth", +1) for w in ("friendly", "friendlier", "warm", "warmer", "encouraging", "kind", "kinder", "nice",
                                   "nicer", "positive", "gentle")},
    **{w: ("warmth", -1) for w in ("harsh", "blunt", "cold", "strict", "critical")},
    **{w: ("list", +1) for w in ("list", "bullet", "numbered", "point")},
    **{w: ("list", -1) for w in ("prose", "paragraph")},
    **{w: ("markdown", +1) for w in ("bold", "heading", "markdown", "italic", "header")},
    **{w: ("latex", +1) for w in ("latex", "tex")},
    **{w: ("emoji", +1) for w in ("emoji", "emojis", "emoticon")},
    # code or JSON in the reply ("no JSON", "not code"); "plain words", "normal sentences": none
    **{w: ("code", +1) for w in ("code", "json", "snippet")},
    **{w: ("code", -1) for w in ("plain", "normal")},
}
LANGUAGES = frozenset("english french german spanish italian chinese japanese portuguese dutch hindi arabic russian "
                      "korean polish turkish swedish greek".split())
_NEGATORS = frozenset("no not don't dont never without avoid stop less fewer drop remove lose skip cut".split())
_STOP = frozenset("a an the it its it's this that these those to of in on at by for with and or as is are be "
                  "me my i you your please just only more make keep use write give reply answer put so very "
                  "some any out one".split())


def _stem(word: str) -> str:
    word = word.lower().strip("'")
    word = re.sub(r"'s$", "", word)
    if len(word) > 4 and word.endswith("ier"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 5 and word.endswith("ed"):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def _words(wish: str) -> list[str]:
    return re.findall(r"[a-z0-9']+", wish.lower())


def content_words(wish: str) -> set[str]:
    """The wish's topic words: stop words, negators and bare numbers left out, crudely stemmed."""
    return {_stem(w) for w in _words(wish) if w not in _STOP and w not in _NEGATORS and not w.isdigit()} - {""}


def aspects(wish: str) -> dict[str, int]:
    """``{aspect: sign}`` of the wish's aspect words (:data:`ASPECTS`); a language is ``language:<name>``.

    A negator anywhere before an aspect word in the same clause flips its sign: "no numbered lists"
    is ``list: -1``, "less formal" is ``register: -1``.
    """
    found: dict[str, int] = {}
    for clause in re.split(r"[;,]|\bbut\b", wish.lower()):
        negated = False
        for word in _words(clause):
            if word in _NEGATORS or word.endswith("n't"):
                negated = True
                continue
            if word in LANGUAGES:
                found[f"language:{word}"] = -1 if negated else 1
                continue
            hit = ASPECTS.get(word) or ASPECTS.get(_stem(word))
            if hit:
                aspect, sign = hit
                found[aspect] = -sign if negated else sign
    return found


def relation(older: str, newer: str) -> str:
    """``"same"`` (a repeat or a rephrasing), ``"contradicts"`` or ``"other"``; see the module docstring."""
    if wish_key(older) == wish_key(newer):
        return "same"
    a, b = aspects(older), aspects(newer)
    languages_a = {k for k, v in a.items() if k.startswith("language:") and v > 0}
    languages_b = {k for k, v in b.items() if k.startswith("language:") and v > 0}
    if languages_a and languages_b and not languages_a & languages_b:
        return "contradicts"
    if any(a[k] != b[k] for k in a.keys() & b.keys()):
        return "contradicts"
    words_a, words_b = content_words(older), content_words(newer)
    if words_a and words_b and len(words_a & words_b) / len(words_a | words_b) >= 0.5:
        return "same"
    return "other"


# ------------------------------------------------------------------ a wish as a question about a reply
_POSITIVE = {"friendlier": "friendly", "warmer": "warm", "shorter": "short", "longer": "long", "simpler": "simple",
             "clearer": "clear", "nicer": "nice", "kinder": "kind", "briefer": "brief", "politer": "polite",
             "calmer": "calm", "plainer": "plain"}


def _positive(text: str) -> str:
    """Comparatives as plain adjectives: a single reply can be friendly, not "friendlier"."""
    text = re.sub(r"(?i)\b(?:a bit|a little|much|slightly)\s+", "", text)
    text = re.sub(r"(?i)\bmore\s+", "", text)
    return " ".join(_POSITIVE.get(w.lower(), w) for w in text.split())


def wish_question(wish: str) -> str:
    """The wish as a yes/no question about one reply ("address the student by name" -> "Does the reply
    address the student by name?"; "make it friendlier" -> "Is the reply friendly?"), each part of a
    joined wish asked together."""
    questions = []
    for part in (p.strip() for p in wish.split(";") if p.strip()):
        lower = part.lower()
        if match := re.match(r"(?i)(?:make|keep) (?:it|the \w+) (.+)$", part):
            questions.append(f"is the reply {_positive(match.group(1))}")
        elif match := re.match(r"(?i)be (.+)$", part):
            questions.append(f"is the reply {_positive(match.group(1))}")
        elif _COMPARATIVE.match(part) or lower.startswith(("less ", "fewer ")):
            questions.append(f"is the reply {_positive(part)}")
        elif re.match(r"(?i)(?:no|not|without|don'?t|do not|never|avoid)\b", part):
            questions.append(f"does the reply follow this: {part}")
        else:
            questions.append(f"does the reply {part}")
    text = " and ".join(questions)
    text = re.sub(r"\bmy\b", "the user's", re.sub(r"\b(?:me|I)\b", "the user", text))  # the wish is the user's
    return text[0].upper() + text[1:] + "?"
