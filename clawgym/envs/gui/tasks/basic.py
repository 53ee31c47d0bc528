"""Clicking, hovering, keys and dialogs: the MiniWoB basics, as one table (``TASKS``) of pages, generators,
checkers and oracles; the pieces a row needs that are longer than a line stand above it."""

from __future__ import annotations

from clawgym.envs.gui.task import PageTask, act, answer_is, plan, state_is
from clawgym.envs.gui.tasks.common import COLORS, WORDS, choice, one_of, page, sample, st, then_submit

CLICK_TARGET = plan(("click", "button", "$target"), ("done",))
CLICKED_TARGET = state_is("clicks", ["$target"])
KEYS = ["Enter", "Escape", "ArrowUp", "ArrowDown", "Tab", "a", "k", "z", "7", "Space"]
SHAPES = ["circle", "square", "star", "triangle"]
FIELDS = ["Name", "Email", "Phone", "City", "Street", "Company", "Notes"]

# ---------------------------------------------------------------- pages
BUTTONS = {
    "index.html": page("p.labels.forEach(function (l) { CG.show(h('button', {onclick: function () { "
                       "CG.push('clicks', l); }}, l)); });")}
LINKS = {
    "index.html": page("p.words.forEach(function (w) { CG.show(h('p', {}, 'See ', h('a', {href: 'visit.html?w=' "
                       "+ w}, w), '.')); });"),
    "visit.html": page("CG.set('visited', CG.q('w')); CG.show(h('h2', {}, 'You are on the ' + CG.q('w') + ' page'));"),
}
CHECKBOXES = page(
    "p.labels.forEach(function (l) { CG.show(h('div', {}, h('label', {}, h('input', {type: 'checkbox', "
    "value: l}), ' ' + l))); });"
    "CG.show(h('button', {onclick: function () { CG.set('submitted', "
    "Array.from(document.querySelectorAll('input:checked')).map(function (e) { return e.value; "
    "}).sort()); }}, 'Submit'));")
RADIOS = page(
    "p.labels.forEach(function (l, i) { CG.show(h('div', {}, h('input', {type: 'radio', name: 'r', id: 'r' + i, "
    "value: l}), h('label', {for: 'r' + i}, l))); });"
    "CG.show(h('button', {onclick: function () { var c = document.querySelector('input:checked'); "
    "CG.set('submitted', c ? c.value : null); }}, 'Submit'));")
TABS = page(
    "var bar = CG.show(h('div', {role: 'tablist'})); var panels = [];"
    "function open(i) { panels.forEach(function (pn, j) { pn.style.display = i === j ? 'block' : 'none'; });"
    " bar.querySelectorAll('[role=tab]').forEach(function (t, j) { t.setAttribute('aria-selected', "
    "i === j ? 'true' : 'false'); }); }"
    "p.tabs.forEach(function (t, i) { bar.appendChild(h('span', {role: 'tab', tabindex: 0, style: "
    "'margin:4px;cursor:pointer', onclick: function () { open(i); }}, t));"
    " panels.push(CG.show(h('div', {role: 'tabpanel'}, h('p', {}, 'Contents of ' + t))));"
    " p.panels[i].forEach(function (w) { panels[i].appendChild(h('button', {onclick: function () { "
    "CG.push('clicks', w); }}, w)); }); });"
    "open(0);")
COLLAPSIBLES = page(
    "p.titles.forEach(function (t, i) { CG.show(h('details', {}, h('summary', {}, t), h('p', {}, "
    "'Details about ' + t.toLowerCase() + '.'),"
    " h('button', {onclick: function () { CG.push('clicks', p.words[i]); }}, p.words[i]))); });")
DIALOG = page(
    "CG.show(h('p', {}, 'Welcome to the shop.'));"
    "var m = CG.show(h('div', {class: 'modal', role: 'dialog', 'aria-label': 'Notice'}, h('div', {class: 'box'}, "
    "h('p', {}, p.message))));"
    "p.buttons.forEach(function (b) { m.firstChild.appendChild(h('button', {onclick: function () { CG.set('closed_by', "
    "b); m.remove(); }}, b)); });")
CONFIRM = page(
    "var list = CG.show(h('ul'));"
    "function ask(item, li) { var m = CG.show(h('div', {class: 'modal', role: 'dialog', 'aria-label': 'Confirm'}, "
    "h('div', {class: 'box'},"
    " h('p', {}, 'Delete ' + item + '? This cannot be undone.'),"
    " h('button', {onclick: function () { CG.push('deleted', item); li.remove(); m.remove(); }}, 'Yes, delete'),"
    " h('button', {onclick: function () { m.remove(); }}, 'No, keep it')))); }"
    "p.items.forEach(function (it) { var li = list.appendChild(h('li', {}, it + ' ')); "
    "li.appendChild(h('button', {onclick: function () { ask(it, li); }}, 'Delete ' + it)); });")
HOVER = page(
    "var tip = CG.show(h('p', {style: 'display:none'}));"
    "p.boxes.forEach(function (b, i) { CG.show(h('div', {style: 'border:1px solid;margin:6px;padding:10px',"
    " onmouseenter: function () { tip.textContent = 'Code: ' + (i === p.k ? p.code : "
    "p.code.split('').reverse().join('')); tip.style.display = 'block'; }}, 'The ' + b + ' box')); });")
KEY_LOG = page(
    "var log = CG.show(h('p', {}, 'No key pressed yet.'));"
    "document.addEventListener('keydown', function (e) { var k = e.key === ' ' ? 'Space' : e.key; CG.push('keys', k); "
    "log.textContent = 'Last key: ' + k; });")
LIST = page("var ul = CG.show(h('ul')); p.items.forEach(function (i) { ul.appendChild(h('li', {}, i)); });")
FOCUS = page(
    "p.labels.forEach(function (l, i) { CG.show(h('div', {}, h('label', {for: 'f' + i}, l), ' ', h('input', "
    "{id: 'f' + i, name: l,"
    " onfocus: function () { CG.push('focused', l); }}))); });")
SCROLL = page(
    "p.filler.forEach(function (t) { CG.show(h('p', {}, t)); });"
    "p.words.forEach(function (w) { CG.show(h('button', {onclick: function () { CG.push('clicks', w); }}, w)); });")
LOAD_MORE = {
    "index.html": page(
        "var box = CG.show(h('div'));"
        "function add(ws) { ws.forEach(function (w) { box.appendChild(h('button', {onclick: function () { "
        "CG.push('clicks', w); }}, w)); }); }"
        "add(p.first);"
        "var more = CG.show(h('button', {onclick: function () { fetch('more.html').then(function "
        "(r) { return r.text(); })"
        ".then(function () { add(p.more); more.remove(); }); }}, 'Load more'));"),
    "more.html": "ok",
}


# ---------------------------------------------------------------- generators that are more than one_of
def _seq_gen(rng):
    labels = sample(rng, WORDS, 6)
    first, second = sample(rng, labels, 2)
    return {"prompt": f'Click "{first}", then click "{second}".', "labels": labels, "order": [first, second]}


def _checkbox_gen(rng):
    labels = sample(rng, WORDS, int(rng.integers(4, 8)))
    wanted = sorted(sample(rng, labels, int(rng.integers(1, len(labels)))))
    return {"prompt": "Select " + ", ".join(wanted) + " and nothing else, then press Submit.",
            "labels": labels, "wanted": wanted}


def _tab_gen(rng):
    tabs = [f"Tab {i + 1}" for i in range(int(rng.integers(3, 5)))]
    words = sample(rng, WORDS, len(tabs) * 3)
    panels = [words[i * 3:(i + 1) * 3] for i in range(len(tabs))]
    t = int(rng.integers(len(tabs)))
    target = choice(rng, panels[t])
    return {"prompt": f'Go to {tabs[t]} and click the button "{target}".', "tabs": tabs, "panels": panels,
            "target": target, "tab": tabs[t]}


def _collapse_gen(rng):
    titles = sample(rng, ["Shipping", "Billing", "Returns", "Privacy", "Support", "Accounts", "Orders"], 4)
    words = sample(rng, WORDS, 4)
    k = int(rng.integers(4))
    return {"prompt": f'Open the "{titles[k]}" section and click its button.', "titles": titles, "words": words,
            "section": titles[k], "target": words[k]}


def _dialog_gen(rng):
    buttons = ["OK", "Cancel", "Close"]
    order = sample(rng, buttons, 3)
    target = choice(rng, buttons)
    return {"prompt": f'Close the dialog by pressing "{target}".', "buttons": order, "target": target,
            "message": f"Your {choice(rng, WORDS)} order was saved."}


def _hover_gen(rng):
    code = "".join(choice(rng, "ABCDEFGHJKLMNPQRSTUVWXYZ23456789") for _ in range(6))
    boxes = sample(rng, COLORS, 3)
    k = int(rng.integers(3))
    return {"prompt": f'Hover over the {boxes[k]} box to see its code, then answer with the code.',
            "boxes": boxes, "code": code, "k": k}


def _key_gen(rng):
    key = choice(rng, KEYS)
    return {"prompt": f'Press the "{key}" key once.', "key": key}


def _count_gen(rng):
    items = [f"{choice(rng, COLORS[:4])} {choice(rng, SHAPES)}" for _ in range(int(rng.integers(6, 12)))]
    color = choice(rng, sorted({i.split()[0] for i in items}))
    return {"prompt": f"How many {color} shapes are listed? Answer with a number.", "items": items, "color": color,
            "count": sum(i.startswith(color + " ") for i in items)}


def _scroll_gen(rng):
    words = sample(rng, WORDS, 3)
    return {"prompt": f'At the bottom of the page there are buttons; click "{words[1]}".',
            "words": words, "target": words[1],
            "filler": [f"Paragraph {i + 1}: {' '.join(sample(rng, WORDS, 8))}." for i in range(30)]}


def _more_gen(rng):
    words = sample(rng, WORDS, 8)
    return {"prompt": f'Press "Load more", then click the item "{words[6]}".', "first": words[:4],
            "more": words[4:], "target": words[6]}


# ---------------------------------------------------------------- oracles that read the page
def _hover_solve(p, v):
    v = yield act("hover", ref=v.find(name=f"The {p['boxes'][p['k']]} box"))
    code = next(e.name for e in v.elements if e.name.startswith("Code: ")).split(": ", 1)[1]
    yield act("done", answer=code)


def _count_solve(p, v):
    n = sum(1 for e in v.find_all("listitem") if e.name.startswith(p["color"] + " "))
    yield act("done", answer=str(n))


def _focused_target_and_empty(p, s, a):
    return (st(s, "focused") or [None])[-1] == p["target"] and all(v == "" for v in s["fields"].values())


# ---------------------------------------------------------------- the table: id, pages, generate, check, solve
TASKS = [
    PageTask("click-button", BUTTONS, one_of(WORDS, (4, 9), 'Click the button labelled "{target}".'),
             CLICKED_TARGET, CLICK_TARGET),
    PageTask("click-sequence", BUTTONS, _seq_gen, state_is("clicks", "$order"),
             plan(("each", "$order", ("click", "button", "$_")), ("done",))),
    PageTask("click-link", LINKS, one_of(WORDS, 6, 'Follow the link "{target}".', "words"),
             state_is("visited", "$target"), plan(("click", "link", "$target"), ("done",))),
    PageTask("click-checkboxes", {"index.html": CHECKBOXES}, _checkbox_gen, state_is("submitted", "$wanted"),
             then_submit(("each", "$wanted", ("check", "checkbox", "$_")))),
    PageTask("click-radio", {"index.html": RADIOS}, one_of(WORDS, (3, 7), 'Choose "{target}" and press Submit.'),
             state_is("submitted", "$target"), then_submit(("check", "radio", "$target"))),
    PageTask("click-tab", {"index.html": TABS}, _tab_gen, CLICKED_TARGET,
             plan(("click", "tab", "$tab"), ("click", "button", "$target"), ("done",))),
    PageTask("click-collapsible", {"index.html": COLLAPSIBLES}, _collapse_gen, CLICKED_TARGET,
             plan(("click", "button", "$section"), ("click", "button", "$target"), ("done",))),
    PageTask("dialog-close", {"index.html": DIALOG}, _dialog_gen, state_is("closed_by", "$target"), CLICK_TARGET),
    PageTask("dialog-confirm", {"index.html": CONFIRM},
             one_of(WORDS, 5, 'Delete the item "{target}" (confirm when asked).', "items"),
             state_is("deleted", ["$target"]),
             plan(("click", "button", "Delete {target}"), ("click", "button", "Yes, delete"), ("done",))),
    PageTask("hover-reveal", {"index.html": HOVER}, _hover_gen, answer_is("$code"), _hover_solve),
    PageTask("press-key", {"index.html": KEY_LOG}, _key_gen, state_is("keys", ["$key"]),
             plan(("press", {"key": "$key"}), ("done",))),
    PageTask("count-items", {"index.html": LIST}, _count_gen, answer_is("$count"), _count_solve),
    PageTask("focus-field", {"index.html": FOCUS},
             one_of(FIELDS, 4, 'Put the cursor in the "{target}" field (click it) and leave it empty.'),
             _focused_target_and_empty, plan(("click", "textbox", "$target"), ("done",))),
    PageTask("scroll-find", {"index.html": SCROLL}, _scroll_gen, CLICKED_TARGET, CLICK_TARGET),
    PageTask("load-more", LOAD_MORE, _more_gen, CLICKED_TARGET,
             plan(("click", "button", "Load more"), ("click", "button", "$target"), ("done",))),
]
CLICK_BUTTON = TASKS[0]
