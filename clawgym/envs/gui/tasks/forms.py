"""Text entry, forms, dropdowns, dates, numbers and widgets, as one table (``TASKS``); most are a form page
(``form_page``), a generator, ``submitted_has`` and a ``then_submit`` oracle."""

from __future__ import annotations

from clawgym.envs.gui.task import PageTask, act, resolve, state_is
from clawgym.envs.gui.tasks.common import (
    CITIES,
    FIRST,
    LAST,
    MONTHS,
    WORDS,
    choice,
    names,
    one_of,
    page,
    sample,
    st,
    then_submit,
)

SUBMIT_FIELDS = ("function submit() { var out = {}; "
                 "document.querySelectorAll('input,select,textarea').forEach(function (e) {"
                 " if (e.type === 'checkbox') out[e.name] = e.checked; "
                 "else if (e.type === 'radio') { if (e.checked) out[e.name] = e.value; }"
                 " else out[e.name] = e.value; }); CG.set('submitted', out); }")
SUBMIT_BUTTON = "CG.show(h('button', {onclick: submit}, 'Submit'));"


def field(label: str, name: str, kind: str = "text", extra: str = "") -> str:
    """JS building a labelled input row."""
    return (f"CG.show(h('div', {{}}, h('label', {{for: '{name}'}}, '{label}'), ' ', "
            f"h('input', {{id: '{name}', name: '{name}', type: '{kind}'{extra}}})));")


def form_page(*rows: str) -> dict[str, str]:
    """A one-page form: ``rows`` of JS between the ``submit()`` that records every field and the Submit button."""
    return {"index.html": page(SUBMIT_FIELDS + "".join(rows) + SUBMIT_BUTTON)}


def submitted(s):
    return st(s, "submitted") or {}


def submitted_has(**fields):
    """Success when the submitted form holds these fields ($-params resolved)."""
    return lambda p, s, a: all(submitted(s).get(k) == resolve(v, p) for k, v in fields.items())


def typed(role: str, label: str | None, text: str) -> tuple:
    """An oracle step typing ``text`` ($-param) into the field ``role``/``label``."""
    return ("type", role, label, {"text": text})


# ---------------------------------------------------------------- pages that are more than fields
CITY_FORM = form_page(
    field("Full name", "name"), field("Email", "email", "email"),
    "var sel = h('select', {id: 'city', name: 'city'}, h('option', {value: ''}, 'Choose a city'));"
    "p.cities.forEach(function (c) { sel.appendChild(h('option', {value: c}, c)); });"
    "CG.show(h('div', {}, h('label', {for: 'city'}, 'City'), ' ', sel));")
SIGNUP_FORM = form_page(
    field("Nickname", "nick"),
    "p.plans.forEach(function (pl) { CG.show(h('div', {}, h('label', {}, h('input', {type: 'radio', name: 'plan', "
    "value: pl}), ' ' + pl))); });"
    "CG.show(h('div', {}, h('label', {}, h('input', {type: 'checkbox', name: 'news', checked: true}), "
    "' Send me the newsletter')));")
LIST_FORM = form_page(
    "var sel = CG.show(h('select', {name: 'choice', 'aria-label': 'Destination'}));"
    "p.options.forEach(function (o) { sel.appendChild(h('option', {}, o)); });")
CALENDAR = page(
    "var y = p.start[0], m = p.start[1], chosen = '';"
    "var out = CG.show(h('p', {}, 'Chosen: none')); var cal = CG.show(h('div'));"
    "function pad(n) { return (n < 10 ? '0' : '') + n; }"
    "function draw() { cal.innerHTML = ''; cal.appendChild(h('h3', {}, p.months[m] + ' ' + y));"
    " cal.appendChild(h('button', {onclick: function () { m--; if (m < 0) { m = 11; y--; } draw(); "
    "}}, 'Previous month'));"
    " cal.appendChild(h('button', {onclick: function () { m++; if (m > 11) { m = 0; y++; } draw(); }}, 'Next month'));"
    " var grid = cal.appendChild(h('div')); var n = new Date(y, m + 1, 0).getDate();"
    " for (var d = 1; d <= n; d++) (function (d) { grid.appendChild(h('button', {onclick: function () {"
    " chosen = y + '-' + pad(m + 1) + '-' + pad(d); out.textContent = 'Chosen: ' + chosen; }}, String(d))); })(d); }"
    "draw(); CG.show(h('button', {onclick: function () { CG.set('submitted', chosen); }}, 'Submit'));")
AUTOCOMPLETE = page(
    "var chosen = null; var box = CG.show(h('input', {role: 'combobox', 'aria-label': 'Recipient', "
    "autocomplete: 'off'}));"
    "var list = CG.show(h('div', {role: 'listbox'}));"
    "box.addEventListener('input', function () { list.innerHTML = ''; chosen = null; "
    "var q = box.value.toLowerCase(); if (!q) return;"
    " p.people.filter(function (n) { return n.toLowerCase().indexOf(q) >= 0; }).forEach(function (n) {"
    " list.appendChild(h('div', {role: 'option', onclick: function () { box.value = n; chosen = n; "
    "list.innerHTML = ''; }}, n)); }); });"
    "CG.show(h('button', {onclick: function () { CG.set('sent_to', chosen); }}, 'Send'));")


# ---------------------------------------------------------------- generators
def _text_gen(rng):
    word = choice(rng, WORDS) + " " + choice(rng, WORDS)
    return {"prompt": f'Type "{word}" into the text box and press Submit.', "text": word}


def _upper_gen(rng):
    word = choice(rng, WORDS)
    return {"prompt": f'Enter the word "{word}" in capital letters and press Submit.', "text": word.upper()}


def _password_gen(rng):
    pw = choice(rng, WORDS) + str(int(rng.integers(10, 99))) + choice(rng, "!#%&")
    return {"prompt": f'Enter the password "{pw}" in both fields and press Submit.', "password": pw}


def _form_gen(rng):
    first, last = choice(rng, FIRST), choice(rng, LAST)
    cities = sample(rng, CITIES, 5)
    person = {"name": f"{first} {last}", "email": f"{first.lower()}.{last.lower()}@example.com",
              "city": choice(rng, cities)}
    return {"prompt": f"Fill in the form for {person['name']}, email {person['email']}, city "
                      f"{person['city']}, then submit.",
            "cities": cities, "person": person}


def _options_gen(rng):
    plans = ["Basic", "Standard", "Premium"]
    plan = choice(rng, plans)
    news = bool(rng.integers(2))
    nick = choice(rng, WORDS)
    return {"prompt": f"Sign up as \"{nick}\" on the {plan} plan, " + ("with" if news else "without")
            + " the newsletter, then submit.", "plans": plans, "want": {"nick": nick, "plan": plan, "news": news}}


def _date_gen(rng):
    y, m, d = int(rng.integers(2015, 2030)), int(rng.integers(1, 13)), int(rng.integers(1, 29))
    return {"prompt": f"Set the date to {MONTHS[m - 1]} {d}, {y} and press Submit.", "iso": f"{y:04d}-{m:02d}-{d:02d}"}


def _picker_gen(rng):
    y, m = int(rng.integers(2018, 2028)), int(rng.integers(0, 12))
    off = int(rng.integers(-2, 3))
    ty, tm = y + (m + off) // 12, (m + off) % 12
    d = int(rng.integers(1, 29))
    return {"prompt": f"Pick {MONTHS[tm]} {d}, {ty} in the calendar and press Submit.", "start": [y, m],
            "target": [ty, tm, d], "iso": f"{ty:04d}-{tm + 1:02d}-{d:02d}", "months": MONTHS}


def _number_gen(rng):
    n = int(rng.integers(2, 40))
    return {"prompt": f"Set the quantity to {n} and press Submit.", "n": n}


def _slider_gen(rng):
    n = int(rng.integers(0, 21)) * 5
    return {"prompt": f"Set the volume slider to {n} and press Submit.", "n": n}


def _sum_gen(rng):
    a, b = int(rng.integers(10, 90)), int(rng.integers(10, 90))
    return {"prompt": "Compute the sum shown on the page, type it into the box and press Submit.", "a": a, "b": b}


def _copy_gen(rng):
    sentence = " ".join(sample(rng, WORDS, 5)).capitalize() + "."
    return {"prompt": "Copy the quote into the text field exactly and press Submit.", "quote": sentence}


def _auto_gen(rng):
    people = names(rng, 12)
    target = choice(rng, people)
    return {"prompt": f"Choose {target} as the recipient using the search box suggestions, then press Send.",
            "people": people, "target": target}


# ---------------------------------------------------------------- oracles that read the page
def _picker_solve(p, v):
    ty, tm, d = p["target"]
    for _ in range(30):
        header = next(e.name for e in v.elements if e.role == "heading")
        month, year = header.split()
        delta = (ty - int(year)) * 12 + tm - MONTHS.index(month)
        if delta == 0:
            break
        v = yield act("click", ref=v.find("button", "Next month" if delta > 0 else "Previous month"))
    v = yield act("click", ref=v.find("button", str(d)))
    yield act("click", ref=v.find("button", "Submit"))
    yield act("done")


def _type_then_submit(v, label, text):
    v = yield act("type", ref=v.find("textbox", label), text=text)
    yield act("click", ref=v.find("button", "Submit"))
    yield act("done")


def _sum_solve(p, v):
    expr = next(e.name for e in v.elements if e.name.startswith("What is "))
    a, b = expr[len("What is "):].rstrip("?").split(" + ")
    yield from _type_then_submit(v, "Answer", str(int(a) + int(b)))


def _copy_solve(p, v):
    yield from _type_then_submit(v, "Text", v.find_all("blockquote")[0].name)


def _auto_solve(p, v):
    v = yield act("type", ref=v.find("combobox", "Recipient"), text=p["target"][:3])
    v = yield act("click", ref=v.find("option", p["target"]))
    yield act("click", ref=v.find("button", "Send"))
    yield act("done")


def _sum_is_right(p, s, a):
    return submitted(s).get("answer", "").strip() == str(p["a"] + p["b"])


# ---------------------------------------------------------------- the table: id, pages, generate, check, solve
TEXT_FORM = form_page(field("Text", "text"))
TASKS = [
    PageTask("enter-text", TEXT_FORM, _text_gen, submitted_has(text="$text"),
             then_submit(typed("textbox", "Text", "$text"))),
    PageTask("enter-text-upper", TEXT_FORM, _upper_gen, submitted_has(text="$text"),
             then_submit(typed("textbox", "Text", "$text"))),
    PageTask("enter-password",
             form_page(field("Password", "pw", "password"), field("Repeat password", "pw2", "password")), _password_gen,
             submitted_has(pw="$password", pw2="$password"),
             then_submit(typed("textbox", "Password", "$password"), typed("textbox", "Repeat password", "$password"))),
    PageTask("form-fill", CITY_FORM, _form_gen, state_is("submitted", "$person"),
             then_submit(typed("textbox", "Full name", "$person.name"), typed("textbox", "Email", "$person.email"),
                         ("select", "combobox", "City", {"option": "$person.city"}))),
    PageTask("form-options", SIGNUP_FORM, _options_gen, state_is("submitted", "$want"),
             then_submit(typed("textbox", "Nickname", "$want.nick"), ("check", "radio", "$want.plan"),
                         ("check", "checkbox", "Send me the newsletter", {"checked": "$want.news"}))),
    PageTask("choose-list", LIST_FORM,
             one_of(CITIES, (5, 10), 'Select "{target}" from the list and press Submit.', "options"),
             submitted_has(choice="$target"), then_submit(("select", "combobox", None, {"option": "$target"}))),
    PageTask("choose-date", form_page(field("Date", "date", "date")), _date_gen, submitted_has(date="$iso"),
             then_submit(typed("textbox", "Date", "$iso"))),
    PageTask("date-picker", {"index.html": CALENDAR}, _picker_gen, state_is("submitted", "$iso"), _picker_solve),
    PageTask("enter-number", form_page(field("Quantity", "qty", "number", ", value: 1, min: 0, max: 100")), _number_gen,
             submitted_has(qty="{n}"), then_submit(typed("spinbutton", "Quantity", "{n}"))),
    PageTask("use-slider",
             form_page(field("Volume", "vol", "range", ", min: 0, max: 100, step: 5, value: 50")), _slider_gen,
             submitted_has(vol="{n}"), then_submit(typed("slider", "Volume", "{n}"))),
    PageTask("enter-sum",
             form_page("CG.show(h('p', {}, 'What is ' + p.a + ' + ' + p.b + '?'));",
                       field("Answer", "answer")), _sum_gen,
             _sum_is_right, _sum_solve),
    PageTask("copy-text",
             form_page("CG.show(h('p', {role: 'blockquote', style: 'background:#eee'}, p.quote));",
                       field("Text", "text")),
             _copy_gen, submitted_has(text="$quote"), _copy_solve),
    PageTask("autocomplete", {"index.html": AUTOCOMPLETE}, _auto_gen, state_is("sent_to", "$target"), _auto_solve),
]
FORM_FILL = TASKS[3]
