"""Text entry, forms, dropdowns, dates, numbers and widgets."""

from __future__ import annotations

from clawgym.envs.gui.task import PageTask, act, plan, resolve, state_is
from clawgym.envs.gui.tasks.common import CITIES, FIRST, LAST, MONTHS, WORDS, choice, names, page, sample, st

SUBMIT_FIELDS = ("function submit() { var out = {}; document.querySelectorAll('input,select,textarea').forEach(function (e) {"
                 " if (e.type === 'checkbox') out[e.name] = e.checked; else if (e.type === 'radio') { if (e.checked) out[e.name] = e.value; }"
                 " else out[e.name] = e.value; }); CG.set('submitted', out); }")


def field(label: str, name: str, kind: str = "text", extra: str = "") -> str:
    """JS building a labelled input row."""
    return (f"CG.show(h('div', {{}}, h('label', {{for: '{name}'}}, '{label}'), ' ', "
            f"h('input', {{id: '{name}', name: '{name}', type: '{kind}'{extra}}})));")


SUBMIT_BUTTON = "CG.show(h('button', {onclick: submit}, 'Submit'));"


def submitted(s):
    return st(s, "submitted") or {}


def submitted_has(**fields):
    """Success when the submitted form holds these fields ($-params resolved)."""
    return lambda p, s, a: all(submitted(s).get(k) == resolve(v, p) for k, v in fields.items())


TYPE_TEXT = plan(("type", "textbox", "Text", {"text": "$text"}), ("click", "button", "Submit"), ("done",))


# ---------------------------------------------------------------- enter-text
def _text_gen(rng):
    word = choice(rng, WORDS) + " " + choice(rng, WORDS)
    return {"prompt": f'Type "{word}" into the text box and press Submit.', "text": word}



ENTER_TEXT = PageTask(
    id="enter-text",
    pages={"index.html": page(SUBMIT_FIELDS + field("Text", "text") + SUBMIT_BUTTON)},
    generate=_text_gen,
    check=submitted_has(text="$text"),
    solve=TYPE_TEXT,
)

# ---------------------------------------------------------------- enter-text-upper
def _upper_gen(rng):
    word = choice(rng, WORDS)
    return {"prompt": f'Enter the word "{word}" in capital letters and press Submit.', "text": word.upper()}


ENTER_TEXT_UPPER = PageTask(
    id="enter-text-upper",
    pages=ENTER_TEXT.pages,
    generate=_upper_gen,
    check=submitted_has(text="$text"),
    solve=TYPE_TEXT,
)

# ---------------------------------------------------------------- enter-password
def _password_gen(rng):
    pw = choice(rng, WORDS) + str(int(rng.integers(10, 99))) + choice(rng, "!#%&")
    return {"prompt": f'Enter the password "{pw}" in both fields and press Submit.', "password": pw}



ENTER_PASSWORD = PageTask(
    id="enter-password",
    pages={"index.html": page(SUBMIT_FIELDS + field("Password", "pw", "password") + field("Repeat password", "pw2", "password") + SUBMIT_BUTTON)},
    generate=_password_gen,
    check=submitted_has(pw="$password", pw2="$password"),
    solve=plan(("type", "textbox", "Password", {"text": "$password"}),
               ("type", "textbox", "Repeat password", {"text": "$password"}), ("click", "button", "Submit"), ("done",)),
)

# ---------------------------------------------------------------- form-fill (text, email, select)
def _form_gen(rng):
    first, last = choice(rng, FIRST), choice(rng, LAST)
    cities = sample(rng, CITIES, 5)
    person = {"name": f"{first} {last}", "email": f"{first.lower()}.{last.lower()}@example.com", "city": choice(rng, cities)}
    return {"prompt": f"Fill in the form for {person['name']}, email {person['email']}, city {person['city']}, then submit.",
            "cities": cities, "person": person}



FORM_FILL = PageTask(
    id="form-fill",
    pages={"index.html": page(
        SUBMIT_FIELDS + field("Full name", "name") + field("Email", "email", "email")
        + "var sel = h('select', {id: 'city', name: 'city'}, h('option', {value: ''}, 'Choose a city'));"
        "p.cities.forEach(function (c) { sel.appendChild(h('option', {value: c}, c)); });"
        "CG.show(h('div', {}, h('label', {for: 'city'}, 'City'), ' ', sel));" + SUBMIT_BUTTON)},
    generate=_form_gen,
    check=state_is("submitted", "$person"),
    solve=plan(("type", "textbox", "Full name", {"text": "$person.name"}), ("type", "textbox", "Email", {"text": "$person.email"}),
               ("select", "combobox", "City", {"option": "$person.city"}), ("click", "button", "Submit"), ("done",)),
)

# ---------------------------------------------------------------- form-options (checkbox + radio + text)
def _options_gen(rng):
    plans = ["Basic", "Standard", "Premium"]
    plan = choice(rng, plans)
    news = bool(rng.integers(2))
    nick = choice(rng, WORDS)
    return {"prompt": f"Sign up as \"{nick}\" on the {plan} plan, " + ("with" if news else "without")
            + " the newsletter, then submit.", "plans": plans, "want": {"nick": nick, "plan": plan, "news": news}}



FORM_OPTIONS = PageTask(
    id="form-options",
    pages={"index.html": page(
        SUBMIT_FIELDS + field("Nickname", "nick")
        + "p.plans.forEach(function (pl) { CG.show(h('div', {}, h('label', {}, h('input', {type: 'radio', name: 'plan', value: pl}), ' ' + pl))); });"
        "CG.show(h('div', {}, h('label', {}, h('input', {type: 'checkbox', name: 'news', checked: true}), ' Send me the newsletter')));" + SUBMIT_BUTTON)},
    generate=_options_gen,
    check=state_is("submitted", "$want"),
    solve=plan(("type", "textbox", "Nickname", {"text": "$want.nick"}), ("check", "radio", "$want.plan"),
               ("check", "checkbox", "Send me the newsletter", {"checked": "$want.news"}), ("click", "button", "Submit"), ("done",)),
)

# ---------------------------------------------------------------- choose-list
def _list_gen(rng):
    options = sample(rng, CITIES, int(rng.integers(5, 10)))
    target = choice(rng, options)
    return {"prompt": f'Select "{target}" from the list and press Submit.', "options": options, "target": target}



CHOOSE_LIST = PageTask(
    id="choose-list",
    pages={"index.html": page(
        SUBMIT_FIELDS + "var sel = CG.show(h('select', {name: 'choice', 'aria-label': 'Destination'}));"
        "p.options.forEach(function (o) { sel.appendChild(h('option', {}, o)); });" + SUBMIT_BUTTON)},
    generate=_list_gen,
    check=submitted_has(choice="$target"),
    solve=plan(("select", "combobox", None, {"option": "$target"}), ("click", "button", "Submit"), ("done",)),
)

# ---------------------------------------------------------------- choose-date (native input)
def _date_gen(rng):
    y, m, d = int(rng.integers(2015, 2030)), int(rng.integers(1, 13)), int(rng.integers(1, 29))
    return {"prompt": f"Set the date to {MONTHS[m - 1]} {d}, {y} and press Submit.", "iso": f"{y:04d}-{m:02d}-{d:02d}"}



CHOOSE_DATE = PageTask(
    id="choose-date",
    pages={"index.html": page(SUBMIT_FIELDS + field("Date", "date", "date") + SUBMIT_BUTTON)},
    generate=_date_gen,
    check=submitted_has(date="$iso"),
    solve=plan(("type", "textbox", "Date", {"text": "$iso"}), ("click", "button", "Submit"), ("done",)),
)

# ---------------------------------------------------------------- date-picker (calendar widget)
def _picker_gen(rng):
    y, m = int(rng.integers(2018, 2028)), int(rng.integers(0, 12))
    off = int(rng.integers(-2, 3))
    ty, tm = y + (m + off) // 12, (m + off) % 12
    d = int(rng.integers(1, 29))
    return {"prompt": f"Pick {MONTHS[tm]} {d}, {ty} in the calendar and press Submit.", "start": [y, m],
            "target": [ty, tm, d], "iso": f"{ty:04d}-{tm + 1:02d}-{d:02d}", "months": MONTHS}


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


DATE_PICKER = PageTask(
    id="date-picker",
    pages={"index.html": page(
        "var y = p.start[0], m = p.start[1], chosen = '';"
        "var out = CG.show(h('p', {}, 'Chosen: none')); var cal = CG.show(h('div'));"
        "function pad(n) { return (n < 10 ? '0' : '') + n; }"
        "function draw() { cal.innerHTML = ''; cal.appendChild(h('h3', {}, p.months[m] + ' ' + y));"
        " cal.appendChild(h('button', {onclick: function () { m--; if (m < 0) { m = 11; y--; } draw(); }}, 'Previous month'));"
        " cal.appendChild(h('button', {onclick: function () { m++; if (m > 11) { m = 0; y++; } draw(); }}, 'Next month'));"
        " var grid = cal.appendChild(h('div')); var n = new Date(y, m + 1, 0).getDate();"
        " for (var d = 1; d <= n; d++) (function (d) { grid.appendChild(h('button', {onclick: function () {"
        " chosen = y + '-' + pad(m + 1) + '-' + pad(d); out.textContent = 'Chosen: ' + chosen; }}, String(d))); })(d); }"
        "draw(); CG.show(h('button', {onclick: function () { CG.set('submitted', chosen); }}, 'Submit'));")},
    generate=_picker_gen,
    check=state_is("submitted", "$iso"),
    solve=_picker_solve,
)

# ---------------------------------------------------------------- enter-number
def _number_gen(rng):
    n = int(rng.integers(2, 40))
    return {"prompt": f"Set the quantity to {n} and press Submit.", "n": n}



ENTER_NUMBER = PageTask(
    id="enter-number",
    pages={"index.html": page(SUBMIT_FIELDS + field("Quantity", "qty", "number", ", value: 1, min: 0, max: 100") + SUBMIT_BUTTON)},
    generate=_number_gen,
    check=submitted_has(qty="{n}"),
    solve=plan(("type", "spinbutton", "Quantity", {"text": "{n}"}), ("click", "button", "Submit"), ("done",)),
)

# ---------------------------------------------------------------- use-slider
def _slider_gen(rng):
    n = int(rng.integers(0, 21)) * 5
    return {"prompt": f"Set the volume slider to {n} and press Submit.", "n": n}



USE_SLIDER = PageTask(
    id="use-slider",
    pages={"index.html": page(SUBMIT_FIELDS + field("Volume", "vol", "range", ", min: 0, max: 100, step: 5, value: 50") + SUBMIT_BUTTON)},
    generate=_slider_gen,
    check=submitted_has(vol="{n}"),
    solve=plan(("type", "slider", "Volume", {"text": "{n}"}), ("click", "button", "Submit"), ("done",)),
)

# ---------------------------------------------------------------- enter-sum
def _sum_gen(rng):
    a, b = int(rng.integers(10, 90)), int(rng.integers(10, 90))
    return {"prompt": "Compute the sum shown on the page, type it into the box and press Submit.", "a": a, "b": b}


def _sum_solve(p, v):
    expr = next(e.name for e in v.elements if e.name.startswith("What is "))
    a, b = expr[len("What is "):].rstrip("?").split(" + ")
    v = yield act("type", ref=v.find("textbox", "Answer"), text=str(int(a) + int(b)))
    yield act("click", ref=v.find("button", "Submit"))
    yield act("done")


ENTER_SUM = PageTask(
    id="enter-sum",
    pages={"index.html": page(SUBMIT_FIELDS + "CG.show(h('p', {}, 'What is ' + p.a + ' + ' + p.b + '?'));" + field("Answer", "answer") + SUBMIT_BUTTON)},
    generate=_sum_gen,
    check=lambda p, s, a: submitted(s).get("answer", "").strip() == str(p["a"] + p["b"]),
    solve=_sum_solve,
)

# ---------------------------------------------------------------- copy-text
def _copy_gen(rng):
    sentence = " ".join(sample(rng, WORDS, 5)).capitalize() + "."
    return {"prompt": "Copy the quote into the text field exactly and press Submit.", "quote": sentence}


def _copy_solve(p, v):
    quote = v.find_all("blockquote")[0].name
    v = yield act("type", ref=v.find("textbox", "Text"), text=quote)
    yield act("click", ref=v.find("button", "Submit"))
    yield act("done")


COPY_TEXT = PageTask(
    id="copy-text",
    pages={"index.html": page(SUBMIT_FIELDS + "CG.show(h('p', {role: 'blockquote', style: 'background:#eee'}, p.quote));" + field("Text", "text") + SUBMIT_BUTTON)},
    generate=_copy_gen,
    check=submitted_has(text="$quote"),
    solve=_copy_solve,
)

# ---------------------------------------------------------------- autocomplete
def _auto_gen(rng):
    people = names(rng, 12)
    target = choice(rng, people)
    return {"prompt": f"Choose {target} as the recipient using the search box suggestions, then press Send.", "people": people, "target": target}


def _auto_solve(p, v):
    v = yield act("type", ref=v.find("combobox", "Recipient"), text=p["target"][:3])
    v = yield act("click", ref=v.find("option", p["target"]))
    yield act("click", ref=v.find("button", "Send"))
    yield act("done")


AUTOCOMPLETE = PageTask(
    id="autocomplete",
    pages={"index.html": page(
        "var chosen = null; var box = CG.show(h('input', {role: 'combobox', 'aria-label': 'Recipient', autocomplete: 'off'}));"
        "var list = CG.show(h('div', {role: 'listbox'}));"
        "box.addEventListener('input', function () { list.innerHTML = ''; chosen = null; var q = box.value.toLowerCase(); if (!q) return;"
        " p.people.filter(function (n) { return n.toLowerCase().indexOf(q) >= 0; }).forEach(function (n) {"
        " list.appendChild(h('div', {role: 'option', onclick: function () { box.value = n; chosen = n; list.innerHTML = ''; }}, n)); }); });"
        "CG.show(h('button', {onclick: function () { CG.set('sent_to', chosen); }}, 'Send'));")},
    generate=_auto_gen,
    check=state_is("sent_to", "$target"),
    solve=_auto_solve,
)

TASKS = [ENTER_TEXT, ENTER_TEXT_UPPER, ENTER_PASSWORD, FORM_FILL, FORM_OPTIONS, CHOOSE_LIST, CHOOSE_DATE, DATE_PICKER,
         ENTER_NUMBER, USE_SLIDER, ENTER_SUM, COPY_TEXT, AUTOCOMPLETE]
