"""The wish benchmark's labels: one hand-written check per wish, ``met(wish_id, request, reply) -> bool``.

Each check decides exactly what its wish says and nothing more, by code a reader can verify: regexes,
word and sentence counts, what the first or last line says, word lists (meat, sweets, screens), a
stop-word count for the language, numbers or names read off the request. A wish for which no such check
could be written honestly is not in the benchmark (see :mod:`benchmarks.wish_bench`). Two rules hold for
every check: an empty reply meets no wish, and "first line" / "last line" mean the first / last non-empty
line with markdown emphasis, heading marks and bullet marks taken off (``**Subject:** Hi`` reads
``Subject: Hi``).

These checks are the benchmark's hidden labels: a judge under test must never see or import them.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Callable

Check = Callable[[str, str], bool]  # (request, reply) -> met
CHECKS: dict[str, Check] = {}


def check(wish_id: str) -> Callable[[Check], Check]:
    def register(fn: Check) -> Check:
        if wish_id in CHECKS:
            raise ValueError(f"two checks for {wish_id}")
        CHECKS[wish_id] = fn
        return fn
    return register


def met(wish_id: str, request: str, reply: str) -> bool:
    """The label: whether ``reply`` (to ``request``) meets the wish ``wish_id``. An empty reply meets none."""
    if not reply.strip():
        return False
    return bool(CHECKS[wish_id](request, reply))


# ------------------------------------------------------------------ helpers
LIST_LINE = re.compile(r"^\s*(?:[-*\u2022+]|\d+[.)])\s+\S")
FENCE = re.compile(r"^\s*```")
MONTHS = ("January|February|March|April|May|June|July|August|September|October|November|December|"
          "Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec")
NUMBER_WORDS = {"0": "zero", "1": "one", "2": "two", "3": "three", "4": "four", "5": "five", "6": "six", "7": "seven",
                "8": "eight", "9": "nine", "10": "ten", "11": "eleven", "12": "twelve"}


def lines(reply: str) -> list[str]:
    """The non-empty lines, stripped."""
    return [line.strip() for line in reply.splitlines() if line.strip()]


def bare(line: str) -> str:
    """A line without markdown emphasis, heading marks, quote marks and a leading bullet."""
    line = line.replace("**", "").replace("__", "")
    line = re.sub(r"^[\s#>*_\-\u2022+]+", "", line)
    return line.strip().strip("*_").strip()


def first_line(reply: str) -> str:
    found = lines(reply)
    return bare(found[0]) if found else ""


def last_line(reply: str) -> str:
    found = lines(reply)
    return bare(found[-1]) if found else ""


def words(text: str) -> int:
    """Words: runs of non-space characters with a letter or digit in them (markdown marks are not words)."""
    return len(re.findall(r"\S*[^\W_]\S*", text))


def pieces(text: str) -> list[str]:
    """The text cut at sentence ends (. ! ? followed by a space or the end) and at line breaks."""
    cut = re.split(r"(?<=[.!?])\s+|\n+", text)
    return [p.strip() for p in cut if re.search(r"[^\W_]", p)]


def sentences(text: str) -> int:
    """Sentences of at least three words (a heading such as "Summary:" is not one)."""
    return sum(1 for p in pieces(text) if words(p) >= 3)


def list_lines(reply: str) -> list[str]:
    return [line for line in reply.splitlines() if LIST_LINE.match(line)]


def blocks(reply: str) -> list[tuple[str, str]]:
    """The fenced code blocks: (language tag, body). An unclosed block runs to the end."""
    found, tag, body, inside = [], "", [], False
    for line in reply.splitlines():
        if FENCE.match(line):
            if inside:
                found.append((tag, "\n".join(body)))
                inside, body = False, []
            else:
                inside, tag = True, line.strip()[3:].strip()
        elif inside:
            body.append(line)
    if inside:
        found.append((tag, "\n".join(body)))
    return found


def has(pattern: str, text: str) -> bool:
    return re.search(pattern, text, re.IGNORECASE) is not None


def numbers(text: str) -> list[str]:
    """The numbers written in digits, thousands separators dropped ("1,200" is 1200; "55-60k" is 55 and 60)."""
    return re.findall(r"\d+(?:\.\d+)?", re.sub(r"(?<=\d),(?=\d{3}\b)", "", text))


def keeps_numbers(source: str, reply: str) -> bool:
    """Every number of ``source`` is in the reply, in digits (or, up to twelve, as a word: "7" as "seven";
    a number in thousands, "40k" or "55-60k", also as 40000 or 55000)."""
    said = set(numbers(reply))
    thousands = set(re.findall(r"(\d+)(?=(?:\s*-\s*\d+)?k\b)", source))
    for number in set(numbers(source)):
        if number in said or (number in thousands and str(int(number) * 1000) in said):
            continue
        word = NUMBER_WORDS.get(number)
        if word is None or not has(rf"\b{word}\b", reply):
            return False
    return True


def pasted(request: str) -> str:
    """The text a request carries: everything after its first blank line."""
    return request.split("\n\n", 1)[1] if "\n\n" in request else request


# stop words that belong to one language only (none shared between the three lists)
STOP_WORDS = {
    "en": set("the and is are of to in it that this with for you was be have not but or on what when means mean "
              "they your can if which would should there their".split()),
    "es": set("el los las que y es del al por para con se su sus una significa cuando como pero más también "
              "puedes está esto eso usa usar decir muy hay porque ejemplo frase".split()),
    "fr": set("le les des est et du qui dans pour pas sur au aux avec ce cette sont ont été il elle nous vous "
              "leur mais ou plus très une sera entre".split()),
}


def stop_counts(text: str) -> dict[str, int]:
    text = re.sub(r"```.*?```|\"[^\"]*\"|“[^”]*”|\*\*[^*]*\*\*", " ", text, flags=re.DOTALL)  # quoted, bold, code
    tokens = re.findall(r"[^\W\d_]+", text.lower())
    return {lang: sum(t in vocab for t in tokens) for lang, vocab in STOP_WORDS.items()}


def mostly(text: str, lang: str) -> bool:
    """Written in ``lang``: at least three of its stop words, and twice as many as of any other language."""
    counts = stop_counts(text)
    others = max(n for other, n in counts.items() if other != lang)
    return counts[lang] >= 3 and counts[lang] >= 2 * others


def absent(pattern: str) -> Check:
    """A check met when ``pattern`` (case-insensitive) is nowhere in the reply."""
    return lambda request, reply: not has(pattern, reply)


CLOSING = re.compile(r"(?i)^(?:sincerely|regards|best|kind regards|warm regards|best regards|many thanks|yours|"
                     r"thank you|thanks|respectfully|cheers|best wishes|all the best|warmly)\b")


def signed(name: str, reply: str) -> bool:
    """The reply is signed ``name``: it is on the closing line ("Best, Sam") or one of the two lines after the
    last closing ("Kind regards,"), or, with no closing, on one of the last two lines."""
    found = [bare(line).lower() for line in lines(reply)]
    closings = [i for i, line in enumerate(found) if CLOSING.match(line)]
    where = found[closings[-1]:closings[-1] + 3] if closings else found[-2:]
    return any(name.lower() in line for line in where)


# ------------------------------------------------------------------ work_email
CHECKS["work_email.no_hope_well"] = absent(
    r"\bhope (?:this|that|my|the)?\s*(?:e-?mail|message|note|letter)?\s*finds you\b|"
    r"\bhope (?:you're|you are|you've been|you have been|you're all|you are all|all is|everyone is|this week is)\s+"
    r"(?:doing\s+|keeping\s+|going\s+)?(?:well|good|great|fine)\b")
CHECKS["work_email.sign_sam"] = lambda request, reply: last_line(reply).rstrip(".,!") == "Sam"
CHECKS["work_email.subject_first"] = lambda request, reply: has(r"^subject\s*:", first_line(reply))
CHECKS["work_email.under_120"] = lambda request, reply: words(reply) < 120
CHECKS["work_email.no_apology"] = absent(r"\b(?:sorry|apologi[sz]\w*|apolog(?:y|ies))\b")
CHECKS["work_email.no_exclamation"] = lambda request, reply: "!" not in reply


@check("work_email.hi_not_dear")
def _hi_not_dear(request: str, reply: str) -> bool:
    """Some line opens with "Hi", and "Dear" is nowhere."""
    return not has(r"\bdear\b", reply) and any(has(r"^hi\b", bare(line)) for line in lines(reply))


# ------------------------------------------------------------------ code_review
CHECKS["code_review.verdict_first"] = lambda request, reply: has(r"^(?:verdict\s*:\s*)?(?:lgtm|needs work)\b",
                                                                  first_line(reply))


@check("code_review.no_rewrite")
def _no_rewrite(request: str, reply: str) -> bool:
    """No fenced code and no line of code (a line that starts like a definition or statement of the snippet)."""
    return "```" not in reply and not re.search(r"(?m)^\s*(?:def |function |return |import |const |let |cursor\.)",
                                                reply)


CHECKS["code_review.line_refs"] = lambda request, reply: has(r"\blines? \d+", reply)
CHECKS["code_review.max_3_bullets"] = lambda request, reply: len(list_lines(reply)) <= 3
CHECKS["code_review.no_hints_docstrings"] = absent(r"\btype[- ]?hint|\btype annotations?\b|\bdocstrings?\b|\bjsdoc\b")
CHECKS["code_review.tldr_last"] = lambda request, reply: has(r"^tl;\s?dr\s*:", last_line(reply))
CHECKS["code_review.no_you"] = absent(r"\byou(?:r|rs|rself)?\b")


# ------------------------------------------------------------------ support_agent
def customer_first_name(request: str) -> str:
    return re.search(r"A customer, ([A-Z][a-z]+) ", request).group(1)


@check("support_agent.greet_first_name")
def _greet_first_name(request: str, reply: str) -> bool:
    """A line opens with a greeting followed by the customer's first name ("Hi Dana,", "Hello, Dana")."""
    name = re.escape(customer_first_name(request))
    return any(has(rf"^(?:hi|hello|hey|dear|good (?:morning|afternoon|evening))[,!]?\s+{name}\b", bare(line))
               for line in lines(reply))


@check("support_agent.quote_number")
def _quote_number(request: str, reply: str) -> bool:
    """Every "#<digits>" of the request is in the reply, with the # sign."""
    return all(re.search(rf"{re.escape(n)}(?!\d)", reply) for n in re.findall(r"#\d+", request))


CHECKS["support_agent.no_inconvenience"] = absent(r"\b(?:sorry|apologi[sz]e|apologies)\b[^.!?\n]{0,25}"
                                                  r"\binconvenience\b")
CHECKS["support_agent.sign_team"] = lambda request, reply: signed("Brightline Support Team", reply)
CHECKS["support_agent.under_90"] = lambda request, reply: words(reply) < 90
CHECKS["support_agent.timeframe"] = lambda request, reply: has(
    r"\b(?:\d+|one|two|three|four|five|six|seven|ten|a few|a couple of)\s*(?:(?:-|–|to)\s*\d+\s*)?-?"
    r"(?:business |working )?(?:hours?|days?)\b|\bwithin (?:a|an|the|the next) (?:hour|day)\b", reply)
CHECKS["support_agent.no_links"] = absent(r"https?://|\bwww\.|\]\(|(?<![@\w.-])(?:[\w-]+\.)+(?:com|org|net|io|co)\b")


@check("support_agent.i_not_we")
def _i_not_we(request: str, reply: str) -> bool:
    """The reply says "I" and never "we", "our" or (lower-case) "us"."""
    return (re.search(r"\bI\b", reply) is not None and not has(r"\b(?:we|we're|we've|we'll|we'd|our|ours)\b", reply)
            and re.search(r"\bus\b", reply) is None)


# ------------------------------------------------------------------ home_cook
@check("home_cook.metric")
def _metric(request: str, reply: str) -> bool:
    """At least one amount in g, kg, ml or l, and no cups, ounces, pounds, pints or quarts."""
    metric = has(r"\d+(?:[.,]\d+)?\s*(?:g|grams?|kg|kilograms?|ml|millilit(?:re|er)s?|l|lit(?:re|er)s?)\b", reply)
    text = re.sub(r"(?i)\b(?:a|one) cups? of (?:tea|coffee)\b", " ", reply)  # a drink served with it, not an amount
    return metric and not has(r"\b(?:cups?|oz|ounces?|pounds?|lbs?|pints?|quarts?)\b", text)


@check("home_cook.time_first_line")
def _time_first_line(request: str, reply: str) -> bool:
    """The first line gives a duration and says it is the whole time ("Total", "Time:", "ready in", "takes");
    a first line of prep or cooking time alone is not the total."""
    line = first_line(reply)
    duration = has(r"\d+\s*(?:(?:-|–|to)\s*\d+\s*)?(?:min(?:ute)?s?|hours?|hrs?|h)\b", line)
    return duration and has(r"\btotal\b|^time\s*:|\bready in\b|\btakes\b|\bin all\b|\baltogether\b", line)


MEAT = (r"\b(?:chicken|beef|pork|bacon|ham|lamb|mutton|veal|fish|salmon|tuna|cod|shrimps?|prawns?|anchov(?:y|ies)|"
        r"sausages?|turkey|duck|meat|meats|chorizo|pancetta|prosciutto|salami|pepperoni|gelatine?|crab|lobster|"
        r"mussels|clams|squid|seafood|lard)\b")


@check("home_cook.vegetarian")
def _vegetarian(request: str, reply: str) -> bool:
    """No meat or fish word (:data:`MEAT`); "meat-free", "meatless" and veggie sausages are not meat."""
    text = re.sub(r"(?i)\b(?:veggie|vegetarian|vegan|plant-based|meat-free) (?:sausages?|burgers?)\b|"
                  r"\bmeat[- ]free\b|\bmeatless\b|\bno meat\b|\bwithout meat\b", " ", reply)
    return not has(MEAT, text)


CHECKS["home_cook.numbered_steps"] = lambda request, reply: len(
    re.findall(r"(?im)^\s*(?:\**step\s*)?\d+[.):]\**\s", reply)) >= 2
CHECKS["home_cook.serves_four"] = lambda request, reply: has(
    r"\b(?:serves|servings?|portions?|feeds|yields?)\s*:?\s*(?:4|four)\b(?!\s*(?:min|minutes|hours|cups|g\b|ml))|"
    r"\b(?:4|four)\s+(?:servings|people|portions|persons|adults)\b|"
    r"\bfor (?:4|four)\b(?!\s*(?:min|minutes|hours|seconds|cups|g\b|ml|tbsp|tsp|slices|pancakes))", reply)


@check("home_cook.no_oven")
def _no_oven(request: str, reply: str) -> bool:
    """No oven, baking, roasting, broiling or preheating ("baking powder" and "baking soda" are ingredients)."""
    text = re.sub(r"(?i)\bbaking (?:powder|soda)\b", " ", reply)
    return not has(r"\b(?:ovens?|bake[ds]?|baking|roast(?:s|ed|ing)?|broil(?:ed|ing)?|preheat(?:ed)?)\b", text)


CHECKS["home_cook.leftovers_last"] = lambda request, reply: has(r"^leftovers\s*:", last_line(reply))


# ------------------------------------------------------------------ traveller
CHECKS["traveller.no_prices"] = absent(
    r"[$€£¥]|\b(?:usd|eur|euros?|dollars?|pounds?|pesos?|yen|gbp|mxn|prices?|priced|costs?|costing|fees?)\b")


@check("traveller.times_of_day")
def _times_of_day(request: str, reply: str) -> bool:
    """Morning, Afternoon and Evening each open a line (or label one: "Morning:") once per day of the plan
    (the days are its "Day N" labels; one day when there are none)."""
    days = max(len(set(re.findall(r"(?i)\bday\s*(\d+)\b", reply))), 1)
    for part in ("morning", "afternoon", "evening"):
        label = rf"(?im)^[\W\d_]*(?:day\s*\d+\W*)?(?:in the\s+)?{part}\b|\b{part}\s*\**\s*[:\-–—]"
        if len(re.findall(label, reply)) < days:
            return False
    return True


CHECKS["traveller.no_car"] = absent(r"\b(?:rent(?:ing|ed)?|hir(?:e|ing))\s+(?:a\s+)?car\b|\bcar\s+(?:rental|hire)\b|"
                                    r"\brental\s+cars?\b")
CHECKS["traveller.one_must_eat"] = lambda request, reply: len(re.findall(r"(?i)must eat[*_\s]*:", reply)) == 1


@check("traveller.km")
def _km(request: str, reply: str) -> bool:
    """Some distance in km, and no mile as a unit: a lower-case "mile(s)" or "<number> mi" (the Royal Mile is a
    street)."""
    return (has(r"\d+(?:[.,]\d+)?\s*(?:km|kilomet(?:re|er)s?)\b", reply)
            and re.search(r"\bmiles?\b|\d\s*mi\b", reply) is None)




@check("traveller.end_one_question")
def _end_one_question(request: str, reply: str) -> bool:
    """The last line ends with a question mark and holds only that one."""
    line = re.sub(r"[\s*_\"'”)\]\U0001F300-\U0001FAFF\u2600-\u27BF]+$", "", last_line(reply))
    return line.endswith("?") and line.count("?") == 1


CHECKS["traveller.call_jo"] = lambda request, reply: re.search(r"\bJo\b", reply) is not None


# ------------------------------------------------------------------ summaries
@check("summaries.exactly_3_bullets")
def _exactly_3_bullets(request: str, reply: str) -> bool:
    """Three non-empty lines, each a list item."""
    found = lines(reply)
    return len(found) == 3 and all(LIST_LINE.match(line) for line in found)


CHECKS["summaries.one_sentence"] = lambda request, reply: sentences(reply) == 1
CHECKS["summaries.keep_numbers"] = lambda request, reply: keeps_numbers(pasted(request), reply)
CHECKS["summaries.in_short_start"] = lambda request, reply: has(r"^in short\b", first_line(reply))


@check("summaries.no_meta_opening")
def _no_meta_opening(request: str, reply: str) -> bool:
    """The first line opens neither with the text as a thing ("The text", "This article", "The author", ...)
    nor with a preamble ("Here is", "Sure")."""
    line = first_line(reply)
    meta = has(r"^(?:according to |in )?(?:the|this)\s+(?:text|article|passage|memo|abstract|document|piece|"
               r"excerpt|extract|author|authors|writer|review|reviewer|post|paragraph|email)\b", line)
    return not meta and not has(r"^(?:here(?:'s| is| are)|sure|certainly|of course)\b", line)


CHECKS["summaries.max_40"] = lambda request, reply: words(reply) <= 40
CHECKS["summaries.french"] = lambda request, reply: mostly(reply, "fr")


def _tokens(text: str) -> list[str]:
    return re.findall(r"[^\W_]+", text.lower())


@check("summaries.own_words")
def _own_words(request: str, reply: str) -> bool:
    """No sentence of the text (of five words or more) is in the reply word for word, and no run of ten words
    within one sentence of the text is in one sentence or line of the reply."""
    said = [" " + " ".join(_tokens(p)) + " " for p in pieces(reply)]
    for sentence in re.split(r"(?<=[.!?])\s+", pasted(request)):
        tokens = _tokens(sentence)
        runs = [" ".join(tokens)] if len(tokens) >= 5 else []
        runs += [" ".join(tokens[i:i + 10]) for i in range(len(tokens) - 9)]
        if any(f" {run} " in piece for run in runs for piece in said):
            return False
    return True


# ------------------------------------------------------------------ study_notes
@check("study_notes.bold_terms")
def _bold_terms(request: str, reply: str) -> bool:
    """At least two bold spans inside lines that say more than the span (a bold heading is not a term)."""
    terms = 0
    for line in lines(reply):
        rest = re.sub(r"\*\*[^*\n]+\*\*|__[^_\n]+__", "", line)
        spans = len(re.findall(r"\*\*[^*\n]+\*\*|__[^_\n]+__", line))
        if spans and re.search(r"[^\W_]", rest):
            terms += spans
    return terms >= 2


@check("study_notes.quiz_end")
def _quiz_end(request: str, reply: str) -> bool:
    """The last three lines are questions (end with "?") and the line before them is not."""
    found = [re.sub(r"[\s*_]+$", "", line) for line in lines(reply)]
    if len(found) < 3 or not all(line.endswith("?") for line in found[-3:]):
        return False
    return len(found) == 3 or not found[-4].endswith("?")


CHECKS["study_notes.mnemonic"] = lambda request, reply: has(r"mnemonic[*_\s]*:", reply)
CHECKS["study_notes.hash_headings"] = lambda request, reply: len(re.findall(r"(?m)^\s*##(?!#)\s+\S", reply)) >= 2


@check("study_notes.short_bullets")
def _short_bullets(request: str, reply: str) -> bool:
    """Some bullets, each under 15 words (its mark not counted)."""
    found = list_lines(reply)
    return bool(found) and all(words(re.sub(r"^\s*(?:[-*\u2022+]|\d+[.)])\s+", "", line)) < 15 for line in found)


CHECKS["study_notes.big_idea_first"] = lambda request, reply: has(r"^big idea\s*:", first_line(reply))


@check("study_notes.no_years")
def _no_years(request: str, reply: str) -> bool:
    """No year (1000-2099, not a quantity such as "1500 ml") and no day-and-month date ("14 July", "July 14")."""
    for match in re.finditer(r"(?<![\d,.])(1\d{3}|20\d{2})s?\b(?![,.]\d)", reply):
        if not re.match(r"\s*(?:ml|l|litres?|liters?|times|beats|kg|g|%|km|m|calories)\b", reply[match.end():]):
            return False
    return not has(rf"\b\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:{MONTHS})\b|\b(?:{MONTHS})\s+\d{{1,2}}\b", reply)


CHECKS["study_notes.think_of_it"] = lambda request, reply: has(r"\bthink of it (?:like|as)\b", reply)


# ------------------------------------------------------------------ cover_letter
def company(request: str) -> str:
    return re.search(r"\bat ([A-Z][\w']*(?: [A-Z][\w']*)*)", request).group(1)


CHECKS["cover_letter.no_passionate"] = absent(r"\bpassionate(?:ly)?\b")


def unaccented(text: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))


CHECKS["cover_letter.company_twice"] = lambda request, reply: len(  # "Café" is "Cafe"
    re.findall(re.escape(unaccented(company(request))), unaccented(reply), re.IGNORECASE)) >= 2
CHECKS["cover_letter.sign_full_name"] = lambda request, reply: signed("Alex Moreno", reply)
CHECKS["cover_letter.no_placeholders"] = absent(r"\[|\]|\{\{|<[A-Za-z][^>\n]*>|\bX{3,}\b|\byour name\b")
CHECKS["cover_letter.under_250"] = lambda request, reply: words(reply) < 250
CHECKS["cover_letter.no_dear_hiring"] = absent(r"\bdear hiring manager\b")
CHECKS["cover_letter.digits_duration"] = lambda request, reply: has(r"\b\d+(?:\.\d+)?\s*-?\s*(?:years?|months?)\b",
                                                                    reply)


# ------------------------------------------------------------------ parent
SCREENS = (r"\b(?:tv|television|tablets?|ipads?|screens?|video ?games?|movies?|films?|youtube|netflix|apps?|"
           r"consoles?|nintendo|minecraft)\b|\b(?:games?|videos?|watch\w*)\s+(?:\w+\s+){0,3}on (?:a |your |the )?"
           r"(?:smart)?phones?\b")
CHECKS["parent.no_screens"] = lambda request, reply: not has(SCREENS, re.sub(
    r"(?i)\bscreen[- ]free\b|\b(?:no|without|away from|off) (?:the )?screens?\b", " ", reply))


@check("parent.five_numbered")
def _five_numbered(request: str, reply: str) -> bool:
    """Top-level numbered lines (not indented; "**1.", "### 1." count) numbered exactly 1 to 5."""
    marks = [int(m) for m in re.findall(r"(?m)^ ?(?:#{1,6}\s*|\*\*|__)?(\d+)[.)]\s", reply)]
    return sorted(marks) == [1, 2, 3, 4, 5]


def ends_with_section(reply: str, heading: str, item: Callable[[str], bool]) -> bool:
    """The reply's last ``heading`` line (a regex, read at the start of a line) is followed only by lines that
    are ``item`` (at least one), or holds the items itself after a colon."""
    found = lines(reply)
    heads = [i for i, line in enumerate(found) if has(rf"^{heading}", bare(line))]
    if not heads:
        return False
    after = found[heads[-1] + 1:]
    if not after:
        return has(rf"^{heading}\s*:\s*\S", bare(found[heads[-1]]))
    return all(item(line) for line in after)


@check("parent.shopping_list_end")
def _shopping_list_end(request: str, reply: str) -> bool:
    """A "Shopping list" line, followed only by list items (at least one), or holding the items itself."""
    return ends_with_section(reply, r"shopping list\b", lambda line: bool(LIST_LINE.match(line)))


SWEETS = (r"\b(?:sweets|sweet treats?|candy|candies|cakes?|cupcakes?|cookies?|biscuits?|chocolates?|ice[- ]creams?|"
          r"ice lollies|lollipops?|lollies|sugary|sugar|marshmallows?|doughnuts?|donuts?|brownies?|muffins?|sprinkles|"
          r"frosting|icing|gumm(?:y|ies)|soda|fizzy drinks?|popsicles?|s'mores|puddings?|jelly beans?)\b")


@check("parent.no_sweets")
def _no_sweets(request: str, reply: str) -> bool:
    """No sweet word (:data:`SWEETS`); "sugar-free", "no sugar" and rice cakes are fine."""
    text = re.sub(r"(?i)\bsugar[- ]free\b|\bno (?:added )?sugar\b|\bwithout sugar\b|\brice cakes?\b", " ", reply)
    return not has(SWEETS, text)


CHECKS["parent.hi_maria"] = lambda request, reply: (
    re.search(r"\bMaria\b", lines(reply)[0]) is not None
    and has(r"\b(?:hi|hello|hey|hiya|good (?:morning|afternoon|evening))\b", lines(reply)[0]))


def kids(request: str) -> list[str]:
    return re.findall(r"\b([A-Z][a-z]+), \d+", request)


CHECKS["parent.kid_names"] = lambda request, reply: all(re.search(rf"\b{k}\b", reply) for k in kids(request))
CHECKS["parent.safety_last"] = lambda request, reply: has(r"^safety(?: note| tip)?\s*:", last_line(reply))


# ------------------------------------------------------------------ product_copy
CHECKS["product_copy.no_superlatives"] = absent(r"\b(?:best|perfect|perfectly|ultimate)\b")
CHECKS["product_copy.keep_specs"] = lambda request, reply: keeps_numbers(request, reply)
CHECKS["product_copy.we_voice"] = lambda request, reply: (
    has(r"\b(?:we|our|ours|we're|we've)\b", reply) and not has(r"\bthe brand\b", reply))
CHECKS["product_copy.under_80"] = lambda request, reply: words(reply) < 80
CHECKS["product_copy.cornwall_last"] = lambda request, reply: last_line(reply).rstrip(".!").lower() == \
    "handmade in cornwall"
CHECKS["product_copy.no_questions"] = lambda request, reply: "?" not in reply


@check("product_copy.caps_title")
def _caps_title(request: str, reply: str) -> bool:
    """The first line is in capitals (ten words at most, some letters, none lower-case) and more lines follow."""
    found = lines(reply)
    title = first_line(reply)
    return (len(found) >= 2 and re.search(r"[^\W\d_]{2}", title) is not None and title == title.upper()
            and words(title) <= 10)


# ------------------------------------------------------------------ fitness
CHECKS["fitness.bodyweight_only"] = absent(
    r"\b(?:dumbbells?|barbells?|kettlebells?|machines?|(?:resistance|exercise|loop|elastic) bands?|weights|weighted|"
    r"treadmills?|leg press|cables?|bench press|medicine balls?|exercise balls?|stability balls?|pull-?up bars?|"
    r"jump ropes?|skipping ropes?|foam rollers?)\b")
CHECKS["fitness.sets_x_reps"] = lambda request, reply: has(r"\b\d+\s*[x×]\s*\d+\b", reply)
CHECKS["fitness.no_diet"] = absent(
    r"\b(?:diets?|dietary|nutrition(?:al)?|nutrients?|calories?|protein|carbs?|carbohydrates?|meals?|snacks?|foods?|"
    r"eat|eats|eating|drink|drinks|drinking|water|hydrat\w*|supplements?)\b")
CHECKS["fitness.call_chris"] = lambda request, reply: re.search(r"\bChris\b", reply) is not None
CHECKS["fitness.max_4_bullets"] = lambda request, reply: len(list_lines(reply)) <= 4
CHECKS["fitness.no_doctor"] = absent(r"\b(?:doctors?|physicians?|gp|medical (?:professional|advice|provider)|"
                                     r"healthcare (?:professional|provider)|physiotherapists?|physio|"
                                     r"physical therapists?)\b")
CHECKS["fitness.seconds"] = lambda request, reply: has(
    r"\b\d+\s*(?:(?:-|–|to)\s*\d+\s*)?-?(?:s|secs?|seconds?)\b", reply)


# ------------------------------------------------------------------ english_learner
CHECKS["english_learner.spanish"] = lambda request, reply: mostly(reply, "es")
CHECKS["english_learner.example_line"] = lambda request, reply: any(
    has(r"^(?:examples?|ejemplos?)(?:\s+sentences?|\s*\d+)?\s*:", bare(line)) for line in lines(reply))
CHECKS["english_learner.short_sentences"] = lambda request, reply: all(words(p) <= 15 for p in pieces(reply))
CHECKS["english_learner.no_jargon"] = absent(
    r"\b(?:prepositions?|prepositional|infinitives?|auxiliar(?:y|ies)|gerunds?|participles?|preposici[oó]n\w*|"
    r"infinitivos?|auxiliar(?:es)?|gerundios?|participios?)\b")
CHECKS["english_learner.under_100"] = lambda request, reply: words(reply) < 100
CHECKS["english_learner.call_marta"] = lambda request, reply: re.search(r"\bMarta\b", reply) is not None


def asked_phrases(request: str) -> list[str]:
    return re.findall(r'"([^"]+)"', request)


@check("english_learner.bold_phrase")
def _bold_phrase(request: str, reply: str) -> bool:
    """Each phrase the request quotes is inside some bold span of the reply."""
    spans = [(a or b).lower() for a, b in re.findall(r"\*\*([^*\n]+)\*\*|__([^_\n]+)__", reply)]
    return all(any(phrase.lower() in span for span in spans) for phrase in asked_phrases(request))


# ------------------------------------------------------------------ meeting_notes
@check("meeting_notes.action_items_end")
def _action_items_end(request: str, reply: str) -> bool:
    """An "Action items" line, followed only by list items or table rows (at least one), or holding the items
    itself."""
    return ends_with_section(reply, r"action items?\b",
                             lambda line: bool(LIST_LINE.match(line)) or line.startswith("|"))


@check("meeting_notes.dd_mm")
def _dd_mm(request: str, reply: str) -> bool:
    """Some date written DD/MM (day up to 31, month up to 12; a year may follow: 14/05/2026), none written with
    a month name next to a day."""
    dates = [(int(d), int(m)) for d, m in
             re.findall(r"(?<![\d/])(\d{1,2})/(\d{1,2})(?:/\d{2,4})?(?![\d/])", reply)]
    if not dates or any(not (1 <= d <= 31 and 1 <= m <= 12) for d, m in dates):
        return False
    return not has(rf"\b\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:{MONTHS})\b|\b(?:{MONTHS})\s+\d{{1,2}}\b", reply)


@check("meeting_notes.bullets_only")
def _bullets_only(request: str, reply: str) -> bool:
    """Every line is a list item or a heading (a "#" line, a bold line, or a line of six words at most ending
    in ":"), and some are list items."""
    found = lines(reply)

    def heading(line: str) -> bool:
        return (line.startswith("#") or re.fullmatch(r"\*\*[^*]+\*\*:?", line) is not None
                or (line.rstrip("*").endswith(":") and words(line) <= 6))

    return any(LIST_LINE.match(line) for line in found) and all(
        LIST_LINE.match(line) or heading(line) for line in found)


CHECKS["meeting_notes.no_filler"] = absent(r"\bthe meeting (?:began|started|opened|kicked off|commenced)\b|"
                                           r"\bthe (?:team|group) (?:met|discussed)\b|"
                                           r"\b(?:during|in) (?:the|this|today's) meeting\b")
CHECKS["meeting_notes.not_longer"] = lambda request, reply: words(reply) <= words(pasted(request))
CHECKS["meeting_notes.every_figure"] = lambda request, reply: keeps_numbers(pasted(request), reply)


# ------------------------------------------------------------------ analyst_code
CHECKS["analyst_code.code_first"] = lambda request, reply: reply.lstrip().startswith("```")
CHECKS["analyst_code.one_block"] = lambda request, reply: len(blocks(reply)) == 1


@check("analyst_code.no_comments")
def _no_comments(request: str, reply: str) -> bool:
    """Some code, and no comment in it: no "#", "--" or "//" comment, no triple-quoted docstring."""
    found = blocks(reply)
    return bool(found) and not any(re.search(r"(?m)(?:^|\s)(?:#|--|//)|\"\"\"|'''", body) for _, body in found)


@check("analyst_code.short_after")
def _short_after(request: str, reply: str) -> bool:
    """Some code, and at most two sentences after the last block."""
    if not blocks(reply):
        return False
    after = re.split(r"(?m)^\s*```.*$", reply)[-1]
    return sentences(after) <= 2


CHECKS["analyst_code.no_pip"] = absent(r"\b(?:pip3?|conda|poetry)\s+(?:install|add)\b|\bpython3? -m pip\b")
CHECKS["analyst_code.stdlib_only"] = absent(r"\b(?:pandas|numpy|polars|scipy)\b|\bpd\.|\bnp\.")


@check("analyst_code.lang_tag")
def _lang_tag(request: str, reply: str) -> bool:
    """Some code, and every block opens with a language tag (```python, ```sql)."""
    found = blocks(reply)
    return bool(found) and all(re.match(r"[A-Za-z]", tag) for tag, _ in found)
