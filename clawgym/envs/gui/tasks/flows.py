"""Multi-step and multi-page flows: log in, wizards, shopping, email, editing, settings, navigation, as one
table (``TASKS``) of pages, generators, checkers and oracles."""

from __future__ import annotations

from clawgym.envs.gui.task import PageTask, act, answer_is, plan, state_is
from clawgym.envs.gui.tasks.common import CITIES, FIRST, WORDS, choice, names, page, sample, st

LOGIN_PAGE = page(
    "CG.show(h('form', {action: 'home.html'}, h('div', {}, h('label', {for: 'u'}, 'Username'), ' ', h('input', "
    "{id: 'u', name: 'u'})),"
    " h('div', {}, h('label', {for: 'pw'}, 'Password'), ' ', h('input', {id: 'pw', name: 'pw', type: 'password'})), "
    "h('button', {}, 'Log in')));",
    title="Log in")


def _creds(rng):
    user = choice(rng, FIRST).lower() + str(int(rng.integers(10, 99)))
    return user, choice(rng, WORDS) + "-" + choice(rng, WORDS)


def _login_steps(p, v):
    v = yield act("type", ref=v.find("textbox", "Username"), text=p["user"])
    v = yield act("type", ref=v.find("textbox", "Password"), text=p["password"], submit=True)
    return v


HOME_JS = (
    "var ok = CG.get('user') || (CG.q('u') === p.user && CG.q('pw') === p.password ? p.user : null);"
    "if (CG.q('u') !== null) CG.push('attempts', CG.q('u'));"
    "if (ok) CG.set('user', ok);"
)

INBOX_JS = (
    "var deleted = CG.get('deleted', []); var ul = CG.show(h('ul'));"
    "p.mails.forEach(function (m, i) { if (deleted.indexOf(i) >= 0) return; "
    "var li = ul.appendChild(h('li', {}, h('a', {href: 'mail.html?i=' + i}, m.from + ': ' + m.subject), ' '));"
    " li.appendChild(h('button', {'aria-label': 'Delete mail from ' + m.from + ' about ' + m.subject, "
    "onclick: function () { CG.push('deleted', i); li.remove(); }}, '🗑')); });"
)

MAIL_PAGE = page(
    "var i = Number(CG.q('i')), m = p.mails[i]; CG.show(h('h2', {}, m.subject)); "
    "CG.show(h('p', {}, 'From: ' + m.from)); CG.show(h('p', {}, m.body));"
    "var form = CG.show(h('div', {style: 'display:none'}));"
    "var to = form.appendChild(h('div', {}, h('label', {for: 'to'}, 'To'), ' ', h('input', {id: 'to'}))).lastChild;"
    "var body = form.appendChild(h('div', {}, h('label', {for: 'body'}, 'Message'), ' ', h('textarea', "
    "{id: 'body'}))).lastChild;"
    "var msg = CG.show(h('p'));"
    "form.appendChild(h('button', {onclick: function () { CG.push('sent', {to: to.value, body: body.value, of: i, "
    "kind: form.dataset.kind}); msg.textContent = 'Sent.'; form.style.display = 'none'; }}, 'Send'));"
    "CG.show(h('button', {onclick: function () { form.style.display = 'block'; form.dataset.kind = 'reply'; "
    "to.value = m.from; }}, 'Reply'));"
    "CG.show(h('button', {onclick: function () { form.style.display = 'block'; form.dataset.kind = 'forward'; "
    "to.value = ''; body.value = m.body; }}, 'Forward'));"
    "CG.show(h('a', {href: 'index.html'}, 'Inbox'));", title="Mail")


def _mails(rng, k=5):
    people = [n.split()[0].lower() + "@mail.test" for n in names(rng, k)]
    return [{"from": who,
             "subject": f"{choice(rng, WORDS).capitalize()} "
                        f"{choice(rng, ['plans', 'report', 'photos', 'invoice', 'meeting'])}",
             "body": f"Hi, see you in {choice(rng, CITIES)} on day {int(rng.integers(1, 28))}."} for who in people]


EDITOR = page(
    "var ta = CG.show(h('textarea', {'aria-label': 'Document', rows: 5, cols: 60})); ta.value = p.text;"
    "var msg = CG.show(h('p')); CG.show(h('button', {onclick: function () { CG.set('saved', ta.value); "
    "msg.textContent = 'Saved.'; }}, 'Save'));")

SETTINGS = ["Dark mode", "Notifications", "Auto-update", "Location", "Sounds", "Sync"]

# ---------------------------------------------------------------- pages
LOGIN_PAGES = {"index.html": LOGIN_PAGE, "home.html": page(
    HOME_JS + "CG.show(h('h1', {}, ok ? 'Welcome, ' + ok : 'Wrong username or password'));"
    "if (!ok) CG.show(h('a', {href: 'index.html'}, 'Try again'));", title="Home")}
LOGIN_PROFILE_PAGES = {
    "index.html": LOGIN_PAGE,
    "home.html": page(HOME_JS + "CG.show(h('h1', {}, ok ? 'Welcome, ' + ok : 'Wrong username or password'));"
                      "CG.show(h('a', {href: ok ? 'profile.html' : 'index.html'}, ok ? 'Profile' : 'Try "
                      "again'));", title="Home"),
    "profile.html": page(
        "if (!CG.get('user')) { location.href = 'index.html'; }"
        "var sel = h('select', {id: 'c'}); p.cities.forEach(function (c) { sel.appendChild(h('option', {}, c)); });"
        "sel.value = CG.get('city', p.cities[0]); CG.show(h('div', {}, h('label', {for: 'c'}, 'City'), ' ', sel));"
        "var msg = CG.show(h('p')); CG.show(h('button', {onclick: function () { CG.set('city', sel.value); "
        "msg.textContent = 'Saved.'; }}, 'Save'));",
        title="Profile"),
}
CHECKOUT_WIZARD_PAGES = {
    "index.html": page(
        "CG.show(h('h2', {}, 'Step 1 of 3: shipping'));"
        "['Standard', 'Express', 'Pickup'].forEach(function (s) { CG.show(h('div', {}, h('label', {}, h('input', "
        "{type: 'radio', name: 's', value: s}), ' ' + s))); });"
        "CG.show(h('button', {onclick: function () { var c = document.querySelector('input:checked'); if (!c) return; "
        "CG.set('ship', c.value); location.href = 'address.html'; }}, 'Next'));"),
    "address.html": page(
        "CG.show(h('h2', {}, 'Step 2 of 3: address'));"
        "['Name', 'Street'].forEach(function (f) { CG.show(h('div', {}, h('label', {for: f}, f), ' ', "
        "h('input', {id: f}))); });"
        "CG.show(h('button', {onclick: function () { CG.set('address', [document.getElementById('Name').value, "
        "document.getElementById('Street').value]); location.href = 'review.html'; }}, 'Next'));"),
    "review.html": page(
        "CG.show(h('h2', {}, 'Step 3 of 3: review')); var a = CG.get('address', ['', '']);"
        "CG.show(h('p', {}, 'Ship ' + CG.get('ship') + ' to ' + a[0] + ', ' + a[1]));"
        "var done = CG.show(h('p')); CG.show(h('button', {onclick: function () { CG.set('confirmed', true); "
        "done.textContent = 'Order placed.'; }}, 'Confirm order'));"),
}
SHOP_CART_PAGES = {
    "index.html": page(
        "var link = h('a', {href: 'cart.html'}, ''); function upd() { var c = CG.get('cart', {}); var n = 0; "
        "for (var k in c) n += c[k]; link.textContent = 'Cart (' + n + ')'; }"
        "CG.show(h('p', {}, link)); upd();"
        "p.products.forEach(function (w) { CG.show(h('div', {}, w + ' ', h('button', {onclick: function () { var c = "
        "CG.get('cart', {}); c[w] = (c[w] || 0) + 1; CG.set('cart', c); upd(); }}, 'Add ' + w))); });"),
    "cart.html": page(
        "var c = CG.get('cart', {}); var ul = CG.show(h('ul')); "
        "for (var k in c) ul.appendChild(h('li', {}, c[k] + ' × ' + k));"
        "var msg = CG.show(h('p')); CG.show(h('button', {onclick: function () { CG.set('ordered', CG.get('cart', {})); "
        "msg.textContent = 'Thank you!'; }}, 'Check out'));"
        "CG.show(h('a', {href: 'index.html'}, 'Back to the shop'));"),
}
MAIL_PAGES = {"index.html": page(INBOX_JS, title="Inbox"), "mail.html": MAIL_PAGE}
NOTE_EDITOR_PAGES = {"index.html": page(
    "var ed = CG.show(h('div', {contenteditable: 'true', 'aria-label': 'Note', style: 'border:1px "
    "solid;min-height:40px;padding:4px'}, p.draft));"
    "CG.show(h('button', {onclick: function () { CG.set('saved', ed.innerText.trim()); }}, 'Save note'));")}
SETTINGS_SWITCHES_PAGES = {"index.html": page(
    "var cur = JSON.parse(JSON.stringify(p.start));"
    "Object.keys(p.start).forEach(function (k) { var b = CG.show(h('div', {}, h('span', {role: 'switch', tabindex: 0, "
    "'aria-label': k, 'aria-checked': String(cur[k]),"
    " style: 'cursor:pointer;border:1px solid;padding:2px', onclick: function () { cur[k] = !cur[k]; "
    "this.setAttribute('aria-checked', String(cur[k])); this.textContent = k + ': ' + (cur[k] ? 'on' : 'off'); }},"
    " k + ': ' + (cur[k] ? 'on' : 'off')))); });"
    "CG.show(h('button', {onclick: function () { CG.set('saved', cur); }}, 'Save settings'));")}
GUESS_NUMBER_PAGES = {"index.html": page(
    "var box = CG.show(h('div', {}, h('label', {for: 'g'}, 'Your guess'), ' ', h('input', {id: 'g', "
    "type: 'number'}))).lastChild;"
    "var out = CG.show(h('p', {}, 'No guess yet.'));"
    "CG.show(h('button', {onclick: function () { var g = Number(box.value); CG.push('guesses', g);"
    " if (g === p.secret) { CG.set('solved', true); out.textContent = 'Correct! It was ' + g + '.'; }"
    " else out.textContent = g + ' is wrong: the number is ' + (g < p.secret ? 'higher' : 'lower') "
    "+ '.'; }}, 'Guess'));")}
MENU_HOVER_PAGES = {"index.html": page(
    "var bar = CG.show(h('div', {role: 'menubar', style: 'display:flex;gap:8px'}));"
    "Object.keys(p.menus).forEach(function (m) { var sub = h('div', {role: 'menu', style: "
    "'display:none;position:absolute;background:#fff;border:1px solid'});"
    " var wrap = h('div', {style: 'position:relative', onmouseenter: function () { sub.style.display = 'block'; "
    "}, onmouseleave: function () { sub.style.display = 'none'; }},"
    " h('button', {}, m), sub);"
    " p.menus[m].forEach(function (it) { sub.appendChild(h('div', {role: 'menuitem', tabindex: 0, "
    "onclick: function () { CG.push('chosen', m + '/' + it); }}, it)); });"
    " bar.appendChild(wrap); });")}
FLIGHT_BOOKING_PAGES = {
    "index.html": page(
        "var f = CG.show(h('form', {action: 'flights.html'}));"
        "['From', 'To'].forEach(function (lab) { var s = h('select', {id: lab, name: lab.toLowerCase()}); "
        "p.cities.forEach(function (c) { s.appendChild(h('option', {}, c)); });"
        " f.appendChild(h('div', {}, h('label', {for: lab}, lab), ' ', s)); });"
        "f.appendChild(h('button', {}, 'Search flights'));"),
    "flights.html": page(
        "var src = CG.q('from'), dst = CG.q('to'); CG.set('searched', [src, dst]); "
        "CG.show(h('h2', {}, 'Flights ' + src + ' → ' + dst));"
        "var msg = CG.show(h('p'));"
        "if (src === p.src && dst === p.dst) p.codes.forEach(function (c, i) { CG.show(h('div', {}, "
        "c + ' — $' + p.prices[i] + ' ',"
        " h('button', {onclick: function () { CG.set('booked', c); msg.textContent = 'Booked ' + c; "
        "}}, 'Book ' + c))); });"
        "else CG.show(h('p', {}, 'No flights on this route.'));"),
}
GO_BACK_PAGES = {
    "index.html": page("CG.show(h('h2', {}, 'Articles')); p.arts.forEach(function (a) { CG.show(h('p', {}, h('a', "
                       "{href: 'article.html?a=' + a}, a))); });"),
    "article.html": page("CG.push('read', CG.q('a')); CG.show(h('h1', {}, CG.q('a'))); "
                         "CG.show(h('p', {}, 'An article about ' + CG.q('a').toLowerCase() + '.'));"),
}
GOTO_PAGE_PAGES = {"index.html": page("CG.show(h('h1', {}, 'Home'));"),
       "contact.html": page("CG.show(h('h1', {}, 'Contact')); CG.show(h('p', {}, 'Phone: ' + p.phone));")}
TODO_LIST_PAGES = {"index.html": page(
    "var items = CG.get('items', p.items.map(function (t) { return {t: t, done: false}; })); var ul = CG.show(h('ul'));"
    "function draw() { CG.set('items', items); ul.innerHTML = ''; "
    "items.forEach(function (it) { ul.appendChild(h('li', {}, h('label', {},"
    " h('input', {type: 'checkbox', checked: it.done, onchange: function (e) { it.done = e.target.checked; "
    "CG.set('items', items); }}), ' ' + it.t))); }); }"
    "var box = CG.show(h('div', {}, h('label', {for: 'n'}, 'New to-do'), ' ', h('input', {id: 'n'}))).lastChild;"
    "CG.show(h('button', {onclick: function () { if (box.value) { items.push({t: box.value, done: false}); "
    "box.value = ''; draw(); } }}, 'Add')); draw();")}


# ---------------------------------------------------------------- generators
def _login_gen(rng):
    user, pw = _creds(rng)
    return {"prompt": f'Log in with username "{user}" and password "{pw}".', "user": user, "password": pw}


def _profile_gen(rng):
    user, pw = _creds(rng)
    city = choice(rng, CITIES)
    return {"prompt": f'Log in as "{user}" (password "{pw}"), open your profile and change your city '
                      f'to {city}, then save.',
            "user": user, "password": pw, "city": city, "cities": CITIES}


def _wizard_gen(rng):
    ship = choice(rng, ["Standard", "Express", "Pickup"])
    name = names(rng, 1)[0]
    street = f"{int(rng.integers(1, 200))} {choice(rng, WORDS).capitalize()} Street"
    return {"prompt": f"Check out with {ship} shipping to {name}, {street}, and confirm the order.",
            "ship": ship, "name": name, "street": street}


def _shop_gen(rng):
    products = [w.capitalize() for w in sample(rng, WORDS, 6)]
    wanted = {w: int(rng.integers(1, 3)) for w in sample(rng, products, 2)}
    text = " and ".join(f"{n} × {w}" for w, n in wanted.items())
    return {"prompt": f"Put exactly {text} in the cart, then check out.", "products": products, "wanted": wanted}


def _reply_gen(rng):
    mails = _mails(rng)
    k = int(rng.integers(len(mails)))
    text = f"Thanks, {choice(rng, WORDS)} works for me."
    return {"prompt": f'Reply to the email from {mails[k]["from"]} with the message "{text}".',
            "mails": mails, "k": k, "text": text}


def _forward_gen(rng):
    mails = _mails(rng)
    k = int(rng.integers(len(mails)))
    to = choice(rng, FIRST).lower() + "@work.test"
    return {"prompt": f'Forward the email with subject "{mails[k]["subject"]}" to {to}.',
            "mails": mails, "k": k, "to": to}


def _delete_mail_gen(rng):
    mails = _mails(rng)
    k = int(rng.integers(len(mails)))
    return {"prompt": f'Delete the email from {mails[k]["from"]} about "{mails[k]["subject"]}".',
            "mails": mails, "k": k}


def _replace_gen(rng):
    words = sample(rng, WORDS, 8)
    old, new = words[3], choice(rng, [w for w in WORDS if w not in words])
    return {"prompt": f'In the document, replace the word "{old}" with "{new}", then save.', "text": " ".join(words),
            "want": " ".join(words).replace(old, new), "old": old, "new": new}


def _append_gen(rng):
    words = sample(rng, WORDS, 6)
    line = f"P.S. Bring the {choice(rng, WORDS)}."
    text = " ".join(words[:3]) + "\n" + " ".join(words[3:])
    return {"prompt": f'Add the line "{line}" at the end of the document (on its own line), then save.', "text": text,
            "want": text + "\n" + line}


def _note_gen(rng):
    text = f"Meet {choice(rng, FIRST)} at {int(rng.integers(1, 12))} pm in {choice(rng, CITIES)}."
    return {"prompt": f'Make the note read exactly "{text}" and save it.', "text": text,
            "draft": "Draft: " + " ".join(sample(rng, WORDS, 4))}


def _switch_gen(rng):
    start = {k: bool(rng.integers(2)) for k in SETTINGS}
    want = {k: bool(rng.integers(2)) for k in SETTINGS}
    on = [k for k in SETTINGS if want[k]]
    return {"prompt": "Turn on " + (", ".join(on) if on else "nothing") + " and turn everything else off, then save.",
            "start": start, "want": want}


def _guess_gen(rng):
    return {"prompt": "Guess the secret number between 1 and 100. The page says whether it is higher or lower.",
            "secret": int(rng.integers(1, 101))}


def _menu_gen(rng):
    menus = {m: [w.capitalize() for w in sample(rng, WORDS, 3)] for m in ["File", "Edit", "View", "Help"]}
    m = choice(rng, list(menus))
    item = choice(rng, menus[m])
    return {"prompt": f'Open the "{m}" menu and choose "{item}".', "menus": menus, "menu": m, "item": item}


def _flight_gen(rng):
    src, dst = sample(rng, CITIES, 2)
    prices = sample(rng, list(range(80, 900)), 4)
    return {"prompt": f"Find flights from {src} to {dst} and book the cheapest one.", "src": src, "dst": dst,
            "cities": CITIES, "prices": prices, "codes": [f"CG{int(x)}" for x in rng.integers(100, 999, 4)],
            "target": f"CG{0}"}


def _back_gen(rng):
    arts = [w.capitalize() for w in sample(rng, WORDS, 4)]
    a, b = sample(rng, arts, 2)
    return {"prompt": f'Read the article "{a}", then go back to the list and read "{b}".',
            "arts": arts, "order": [a, b]}


def _goto_gen(rng):
    return {"prompt": "This site has a page contact.html that no link points to. Open it and answer with the "
                      "phone number shown there.",
            "phone": f"+41 {int(rng.integers(10, 99))} {int(rng.integers(100, 999))} {int(rng.integers(1000, 9999))}"}


def _todo_gen(rng):
    items = [f"Buy {w}" for w in sample(rng, WORDS, 4)]
    new = f"Call {choice(rng, FIRST)}"
    done = choice(rng, items)
    return {"prompt": f'Add the to-do "{new}" and mark "{done}" as done.', "items": items, "new": new, "done": done}


# ---------------------------------------------------------------- oracles that read the page
def _login_solve(p, v):
    v = yield from _login_steps(p, v)
    yield act("done")


def _profile_solve(p, v):
    v = yield from _login_steps(p, v)
    v = yield act("click", ref=v.find("link", "Profile"))
    v = yield act("select", ref=v.find("combobox", "City"), option=p["city"])
    yield act("click", ref=v.find("button", "Save"))
    yield act("done")


def _shop_solve(p, v):
    for name, n in p["wanted"].items():
        for _ in range(n):
            v = yield act("click", ref=v.find("button", f"Add {name}"))
    v = yield act("click", ref=v.find("link", contains="Cart"))
    yield act("click", ref=v.find("button", "Check out"))
    yield act("done")


def _send_from_mail(p, v, button, field, text):
    """Open mail ``k``, press Reply or Forward, fill one field and send."""
    m = p["mails"][p["k"]]
    v = yield act("click", ref=v.find("link", f"{m['from']}: {m['subject']}"))
    v = yield act("click", ref=v.find("button", button))
    v = yield act("type", ref=v.find("textbox", field), text=text)
    yield act("click", ref=v.find("button", "Send"))
    yield act("done")


def _delete_mail_solve(p, v):
    m = p["mails"][p["k"]]
    yield act("click", ref=v.find("button", f"Delete mail from {m['from']} about {m['subject']}"))
    yield act("done")


def _editor_solve(p, v):
    ta = v.find("textbox", "Document")
    v = yield act("type", ref=ta,
                  text=v.element(ta).attrs["value"].replace(p["old"], p["new"]) if "old" in p else p["want"])
    yield act("click", ref=v.find("button", "Save"))
    yield act("done")


def _note_solve(p, v):
    v = yield act("type", ref=v.find("textbox", "Note"), text=p["text"])
    yield act("click", ref=v.find("button", "Save note"))
    yield act("done")


def _switch_solve(p, v):
    for k in SETTINGS:
        v = yield act("check", ref=v.find("switch", k), checked=p["want"][k])
    yield act("click", ref=v.find("button", "Save settings"))
    yield act("done")


def _guess_solve(p, v):
    lo, hi = 1, 100
    for _ in range(10):
        mid = (lo + hi) // 2
        v = yield act("type", ref=v.find("spinbutton", "Your guess"), text=str(mid))
        v = yield act("click", ref=v.find("button", "Guess"))
        feedback = v.find_all(contains=f"{mid} is wrong") or v.find_all(contains="Correct!")
        if not feedback or "Correct!" in feedback[0].name:
            break
        if "higher" in feedback[0].name:
            lo = mid + 1
        else:
            hi = mid - 1
    yield act("done")


def _menu_solve(p, v):
    v = yield act("hover", ref=v.find("button", p["menu"]))
    yield act("click", ref=v.find("menuitem", p["item"]))
    yield act("done")


def _flight_solve(p, v):
    v = yield act("select", ref=v.find("combobox", "From"), option=p["src"])
    v = yield act("select", ref=v.find("combobox", "To"), option=p["dst"])
    v = yield act("click", ref=v.find("button", "Search flights"))
    best = min(range(4), key=lambda i: p["prices"][i])
    yield act("click", ref=v.find("button", f"Book {p['codes'][best]}"))
    yield act("done")


def _back_solve(p, v):
    v = yield act("click", ref=v.find("link", p["order"][0]))
    v = yield act("go_back")
    v = yield act("click", ref=v.find("link", p["order"][1]))
    yield act("done")


def _goto_solve(p, v):
    v = yield act("goto", url="contact.html")
    phone = next(e.name for e in v.elements if e.name.startswith("Phone: ")).split(": ", 1)[1]
    yield act("done", answer=phone)


def _todo_solve(p, v):
    v = yield act("type", ref=v.find("textbox", "New to-do"), text=p["new"])
    v = yield act("click", ref=v.find("button", "Add"))
    yield act("check", ref=v.find("checkbox", p["done"]))
    yield act("done")


# ---------------------------------------------------------------- the table: id, pages, generate, check, solve
TASKS = [
    PageTask("login", LOGIN_PAGES, _login_gen,
             lambda p, s, a: st(s, "user") == p["user"] and st(s, "attempts") == [p["user"]], _login_solve),
    PageTask("login-profile", LOGIN_PROFILE_PAGES, _profile_gen,
             lambda p, s, a: st(s, "user") == p["user"] and st(s, "city") == p["city"], _profile_solve),
    PageTask("checkout-wizard", CHECKOUT_WIZARD_PAGES, _wizard_gen,
             lambda p, s, a: bool(st(s, "confirmed")) and st(s, "ship") == p["ship"] and st(s, "address") == [
                 p["name"], p["street"]],
             plan(("check", "radio", "$ship"), ("click", "button", "Next"),
                  ("type", "textbox", "Name", {"text": "$name"}),
                  ("type", "textbox", "Street", {"text": "$street"}), ("click", "button", "Next"),
                  ("click", "button", "Confirm order"), ("done",))),
    PageTask("shop-cart", SHOP_CART_PAGES, _shop_gen, state_is("ordered", "$wanted"), _shop_solve),
    PageTask("email-reply", MAIL_PAGES, _reply_gen,
             lambda p, s, a: st(s, "sent") == [{"to": p["mails"][p["k"]]["from"], "body": p["text"],
                                                "of": p["k"], "kind": "reply"}],
             lambda p, v: _send_from_mail(p, v, "Reply", "Message", p["text"])),
    PageTask("email-forward", MAIL_PAGES, _forward_gen,
             lambda p, s, a: [(x["to"], x["of"], x["kind"]) for x in st(s, "sent", [])] == [
                 (p["to"], p["k"], "forward")],
             lambda p, v: _send_from_mail(p, v, "Forward", "To", p["to"])),
    PageTask("email-delete", MAIL_PAGES, _delete_mail_gen, state_is("deleted", ["$k"]), _delete_mail_solve),
    PageTask("text-replace", {"index.html": EDITOR}, _replace_gen, state_is("saved", "$want"), _editor_solve),
    PageTask("text-append", {"index.html": EDITOR}, _append_gen,
             lambda p, s, a: (st(s, "saved") or "").rstrip("\n") == p["want"], _editor_solve),
    PageTask("note-editor", NOTE_EDITOR_PAGES, _note_gen, state_is("saved", "$text"), _note_solve),
    PageTask("settings-switches", SETTINGS_SWITCHES_PAGES, _switch_gen, state_is("saved", "$want"), _switch_solve),
    PageTask("guess-number", GUESS_NUMBER_PAGES, _guess_gen, lambda p, s, a: bool(st(s, "solved")), _guess_solve),
    PageTask("menu-hover", MENU_HOVER_PAGES, _menu_gen, state_is("chosen", ["{menu}/{item}"]), _menu_solve),
    PageTask("flight-booking", FLIGHT_BOOKING_PAGES, _flight_gen,
             lambda p, s, a: st(s, "booked") == p["codes"][min(range(4), key=lambda i: p["prices"][i])], _flight_solve),
    PageTask("go-back", GO_BACK_PAGES, _back_gen, state_is("read", "$order"), _back_solve),
    PageTask("goto-page", GOTO_PAGE_PAGES, _goto_gen, answer_is("$phone"), _goto_solve),
    PageTask("todo-list", TODO_LIST_PAGES, _todo_gen,
             lambda p, s, a: st(s, "items") == [{"t": t, "done": t == p["done"]} for t in p["items"]] + [
                 {"t": p["new"], "done": False}],
             _todo_solve),
]
