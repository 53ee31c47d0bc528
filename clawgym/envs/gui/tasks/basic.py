"""Clicking, hovering, keys and dialogs: the MiniWoB basics."""

from __future__ import annotations

from clawgym.envs.gui.task import PageTask, act, answer_is, plan, state_is
from clawgym.envs.gui.tasks.common import COLORS, WORDS, choice, page, sample, st

CLICK_TARGET = plan(("click", "button", "$target"), ("done",))

# ---------------------------------------------------------------- click-button
def _click_button_gen(rng):
    labels = sample(rng, WORDS, int(rng.integers(4, 9)))
    target = choice(rng, labels)
    return {"prompt": f'Click the button labelled "{target}".', "labels": labels, "target": target}



CLICK_BUTTON = PageTask(
    id="click-button",
    pages={"index.html": page("p.labels.forEach(function (l) { CG.show(h('button', {onclick: function () { CG.push('clicks', l); }}, l)); });")},
    generate=_click_button_gen,
    check=state_is("clicks", ["$target"]),
    solve=CLICK_TARGET,
)

# ---------------------------------------------------------------- click-sequence
def _seq_gen(rng):
    labels = sample(rng, WORDS, 6)
    first, second = sample(rng, labels, 2)
    return {"prompt": f'Click "{first}", then click "{second}".', "labels": labels, "order": [first, second]}



CLICK_SEQUENCE = PageTask(
    id="click-sequence",
    pages=CLICK_BUTTON.pages,
    generate=_seq_gen,
    check=state_is("clicks", "$order"),
    solve=plan(("each", "$order", ("click", "button", "$_")), ("done",)),
)

# ---------------------------------------------------------------- click-link (two pages)
def _link_gen(rng):
    words = sample(rng, WORDS, 6)
    target = choice(rng, words)
    return {"prompt": f'Follow the link "{target}".', "words": words, "target": target}



CLICK_LINK = PageTask(
    id="click-link",
    pages={
        "index.html": page("p.words.forEach(function (w) { CG.show(h('p', {}, 'See ', h('a', {href: 'visit.html?w=' + w}, w), '.')); });"),
        "visit.html": page("CG.set('visited', CG.q('w')); CG.show(h('h2', {}, 'You are on the ' + CG.q('w') + ' page'));"),
    },
    generate=_link_gen,
    check=state_is("visited", "$target"),
    solve=plan(("click", "link", "$target"), ("done",)),
)

# ---------------------------------------------------------------- click-checkboxes
def _checkbox_gen(rng):
    labels = sample(rng, WORDS, int(rng.integers(4, 8)))
    wanted = sorted(sample(rng, labels, int(rng.integers(1, len(labels)))))
    return {"prompt": "Select " + ", ".join(wanted) + " and nothing else, then press Submit.", "labels": labels, "wanted": wanted}



CLICK_CHECKBOXES = PageTask(
    id="click-checkboxes",
    pages={"index.html": page(
        "p.labels.forEach(function (l) { CG.show(h('div', {}, h('label', {}, h('input', {type: 'checkbox', value: l}), ' ' + l))); });"
        "CG.show(h('button', {onclick: function () { CG.set('submitted', Array.from(document.querySelectorAll('input:checked')).map(function (e) { return e.value; }).sort()); }}, 'Submit'));")},
    generate=_checkbox_gen,
    check=state_is("submitted", "$wanted"),
    solve=plan(("each", "$wanted", ("check", "checkbox", "$_")), ("click", "button", "Submit"), ("done",)),
)

# ---------------------------------------------------------------- click-radio
def _radio_gen(rng):
    labels = sample(rng, WORDS, int(rng.integers(3, 7)))
    target = choice(rng, labels)
    return {"prompt": f'Choose "{target}" and press Submit.', "labels": labels, "target": target}



CLICK_RADIO = PageTask(
    id="click-radio",
    pages={"index.html": page(
        "p.labels.forEach(function (l, i) { CG.show(h('div', {}, h('input', {type: 'radio', name: 'r', id: 'r' + i, value: l}), h('label', {for: 'r' + i}, l))); });"
        "CG.show(h('button', {onclick: function () { var c = document.querySelector('input:checked'); CG.set('submitted', c ? c.value : null); }}, 'Submit'));")},
    generate=_radio_gen,
    check=state_is("submitted", "$target"),
    solve=plan(("check", "radio", "$target"), ("click", "button", "Submit"), ("done",)),
)

# ---------------------------------------------------------------- click-tab
def _tab_gen(rng):
    tabs = [f"Tab {i + 1}" for i in range(int(rng.integers(3, 5)))]
    words = sample(rng, WORDS, len(tabs) * 3)
    panels = [words[i * 3:(i + 1) * 3] for i in range(len(tabs))]
    t = int(rng.integers(len(tabs)))
    target = choice(rng, panels[t])
    return {"prompt": f'Go to {tabs[t]} and click the button "{target}".', "tabs": tabs, "panels": panels, "target": target, "tab": tabs[t]}



CLICK_TAB = PageTask(
    id="click-tab",
    pages={"index.html": page(
        "var bar = CG.show(h('div', {role: 'tablist'})); var panels = [];"
        "function open(i) { panels.forEach(function (pn, j) { pn.style.display = i === j ? 'block' : 'none'; });"
        " bar.querySelectorAll('[role=tab]').forEach(function (t, j) { t.setAttribute('aria-selected', i === j ? 'true' : 'false'); }); }"
        "p.tabs.forEach(function (t, i) { bar.appendChild(h('span', {role: 'tab', tabindex: 0, style: 'margin:4px;cursor:pointer', onclick: function () { open(i); }}, t));"
        " panels.push(CG.show(h('div', {role: 'tabpanel'}, h('p', {}, 'Contents of ' + t))));"
        " p.panels[i].forEach(function (w) { panels[i].appendChild(h('button', {onclick: function () { CG.push('clicks', w); }}, w)); }); });"
        "open(0);")},
    generate=_tab_gen,
    check=state_is("clicks", ["$target"]),
    solve=plan(("click", "tab", "$tab"), ("click", "button", "$target"), ("done",)),
)

# ---------------------------------------------------------------- click-collapsible
def _collapse_gen(rng):
    titles = sample(rng, ["Shipping", "Billing", "Returns", "Privacy", "Support", "Accounts", "Orders"], 4)
    words = sample(rng, WORDS, 4)
    k = int(rng.integers(4))
    return {"prompt": f'Open the "{titles[k]}" section and click its button.', "titles": titles, "words": words, "section": titles[k], "target": words[k]}



CLICK_COLLAPSIBLE = PageTask(
    id="click-collapsible",
    pages={"index.html": page(
        "p.titles.forEach(function (t, i) { CG.show(h('details', {}, h('summary', {}, t), h('p', {}, 'Details about ' + t.toLowerCase() + '.'),"
        " h('button', {onclick: function () { CG.push('clicks', p.words[i]); }}, p.words[i]))); });")},
    generate=_collapse_gen,
    check=state_is("clicks", ["$target"]),
    solve=plan(("click", "button", "$section"), ("click", "button", "$target"), ("done",)),
)

# ---------------------------------------------------------------- dialog-close
def _dialog_gen(rng):
    buttons = ["OK", "Cancel", "Close"]
    order = sample(rng, buttons, 3)
    target = choice(rng, buttons)
    return {"prompt": f'Close the dialog by pressing "{target}".', "buttons": order, "target": target, "message": f"Your {choice(rng, WORDS)} order was saved."}



DIALOG_CLOSE = PageTask(
    id="dialog-close",
    pages={"index.html": page(
        "CG.show(h('p', {}, 'Welcome to the shop.'));"
        "var m = CG.show(h('div', {class: 'modal', role: 'dialog', 'aria-label': 'Notice'}, h('div', {class: 'box'}, h('p', {}, p.message))));"
        "p.buttons.forEach(function (b) { m.firstChild.appendChild(h('button', {onclick: function () { CG.set('closed_by', b); m.remove(); }}, b)); });")},
    generate=_dialog_gen,
    check=state_is("closed_by", "$target"),
    solve=CLICK_TARGET,
)

# ---------------------------------------------------------------- dialog-confirm
def _confirm_gen(rng):
    items = sample(rng, WORDS, 5)
    target = choice(rng, items)
    return {"prompt": f'Delete the item "{target}" (confirm when asked).', "items": items, "target": target}



DIALOG_CONFIRM = PageTask(
    id="dialog-confirm",
    pages={"index.html": page(
        "var list = CG.show(h('ul'));"
        "function ask(item, li) { var m = CG.show(h('div', {class: 'modal', role: 'dialog', 'aria-label': 'Confirm'}, h('div', {class: 'box'},"
        " h('p', {}, 'Delete ' + item + '? This cannot be undone.'),"
        " h('button', {onclick: function () { CG.push('deleted', item); li.remove(); m.remove(); }}, 'Yes, delete'),"
        " h('button', {onclick: function () { m.remove(); }}, 'No, keep it')))); }"
        "p.items.forEach(function (it) { var li = list.appendChild(h('li', {}, it + ' ')); li.appendChild(h('button', {onclick: function () { ask(it, li); }}, 'Delete ' + it)); });")},
    generate=_confirm_gen,
    check=state_is("deleted", ["$target"]),
    solve=plan(("click", "button", "Delete {target}"), ("click", "button", "Yes, delete"), ("done",)),
)

# ---------------------------------------------------------------- hover-reveal
def _hover_gen(rng):
    code = "".join(choice(rng, "ABCDEFGHJKLMNPQRSTUVWXYZ23456789") for _ in range(6))
    boxes = sample(rng, COLORS, 3)
    k = int(rng.integers(3))
    return {"prompt": f'Hover over the {boxes[k]} box to see its code, then answer with the code.', "boxes": boxes, "code": code, "k": k}


def _hover_solve(p, v):
    v = yield act("hover", ref=v.find(name=f"The {p['boxes'][p['k']]} box"))
    code = next(e.name for e in v.elements if e.name.startswith("Code: ")).split(": ", 1)[1]
    yield act("done", answer=code)


HOVER_REVEAL = PageTask(
    id="hover-reveal",
    pages={"index.html": page(
        "var tip = CG.show(h('p', {style: 'display:none'}));"
        "p.boxes.forEach(function (b, i) { CG.show(h('div', {style: 'border:1px solid;margin:6px;padding:10px',"
        " onmouseenter: function () { tip.textContent = 'Code: ' + (i === p.k ? p.code : p.code.split('').reverse().join('')); tip.style.display = 'block'; }}, 'The ' + b + ' box')); });")},
    generate=_hover_gen,
    check=answer_is("$code"),
    solve=_hover_solve,
)

# ---------------------------------------------------------------- press-key
KEYS = ["Enter", "Escape", "ArrowUp", "ArrowDown", "Tab", "a", "k", "z", "7", "Space"]


def _key_gen(rng):
    key = choice(rng, KEYS)
    return {"prompt": f'Press the "{key}" key once.', "key": key}



PRESS_KEY = PageTask(
    id="press-key",
    pages={"index.html": page(
        "var log = CG.show(h('p', {}, 'No key pressed yet.'));"
        "document.addEventListener('keydown', function (e) { var k = e.key === ' ' ? 'Space' : e.key; CG.push('keys', k); log.textContent = 'Last key: ' + k; });")},
    generate=_key_gen,
    check=state_is("keys", ["$key"]),
    solve=plan(("press", {"key": "$key"}), ("done",)),
)

# ---------------------------------------------------------------- count-items
SHAPES = ["circle", "square", "star", "triangle"]


def _count_gen(rng):
    items = [f"{choice(rng, COLORS[:4])} {choice(rng, SHAPES)}" for _ in range(int(rng.integers(6, 12)))]
    color = choice(rng, sorted({i.split()[0] for i in items}))
    return {"prompt": f"How many {color} shapes are listed? Answer with a number.", "items": items, "color": color,
            "count": sum(i.startswith(color + " ") for i in items)}


def _count_solve(p, v):
    n = sum(1 for e in v.find_all("listitem") if e.name.startswith(p["color"] + " "))
    yield act("done", answer=str(n))


COUNT_ITEMS = PageTask(
    id="count-items",
    pages={"index.html": page("var ul = CG.show(h('ul')); p.items.forEach(function (i) { ul.appendChild(h('li', {}, i)); });")},
    generate=_count_gen,
    check=answer_is("$count"),
    solve=_count_solve,
)

# ---------------------------------------------------------------- focus-field
def _focus_gen(rng):
    labels = sample(rng, ["Name", "Email", "Phone", "City", "Street", "Company", "Notes"], 4)
    target = choice(rng, labels)
    return {"prompt": f'Put the cursor in the "{target}" field (click it) and leave it empty.', "labels": labels, "target": target}



FOCUS_FIELD = PageTask(
    id="focus-field",
    pages={"index.html": page(
        "p.labels.forEach(function (l, i) { CG.show(h('div', {}, h('label', {for: 'f' + i}, l), ' ', h('input', {id: 'f' + i, name: l,"
        " onfocus: function () { CG.push('focused', l); }}))); });")},
    generate=_focus_gen,
    check=lambda p, s, a: (st(s, "focused") or [None])[-1] == p["target"] and all(v == "" for v in s["fields"].values()),
    solve=plan(("click", "textbox", "$target"), ("done",)),
)

# ---------------------------------------------------------------- scroll-find
def _scroll_gen(rng):
    words = sample(rng, WORDS, 3)
    return {"prompt": f'At the bottom of the page there are buttons; click "{words[1]}".', "words": words, "target": words[1],
            "filler": [f"Paragraph {i + 1}: {' '.join(sample(rng, WORDS, 8))}." for i in range(30)]}


SCROLL_FIND = PageTask(
    id="scroll-find",
    pages={"index.html": page(
        "p.filler.forEach(function (t) { CG.show(h('p', {}, t)); });"
        "p.words.forEach(function (w) { CG.show(h('button', {onclick: function () { CG.push('clicks', w); }}, w)); });")},
    generate=_scroll_gen,
    check=state_is("clicks", ["$target"]),
    solve=CLICK_TARGET,
)

# ---------------------------------------------------------------- load-more (fetch, then click)
def _more_gen(rng):
    words = sample(rng, WORDS, 8)
    return {"prompt": f'Press "Load more", then click the item "{words[6]}".', "first": words[:4], "more": words[4:], "target": words[6]}



LOAD_MORE = PageTask(
    id="load-more",
    pages={
        "index.html": page(
            "var box = CG.show(h('div'));"
            "function add(ws) { ws.forEach(function (w) { box.appendChild(h('button', {onclick: function () { CG.push('clicks', w); }}, w)); }); }"
            "add(p.first);"
            "var more = CG.show(h('button', {onclick: function () { fetch('more.html').then(function (r) { return r.text(); })"
            ".then(function () { add(p.more); more.remove(); }); }}, 'Load more'));"),
        "more.html": "ok",
    },
    generate=_more_gen,
    check=state_is("clicks", ["$target"]),
    solve=plan(("click", "button", "Load more"), ("click", "button", "$target"), ("done",)),
)

TASKS = [CLICK_BUTTON, CLICK_SEQUENCE, CLICK_LINK, CLICK_CHECKBOXES, CLICK_RADIO, CLICK_TAB, CLICK_COLLAPSIBLE,
         DIALOG_CLOSE, DIALOG_CONFIRM, HOVER_REVEAL, PRESS_KEY, COUNT_ITEMS, FOCUS_FIELD, SCROLL_FIND, LOAD_MORE]
