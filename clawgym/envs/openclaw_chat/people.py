"""Six simulated people beyond homework: their own requests, their own wishes, their own words.

The homework personas (:mod:`clawgym.envs.openclaw_chat.personas`: student, teacher, TA) all ask about
the same arithmetic word problems. These six ask for other things (a work email, a recipe, a trip plan, a
reply to a customer, a code review, a study summary), each with four hidden checks. Most of the checks are
about what the rubric cues never looked at: how the reply opens and ends, what it must include from the
request (a ticket number, a function's name, the year of a study), what it must leave out, units and
perspective; two are word limits. A person voices an unmet check in their own words (``feedback``); the
checks stay the metric and never reach the judge.

Each person's tasks come from a seeded generator (:func:`people_tasks`), and a task's split is
:func:`~clawgym.envs.openclaw_chat.personas.split_of` its opening request (a code review's: its code), so
held-out requests never occur in training. ``oracle_reply`` meets every check (each task is solvable).
"""

from __future__ import annotations

import random
import re
from typing import Callable

from clawgym.core.tasks import Task
from clawgym.envs.openclaw_chat.personas import NAMES, PERSONAS, Persona, Preference, split_of

Generator = Callable[[random.Random], dict]
SURNAMES = ("Novak", "Okafor", "Silva", "Tanaka", "Weber", "Haddad", "Kowalski", "Moreau", "Lindqvist", "Rossi")


def _lines(reply: str) -> list[str]:
    return [line.strip() for line in reply.strip().splitlines() if line.strip()]


def _plain(text: str) -> str:
    """Without markdown emphasis and heading marks, lower-cased: what a person reads."""
    return re.sub(r"[*_#>`]+", "", text).strip().lower()


def _words(reply: str) -> int:
    return len(reply.split())


def _mentions_number(reply: str, number: int) -> bool:
    """``number`` written as digits (``1200`` or ``1,200``), not as part of a longer number."""
    forms = {str(number), f"{number:,}"}
    return any(re.search(rf"(?<![\d,.]){re.escape(f)}(?!\d|[,.]\d)", reply) for f in forms)


# ------------------------------------------------------------------ the office manager: work emails
TOPICS = ("the team lunch moving to Thursday", "the printer on the third floor being repaired",
          "the new visitor badge process", "the quarterly budget review", "the office closing early on Friday",
          "the fire drill next Tuesday", "the parking permits for next year", "the kitchen being cleaned out",
          "the new laptop rollout", "the change to the expense form")


def _email(rng: random.Random) -> dict:
    return {"recipient": f"{rng.choice(NAMES)} {rng.choice(SURNAMES)}", "topic": rng.choice(TOPICS)}


def _first(full: str) -> str:
    return full.split()[0]


def _greets_by_first_name(reply: str, task: Task) -> bool:
    lines = _lines(reply)
    return bool(lines) and _plain(lines[0]).startswith(f"hi {_first(task.data['recipient']).lower()}")


def _signed_sam(reply: str, task: Task) -> bool:
    lines = _lines(reply)
    return bool(lines) and re.search(r"\bsam\b", _plain(lines[-1])) is not None


# ------------------------------------------------------------------ the home cook: recipes
DISHES = ("a tomato soup", "a vegetable curry", "pancakes", "a lentil salad", "banana bread", "a mushroom risotto",
          "a chickpea stew", "an apple crumble", "a potato gratin", "a pasta bake", "a carrot cake", "fried rice")
IMPERIAL = re.compile(r"(?i)\b(cups?|oz|ounces?|pounds?|lbs?|tablespoons?|teaspoons?|tbsps?|tsps?|pints?|quarts?"
                      r"|fahrenheit)\b|°\s*F\b|\d\s*F\b")
METRIC = re.compile(r"(?i)\d\s*(g|kg|ml|l|grams?|kilograms?|millilit(?:re|er)s?|lit(?:re|er)s?)\b")
NUMBER_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")


def _recipe(rng: random.Random) -> dict:
    return {"dish": rng.choice(DISHES), "servings": rng.randint(2, 8)}


def _metric_units(reply: str, task: Task) -> bool:
    return IMPERIAL.search(reply) is None and METRIC.search(reply) is not None


def _states_servings(reply: str, task: Task) -> bool:
    n = task.data["servings"]
    count = rf"(?:{n}|{NUMBER_WORDS[n]})"
    return re.search(rf"(?i)\b(?:serves|for)\s+{count}\b|\b{count}\s+(?:people|persons|servings|portions)\b",
                     reply) is not None


def _total_minutes(reply: str) -> bool:
    return re.search(r"(?i)\b\d+\s*(?:minutes|mins?)\b", reply) is not None


def _starts_with_ingredients(reply: str, task: Task) -> bool:
    lines = _lines(reply)
    return bool(lines) and "ingredient" in _plain(lines[0])


# ------------------------------------------------------------------ the traveller: trip plans
CITIES = ("Lisbon", "Kyoto", "Prague", "Vienna", "Montreal", "Seville", "Edinburgh", "Ljubljana", "Porto", "Krakow")


def _trip(rng: random.Random) -> dict:
    return {"city": rng.choice(CITIES), "days": rng.randint(2, 4), "budget": rng.choice(range(400, 2001, 100))}


def _day_by_day(reply: str, task: Task) -> bool:
    text = _plain(reply)
    return all(re.search(rf"\bday {d}\b", text) for d in range(1, task.data["days"] + 1))


def _mentions_budget(reply: str, task: Task) -> bool:
    return _mentions_number(reply, task.data["budget"])


def _no_flights(reply: str, task: Task) -> bool:
    return re.search(r"(?i)\b(flights?|fly|flying|airports?|airlines?)\b", reply) is None


def _ends_with_question(reply: str, task: Task) -> bool:
    return re.sub(r"[*_`\s]+$", "", reply).endswith("?")


# ------------------------------------------------------------------ the support lead: replies to customers
PRODUCTS = ("headphones", "coffee machine", "smart watch", "desk lamp", "blender", "e-reader", "router", "kettle")
COMPLAINTS = ("My {product} stopped working after two days.", "I was charged twice for my {product}.",
              "The {product} arrived with a cracked case.", "My {product} order is a week late.",
              "The {product} I received is the wrong colour.", "The {product} makes a loud buzzing noise.")


def _support(rng: random.Random) -> dict:
    product = rng.choice(PRODUCTS)
    return {"customer": f"{rng.choice(NAMES)} {rng.choice(SURNAMES)}", "ticket": rng.randint(10000, 99999),
            "product": product, "complaint": rng.choice(COMPLAINTS).format(product=product)}


def _opens_with_customer(reply: str, task: Task) -> bool:
    lines = _lines(reply)
    return bool(lines) and re.search(rf"\b{_first(task.data['customer']).lower()}\b", _plain(lines[0])) is not None


def _ticket_number(reply: str, task: Task) -> bool:
    return _mentions_number(reply, task.data["ticket"])


def _no_refund(reply: str, task: Task) -> bool:
    return re.search(r"(?i)\brefund", reply) is None


def _apologises_once_at_most(reply: str, task: Task) -> bool:
    return len(re.findall(r"(?i)\b(sorry|apologi[sz]e\w*|apolog(?:y|ies))\b", reply)) <= 1


# ------------------------------------------------------------------ the developer: code reviews
FUNCTIONS = (
    ("average", "def average(values):\n    total = 0\n    for v in values:\n        total += v\n"
                "    return total / len(values) - 1", 5),
    ("last_item", "def last_item(items):\n    if items:\n        return items[len(items)]\n    return None", 3),
    ("is_even", "def is_even(n):\n    return n % 2 == 1", 2),
    ("count_words", "def count_words(text):\n    words = text.split(' ')\n    return len(words) + 1", 3),
    ("clamp", "def clamp(x, low, high):\n    if x < low:\n        return high\n    if x > high:\n"
              "        return high\n    return x", 3),
    ("first_upper", "def first_upper(name):\n    return name[1].upper() + name[1:]", 2),
    ("percent", "def percent(part, whole):\n    return part / whole * 10", 2),
    ("merge", "def merge(a, b):\n    result = a\n    result.update(b)\n    return result", 2),
    ("reverse_words", "def reverse_words(text):\n    words = text.split()\n    return ' '.join(words)", 3),
    ("max_value", "def max_value(values):\n    best = 0\n    for v in values:\n        if v > best:\n"
                  "            best = v\n    return best", 2),
    ("celsius", "def celsius(fahrenheit):\n    return fahrenheit - 32 * 5 / 9", 2),
    ("unique", "def unique(items):\n    seen = []\n    for item in items:\n        seen.append(item)\n"
               "    return seen", 4),
    ("word_count", "def word_count(text, word):\n    return text.count(word)", 2),
    ("safe_divide", "def safe_divide(a, b):\n    try:\n        return a / b\n    except Exception:\n"
                    "        return 0", 4),
    ("initials", "def initials(name):\n    return '.'.join(part[0] for part in name.split(' '))", 2),
    ("median", "def median(values):\n    values.sort()\n    return values[len(values) // 2]", 3),
)


def _review(rng: random.Random) -> dict:
    name, code, line = rng.choice(FUNCTIONS)
    return {"function": name, "code": code, "bug_line": line, "author": rng.choice(NAMES)}


def _verdict_first(reply: str, task: Task) -> bool:
    return re.match(r"(approve|request changes)\b", _plain(reply)) is not None


def _line_numbers(reply: str, task: Task) -> bool:
    return re.search(r"(?i)\bline\s+\d+", reply) is not None


def _no_code_blocks(reply: str, task: Task) -> bool:
    return "```" not in reply


def _names_function(reply: str, task: Task) -> bool:
    return re.search(rf"\b{re.escape(task.data['function'])}\b", reply) is not None


# ------------------------------------------------------------------ the researcher: study summaries
STUDIES = (("sleep and memory", "students who slept eight hours recalled more words",
            "the students were all from one university"),
           ("urban gardens", "neighbourhoods with gardens reported less stress",
            "stress was self-reported"),
           ("remote work", "remote teams held shorter meetings", "the study lasted only three months"),
           ("bilingual children", "bilingual children switched tasks faster", "the groups differed in age"),
           ("coffee and focus", "moderate coffee improved focus in the morning", "the effect faded by noon"),
           ("reading on screens", "readers on paper remembered more details", "the texts were short"))
INSTITUTES = ("the University of Leeds", "Kyoto University", "ETH Zurich", "McGill University",
              "the University of Cape Town", "Leiden University")


def _study(rng: random.Random) -> dict:
    topic, finding, caveat = rng.choice(STUDIES)
    return {"topic": topic, "finding": finding, "caveat": caveat, "year": rng.randint(2009, 2025),
            "institute": rng.choice(INSTITUTES), "participants": rng.choice(range(40, 1201, 20))}


def _paragraph(data: dict) -> str:
    return (f"In {data['year']}, researchers at {data['institute']} studied {data['topic']} with "
            f"{data['participants']} participants. They found that {data['finding']}. The authors caution that "
            f"{data['caveat']}, so the result needs to be repeated before anyone relies on it.")


def _keeps_year(reply: str, task: Task) -> bool:
    return _mentions_number(reply, task.data["year"])


def _third_person(reply: str, task: Task) -> bool:
    return re.search(r"(?i)\b(i|i'm|i've|i'd|me|my|we|we're|our|us|you|your|you're)\b", reply) is None


def _sample_size(reply: str, task: Task) -> bool:
    return _mentions_number(reply, task.data["participants"])


def _starts_with_year(reply: str, task: Task) -> bool:
    return re.match(rf"[\W_]*{task.data['year']}\s*:", reply) is not None  # "2019: ...", also in bold or a quote


# ------------------------------------------------------------------ the six
PEOPLE: dict[str, Persona] = {
    "office_manager": Persona(
        name="office_manager",
        description=("You are an office manager who asks for short work emails. You want them to start with 'Hi' "
                     "and the recipient's first name, to be signed 'Sam', to have no exclamation marks and to "
                     "stay under 120 words."),
        opener=lambda t: f"Write a short email to {t.data['recipient']} about {t.data['topic']}.",
        preferences=[
            Preference("greets_by_first_name", _greets_by_first_name,
                       "Start the email with 'Hi' and their first name, nothing more formal."),
            Preference("signed_sam", _signed_sam, "Sign it off with my name, Sam, on the last line."),
            Preference("no_exclamation", lambda r, t: "!" not in r,
                       "No exclamation marks, please; it's a work email."),
            Preference("under_120_words", lambda r, t: _words(r) < 120, "Keep it under 120 words."),
        ],
        thanks="Good, I'll send that.",
        done_token="EMAIL_DONE",
    ),
    "cook": Persona(
        name="cook",
        description=("You are a home cook in Europe who asks for recipes. You want grams and millilitres, never "
                     "cups, spoons or ounces; the recipe must say how many people it serves and how many "
                     "minutes it takes, and start straight with the ingredients."),
        opener=lambda t: f"Can you give me a recipe for {t.data['dish']} for {t.data['servings']} people?",
        preferences=[
            Preference("metric_units", _metric_units,
                       "Please give the amounts in grams and millilitres, not cups, spoons or ounces."),
            Preference("states_servings", _states_servings, "Say how many people it serves."),
            Preference("total_minutes", lambda r, t: _total_minutes(r),
                       "How long does it take? Tell me the time in minutes."),
            Preference("starts_with_ingredients", _starts_with_ingredients,
                       "Skip the introduction and start straight with the ingredients."),
        ],
        thanks="Lovely, I'll cook that tonight.",
        done_token="RECIPE_DONE",
    ),
    "traveller": Persona(
        name="traveller",
        description=("You are planning a short city trip. You want the plan day by day (Day 1, Day 2, ...), your "
                     "budget mentioned, nothing about flights or airports because they are booked, and the plan "
                     "to end by asking you what you would like to change."),
        opener=lambda t: (f"Plan a {t.data['days']}-day trip to {t.data['city']} for me. My budget is "
                          f"{t.data['budget']} euros."),
        preferences=[
            Preference("day_by_day", _day_by_day, "Can you lay it out day by day, Day 1, Day 2 and so on?"),
            Preference("mentions_budget", _mentions_budget, "Keep my budget in mind and say how the plan fits it."),
            Preference("no_flights", _no_flights, "Leave out flights and airports, I've booked those already."),
            Preference("ends_with_question", _ends_with_question,
                       "End by asking me what I'd like to change."),
        ],
        thanks="That works for me, thanks.",
        done_token="TRIP_DONE",
    ),
    "support_lead": Persona(
        name="support_lead",
        description=("You lead a customer support team and ask for draft replies to customers. You want the "
                     "customer's first name in the opening line, the ticket number in the reply, no promise of a "
                     "refund, and at most one apology."),
        opener=lambda t: (f"Draft a reply to our customer {t.data['customer']}, ticket {t.data['ticket']}, who "
                          f"wrote: \"{t.data['complaint']}\""),
        preferences=[
            Preference("opens_with_customer", _opens_with_customer,
                       "Open with the customer's first name so it feels personal."),
            Preference("ticket_number", _ticket_number, "Put the ticket number in so they can refer to it."),
            Preference("no_refund", _no_refund, "Don't promise a refund, that isn't ours to decide."),
            Preference("apologises_once_at_most", _apologises_once_at_most,
                       "Apologise once at most; more than that sounds insincere."),
        ],
        thanks="Good, that's ready to send.",
        done_token="SUPPORT_DONE",
    ),
    "reviewer": Persona(
        name="reviewer",
        description=("You are a senior developer who asks for code reviews. You want the verdict first ('Approve' "
                     "or 'Request changes'), line numbers for every remark, the function named, and no rewritten "
                     "code."),
        opener=lambda t: (f"{t.data['author']} wrote this function; review it for me:\n```python\n{t.data['code']}"
                          "\n```"),
        preferences=[
            Preference("verdict_first", _verdict_first,
                       "Start with your verdict: 'Approve' or 'Request changes'."),
            Preference("line_numbers", _line_numbers, "Point me to line numbers, like 'line 3'."),
            Preference("names_function", _names_function, "Name the function you're reviewing."),
            Preference("no_code_blocks", _no_code_blocks, "Don't rewrite the code for me, just comment on it."),
        ],
        thanks="Clear, thanks for the review.",
        done_token="REVIEW_DONE",
    ),
    "researcher": Persona(
        name="researcher",
        description=("You are a researcher who asks for summaries of study abstracts for your notes. You want the "
                     "year of the study and the number of participants kept, the summary in the third person (no "
                     "I, we or you), and starting with the year and a colon, like '2019: ...'."),
        opener=lambda t: f"Summarise this for my notes: {_paragraph(t.data)}",
        preferences=[
            Preference("keeps_year", _keeps_year, "Keep the year of the study in the summary."),
            Preference("sample_size", _sample_size, "Say how many participants there were."),
            Preference("third_person", _third_person,
                       "Write it in the third person, no 'I', 'we' or 'you'."),
            Preference("starts_with_year", _starts_with_year, "Start with the year and a colon, like '2019: ...'."),
        ],
        thanks="Perfect for my notes.",
        done_token="NOTES_DONE",
    ),
}

GENERATORS: dict[str, Generator] = {"office_manager": _email, "cook": _recipe, "traveller": _trip,
                                    "support_lead": _support, "reviewer": _review, "researcher": _study}
EVERYONE: dict[str, Persona] = {**PERSONAS, **PEOPLE}  # the homework personas, then these six


def people_tasks(per_person: int = 48, seed: int = 2612) -> list[Task]:
    """Each person's tasks, generated with a fixed seed (a request generated twice is kept once); each task's
    split is :func:`split_of` its opening request."""
    tasks = []
    for name, person in PEOPLE.items():
        rng, seen = random.Random(f"{seed}:{name}"), set()
        for _ in range(per_person * 20):
            if len(seen) == per_person:
                break
            data = {"persona": name, **GENERATORS[name](rng)}
            task = Task(id="", prompt="", data=data)
            opening = person.opener(task)
            if opening in seen:
                continue
            seen.add(opening)
            # a code review's split is its code's: one function is never reviewed on both sides
            split = split_of(data["code"] if name == "reviewer" else opening)
            tasks.append(Task(id=f"chat-{name}-{len(seen) - 1:03d}", prompt=opening, split=split, data=data))
    return tasks


def oracle_reply(task: Task) -> str:
    """A reply that meets every check of the task's person."""
    d, name = task.data, task.data["persona"]
    if name == "office_manager":
        return f"Hi {_first(d['recipient'])},\n\nA short note about {d['topic']}. Ask me if anything is unclear.\n\nSam"
    if name == "cook":
        return (f"Ingredients for {d['servings']} people: 400 g vegetables, 200 ml stock, 5 g salt.\n"
                "Cook everything for 25 minutes, stirring now and then. Total time: 30 minutes.")
    if name == "traveller":
        days = " ".join(f"Day {k}: a walk through a different part of {d['city']}." for k in range(1, d["days"] + 1))
        return f"{days} Food and museums fit within your {d['budget']} euros. What would you like to change?"
    if name == "support_lead":
        return (f"Hi {_first(d['customer'])}, thank you for writing about ticket {d['ticket']}. I am sorry about the "
                f"trouble with your {d['product']}. Our team will look into it today and write back within two days.")
    if name == "reviewer":
        return (f"Request changes. In {d['function']}, line {d['bug_line']} gives the wrong result for ordinary "
                "input; the rest reads well.")
    return (f"{d['year']}: researchers at {d['institute']} studied {d['topic']} with {d['participants']} "
            f"participants and found that {d['finding']}.")
