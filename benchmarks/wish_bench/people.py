"""The people of the wish benchmark: kinds of person, their requests, and their wishes in their own words.

Written for this benchmark alone, apart from the bundled personas (no homework, no grading). Each
:class:`Kind` is one sort of person with 3-5 self-contained requests (a request that refers to a text
includes it) and 6-8 wishes; each wish has a hand-written reference check in
:mod:`benchmarks.wish_bench.checks` under the same id.

The split is fixed by the wish id: ``split_of(id)`` is ``dev`` when the first byte of
``sha256("wish-bench/v3/" + id)`` is even, else ``test`` (50 dev, 50 test). The salt ``v3`` is the first
of v1, v2, ... under which every kind of person has at least two wishes in each split and the splits
differ by six wishes at most; it was chosen by that rule alone, before any reply existed, and stays fixed
(a wish added later keeps the split its id hashes to). Nothing may be tuned on the test split
(thresholds, prompts, few-shot examples, cue lists, check-writing prompts): it exists to report a
judge's figures.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

SPLITS = ("dev", "test")
SALT = "wish-bench/v3/"


@dataclass(frozen=True)
class Wish:
    id: str  # "<kind>.<name>", the key of its check
    text: str  # what the person said, in their own words


@dataclass(frozen=True)
class Kind:
    id: str
    who: str  # one line about the person
    requests: tuple[str, ...]
    wishes: tuple[Wish, ...]


def split_of(wish_id: str) -> str:
    """``dev`` or ``test``, by a stable hash of the wish id (see the module docstring)."""
    return SPLITS[hashlib.sha256(f"{SALT}{wish_id}".encode()).digest()[0] % 2]


def _w(kind: str, *pairs: tuple[str, str]) -> tuple[Wish, ...]:
    return tuple(Wish(f"{kind}.{name}", text) for name, text in pairs)


KINDS: tuple[Kind, ...] = (
    Kind(
        "work_email", "an office worker, Sam, who drafts work emails",
        (
            "Write an email to my manager Priya asking to move our Thursday 1:1 to Friday morning, because I have "
            "a dentist appointment on Thursday.",
            "Draft an email to the facilities team saying the third-floor printer has been jammed since Monday and "
            "we need it fixed before the quarterly report goes out.",
            "Write a short email to a client, Mr. Okafor, confirming that the revised quote will reach him by "
            "Wednesday.",
            "Write an email to my team announcing that the office will be closed next Monday for the public holiday.",
        ),
        _w("work_email",
           ("no_hope_well", "pls stop starting every email with 'I hope this finds you well' or any 'hope you're "
                            "well' line"),
           ("sign_sam", "sign them off with just 'Sam', and don't add notes after the email"),
           ("subject_first", "put the subject line first, like 'Subject: ...', no 'Here's a draft' before it"),
           ("under_120", "keep the whole thing under 120 words"),
           ("no_apology", "don't apologise for anything in my emails, it makes me look weak"),
           ("no_exclamation", "no exclamation marks, they read as unprofessional"),
           ("hi_not_dear", "greet people with 'Hi', never 'Dear'")),
    ),
    Kind(
        "code_review", "a senior developer who asks for reviews of small snippets",
        (
            "Review this Python function:\n```python\ndef avg(xs):\n    total = 0\n    for x in xs:\n"
            "        total += x\n    return total / len(xs)\n```",
            "Can you review this JavaScript?\n```javascript\nfunction getUser(id) {\n"
            "  return fetch('/api/users/' + id).then(r => r.json())\n}\n```",
            "Review this, please:\n```python\ndef find_orders(cursor, name):\n"
            "    cursor.execute(\"SELECT * FROM orders WHERE customer = '\" + name + \"'\")\n"
            "    return cursor.fetchall()\n```",
            "Quick review?\n```python\nimport json\n\ndef read_config(path):\n    f = open(path)\n"
            "    data = json.load(f)\n    return data\n```",
        ),
        _w("code_review",
           ("verdict_first", "start your review with either LGTM or NEEDS WORK, then the details"),
           ("no_rewrite", "don't paste a rewritten version of my code, describe the problems in words"),
           ("line_refs", "refer to the code by line number, like 'line 3'"),
           ("max_3_bullets", "three bullet points at most, I don't read past that"),
           ("no_hints_docstrings", "never suggest adding type hints or docstrings, we don't use them"),
           ("tldr_last", "end with a one-line summary that starts with 'TL;DR:'"),
           ("no_you", "keep it impersonal: never say 'you' or 'your', talk about 'the code'")),
    ),
    Kind(
        "support_agent", "a customer support agent at Brightline who drafts replies to customers",
        (
            "A customer, Dana Whitfield, wrote: \"My order #48213 arrived with a cracked mug. I want a replacement, "
            "not a refund.\" Draft my reply.",
            "A customer, Marcus Lee, wrote: \"I was charged twice for my subscription this month (invoice #7731). "
            "Please fix this.\" Write a reply I can send.",
            "A customer, Aisha Rahman, wrote: \"How do I reset my password? The link in your email doesn't work. "
            "My account number is #100482.\" Reply to her.",
            "A customer, Tom Becker, wrote: \"Your app keeps logging me out every few minutes on my Android phone. "
            "Ticket #5590 has been open for a week.\" Draft a response.",
        ),
        _w("support_agent",
           ("greet_first_name", "greet the customer by their first name"),
           ("quote_number", "always quote their order/ticket number back to them, with the # sign"),
           ("no_inconvenience", "never write 'sorry for the inconvenience', customers hate that line"),
           ("sign_team", "sign off as 'The Brightline Support Team'"),
           ("under_90", "keep replies under 90 words, people read them on their phones"),
           ("timeframe", "always give the customer a timeframe in hours or days"),
           ("no_links", "don't put any links or URLs in the reply"),
           ("i_not_we", "write as me: 'I', not 'we' or 'our team'")),
    ),
    Kind(
        "home_cook", "a vegetarian home cook without an oven who asks for recipes",
        (
            "Give me a recipe for a simple weeknight tomato pasta.",
            "How do I make pancakes from scratch?",
            "I have chickpeas, rice and a bag of spinach. What can I cook tonight?",
            "What's a quick breakfast I can make with oats?",
        ),
        _w("home_cook",
           ("metric", "list the ingredients with amounts in grams or ml, no cups, ounces or pounds"),
           ("time_first_line", "make the first line the total time, e.g. 'Total: 30 min'"),
           ("vegetarian", "I'm vegetarian, so no meat or fish in anything you suggest"),
           ("numbered_steps", "number the steps please"),
           ("serves_four", "always scale it for four people and say so"),
           ("no_oven", "I don't have an oven, so nothing that needs baking or roasting"),
           ("leftovers_last", "finish with a line starting 'Leftovers:' telling me how to keep it")),
    ),
    Kind(
        "traveller", "a traveller, Jo, who plans trips without a car",
        (
            "Plan a 3-day trip to Lisbon for me.",
            "What should I see in one day in Kyoto?",
            "I'm going to Mexico City for a long weekend in March. Any suggestions?",
            "Help me plan a weekend in Edinburgh on a budget.",
        ),
        _w("traveller",
           ("no_prices", "don't mention prices or costs at all"),
           ("times_of_day", "split each day into Morning, Afternoon and Evening"),
           ("no_car", "never suggest renting a car, I don't have a licence"),
           ("one_must_eat", "add exactly one 'Must eat:' line with a local dish"),
           ("km", "tell me how far things are in km, never miles"),
           ("end_one_question", "end with one question to me"),
           ("call_jo", "call me Jo")),
    ),
    Kind(
        "summaries", "a busy reader who pastes texts and wants summaries",
        (
            "Summarise this:\n\nThe city council voted 7 to 2 on Tuesday to build 12 km of protected bike lanes "
            "along Harbour Road and Mill Street. Work starts in April and should take 18 months. Shop owners on "
            "Mill Street worried about losing 40 parking spaces, so the plan moves them to a new car park behind "
            "the library. The council expects cycling trips in the centre to double by 2028.",
            "Summarise this:\n\nFrom 1 June, staff no longer need a manager's approval for expenses under 50 euros. "
            "Receipts must still be uploaded within 14 days, or the claim is rejected. Train travel is now the "
            "default for trips under 500 km; flights need a written reason. Hotel stays are capped at 120 euros a "
            "night in most cities and 180 in London and Paris.",
            "Summarise this:\n\nIn a study of 64 adults, people who slept for 8 hours after learning a list of "
            "words remembered 20 percent more of them the next day than people who stayed awake. The effect was "
            "strongest for words learned in the last hour before sleep. A second group that napped for 90 minutes "
            "showed about half the benefit. The authors say deep sleep seems to help the brain store new memories.",
            "Summarise this review:\n\nI bought the Corvo Air headphones three months ago. The sound is clear and the "
            "battery really does last about 30 hours. Noise cancelling is good on trains but weak on planes. After "
            "two months the left ear cushion started to peel, and support took 10 days to send a new one. For 89 "
            "pounds they are fine, but I expected better build quality.",
        ),
        _w("summaries",
           ("exactly_3_bullets", "exactly three bullet points and nothing else"),
           ("one_sentence", "give me the summary in one sentence"),
           ("keep_numbers", "keep all the numbers from the text in the summary"),
           ("in_short_start", "begin with 'In short:'"),
           ("no_meta_opening", "don't open with 'The text...', 'This article...' or 'The author...', just start "
                               "with the content"),
           ("max_40", "40 words max"),
           ("french", "write the summary in French please"),
           ("own_words", "put it in your own words, don't copy whole sentences from the text")),
    ),
    Kind(
        "study_notes", "a university student who turns topics into revision notes",
        (
            "Make me study notes on photosynthesis.",
            "Notes on the causes of the French Revolution for my exam.",
            "Explain supply and demand as revision notes.",
            "Study notes on how the heart pumps blood.",
        ),
        _w("study_notes",
           ("bold_terms", "put the key terms in bold"),
           ("quiz_end", "the very last thing should be 3 quiz questions for me, no answers"),
           ("mnemonic", "give me a mnemonic to remember it, labelled 'Mnemonic:'"),
           ("hash_headings", "use ## headings for the sections"),
           ("short_bullets", "keep each bullet under 15 words"),
           ("big_idea_first", "open with a line that starts 'Big idea:'"),
           ("no_years", "skip exact dates and years, I never remember them anyway"),
           ("think_of_it", "always give one comparison that starts with 'Think of it like'")),
    ),
    Kind(
        "cover_letter", "a job seeker, Alex Moreno, writing cover letters",
        (
            "Write a cover letter for a junior data analyst job at Northwind Logistics. I have a statistics degree "
            "and did a six-month internship at a bank.",
            "Cover letter for a barista position at Bean There Cafe. I've worked two years in retail and I love "
            "coffee.",
            "Help me write a cover letter for a customer success role at Lumio, a software company. I spent three "
            "years in a call centre.",
        ),
        _w("cover_letter",
           ("no_passionate", "never use the word 'passionate'"),
           ("company_twice", "mention the company's name at least twice"),
           ("sign_full_name", "sign it with my name, Alex Moreno"),
           ("no_placeholders", "no [brackets] or placeholders for me to fill in, write it complete"),
           ("under_250", "under 250 words, recruiters skim"),
           ("no_dear_hiring", "don't start with 'Dear Hiring Manager'"),
           ("digits_duration", "say how long I've done things in digits, like '2 years' or '6 months'")),
    ),
    Kind(
        "parent", "a parent, Maria, planning activities for her kids",
        (
            "My kids (Leo, 6, and Mia, 9) are stuck at home on a rainy Saturday. Give me ideas.",
            "Plan a birthday party in our garden for my daughter (Ava, 7) and ten of her friends.",
            "What can we do on a summer afternoon in the park? It's me and my son (Theo, 4).",
            "Ideas for keeping my two (Leo, 6, and Mia, 9) busy on a five-hour train journey?",
        ),
        _w("parent",
           ("no_screens", "no screen ideas: no TV, tablets, video games or movies"),
           ("five_numbered", "give me exactly 5 ideas, numbered"),
           ("shopping_list_end", "end with a shopping list headed 'Shopping list:'"),
           ("no_sweets", "don't suggest sweets, cake or sugary snacks"),
           ("hi_maria", "I'm Maria, say hi to me at the start"),
           ("kid_names", "call my kids by their names"),
           ("safety_last", "finish with a short safety note starting 'Safety:'")),
    ),
    Kind(
        "product_copy", "the owner of Fernwood, a small shop of handmade homeware, writing product descriptions",
        (
            "Write a product description for our lavender soy candle, 200 g, burns about 40 hours.",
            "Product description for a handmade ceramic mug that holds 350 ml and is dishwasher safe.",
            "Describe our linen tea towel (50 x 70 cm, plant-dyed) for the online shop.",
            "Write a listing for a set of 3 beeswax food wraps (20 cm, 25 cm and 33 cm squares).",
        ),
        _w("product_copy",
           ("no_superlatives", "no 'best', 'perfect' or 'ultimate', we can't back that up"),
           ("keep_specs", "always keep the exact numbers I gave you"),
           ("we_voice", "write in our voice with 'we' and 'our', never 'the brand'"),
           ("under_80", "under 80 words, it goes on a small product card"),
           ("cornwall_last", "the last line should be 'Handmade in Cornwall.'"),
           ("no_questions", "don't ask the reader questions like 'Looking for a gift?'"),
           ("caps_title", "start with the product name in capitals on its own line")),
    ),
    Kind(
        "fitness", "a fitness beginner, Chris, who exercises at home with no equipment",
        (
            "I'm new to exercise. Give me a workout I can do at home this week.",
            "How do I start running if I can't run for even five minutes?",
            "What's a good 20-minute workout for my legs?",
            "I sit at a desk all day. What stretches should I do?",
        ),
        _w("fitness",
           ("bodyweight_only", "bodyweight only please: no dumbbells, bands, weights or machines"),
           ("sets_x_reps", "write sets and reps like 3x10"),
           ("no_diet", "no diet, food or drink advice, just the exercise"),
           ("call_chris", "I'm Chris, use my name"),
           ("max_4_bullets", "max four bullet points, I get overwhelmed"),
           ("no_doctor", "don't tell me to see a doctor every time"),
           ("seconds", "give me timings in seconds, e.g. 'hold 30 seconds'")),
    ),
    Kind(
        "english_learner", "a Spanish speaker, Marta, learning English, who asks what phrases mean",
        (
            "What does \"break the ice\" mean?",
            "How do I use \"used to\" in a sentence?",
            "Is it \"I am agree\" or \"I agree\"?",
            "What's the difference between \"borrow\" and \"lend\"?",
        ),
        _w("english_learner",
           ("spanish", "explícamelo en español por favor, my English is not good yet"),
           ("example_line", "always add an example sentence on a line starting 'Example:'"),
           ("short_sentences", "use short sentences, none over 15 words"),
           ("no_jargon", "no grammar jargon: don't say 'preposition', 'infinitive', 'auxiliary', 'gerund' or "
                         "'participle'"),
           ("under_100", "less than 100 words please"),
           ("call_marta", "call me Marta"),
           ("bold_phrase", "put the English phrase I asked about in bold")),
    ),
    Kind(
        "meeting_notes", "a team manager who turns rough jottings into meeting notes",
        (
            "Turn these rough notes into meeting notes:\n\nPriya says launch slips to 14 May, QA found 3 blockers. "
            "Tom fixes the login bug by Friday. Budget stays at 40k. Next sync Tuesday.",
            "Clean up my notes from the hiring meeting:\n\n2 candidates left for the designer role. Lena liked "
            "candidate B, Omar prefers A. Final interviews on 3 June. Offer must go out before 10 June. Salary "
            "band 55-60k.",
            "Make proper meeting notes out of this:\n\nOffice move confirmed for 21 August. 45 desks in the new "
            "place, we have 52 people, so hot-desking on Fridays. Ines books the movers. Keys handed over 19 "
            "August.",
        ),
        _w("meeting_notes",
           ("action_items_end", "always end with an 'Action items' section"),
           ("dd_mm", "write dates as DD/MM, e.g. 14/05, not '14 May'"),
           ("bullets_only", "bullet points only, no paragraphs"),
           ("no_filler", "skip filler like 'The meeting began with...'"),
           ("not_longer", "the notes can't be longer than my original jottings"),
           ("every_figure", "don't drop any numbers, every figure in my notes has to be in there")),
    ),
    Kind(
        "analyst_code", "a data analyst who asks for small Python and SQL snippets at work",
        (
            "How do I read a CSV file in Python and drop the rows that have an empty field?",
            "Write a SQL query that finds the 5 customers with the highest total order amount, from the tables "
            "customers(id, name) and orders(id, customer_id, amount).",
            "How can I count how often each word appears in a text file in Python?",
            "Give me a Python function that checks whether a string is a palindrome.",
        ),
        _w("analyst_code",
           ("code_first", "start your reply with the code block, no intro line before it"),
           ("one_block", "just one code block per answer"),
           ("no_comments", "no comments or docstrings inside the code"),
           ("short_after", "after the code, two sentences of explanation at most"),
           ("no_pip", "don't tell me to pip install anything, I can't install packages at work"),
           ("stdlib_only", "standard library only, don't even mention pandas or numpy"),
           ("lang_tag", "tag every code block with its language, like ```python")),
    ),
)


def kind(kind_id: str) -> Kind:
    for k in KINDS:
        if k.id == kind_id:
            return k
    raise KeyError(f"no kind of person {kind_id!r}; known: {', '.join(k.id for k in KINDS)}")


def all_wishes() -> list[tuple[Kind, Wish]]:
    return [(k, w) for k in KINDS for w in k.wishes]


def wish(wish_id: str) -> Wish:
    for _, w in all_wishes():
        if w.id == wish_id:
            return w
    raise KeyError(wish_id)
