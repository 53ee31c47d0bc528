"""Tables, lists, search, sorting, paging: finding and acting on data, as one table (``TASKS``) of pages,
generators, checkers and oracles."""

from __future__ import annotations

from clawgym.envs.gui.task import PageTask, act, answer_is, normalise, plan, state_is
from clawgym.envs.gui.tasks.common import CITIES, WORDS, choice, names, page, sample, st


def _people(rng, k):
    return [{"name": n, "age": int(rng.integers(18, 80)), "city": choice(rng, CITIES),
             "email": n.lower().replace(" ", ".") + "@mail.test"} for n in names(rng, k)]


TABLE_JS = (
    "function table(rows, cols, extra) { var t = h('table', {}, h('tr', {}));"
    " cols.forEach(function (c) { t.firstChild.appendChild(h('th', {}, c)); });"
    " rows.forEach(function (r) { var tr = t.appendChild(h('tr', {}));"
    " cols.forEach(function (c) { tr.appendChild(h('td', {}, String(r[c.toLowerCase()]))); });"
    " if (extra) tr.appendChild(h('td', {}, extra(r, tr))); }); return t; }"
)

# ---------------------------------------------------------------- pages
TABLE_LOOKUP_PAGES = {"index.html": page(TABLE_JS + "CG.show(table(p.people, ['Name', 'Age', 'City', 'Email']));")}
TABLE_OLDEST_PAGES = {"index.html": page(TABLE_JS + "CG.show(table(p.people, ['Name', 'Age', 'City']));")}
TABLE_DELETE_PAGES = {"index.html": page(TABLE_JS + "CG.show(table(p.people, ['Name', 'City'], function (r, tr) {"
                          " return h('button', {onclick: function () { CG.push('deleted', r.name); "
                          "tr.remove(); }}, 'Remove'); }));")}
TABLE_SORT_PAGES = {"index.html": page(
    TABLE_JS + "var sort = null, dir = 'asc', holder = CG.show(h('div'));"
    "function draw() { holder.innerHTML = ''; var rows = p.people.slice(); if (sort) { var k = sort.toLowerCase();"
    " rows.sort(function (a, b) { var x = a[k], y = b[k]; var c = x < y ? -1 : x > y ? 1 : 0; "
    "return dir === 'asc' ? c : -c; }); }"
    " var t = holder.appendChild(table(rows, ['Name', 'Age', 'City']));"
    " t.querySelectorAll('th').forEach(function (th) { var c = th.textContent; th.textContent = '';"
    " th.appendChild(h('button', {onclick: function () { if (sort === c) dir = dir === 'asc' ? 'desc' : 'asc'; "
    "else { sort = c; dir = 'asc'; }"
    " CG.set('sort', [sort, dir]); draw(); }}, c + (sort === c ? (dir === 'asc' ? ' ▲' : ' ▼') : ''))); }); }"
    "draw();")}
SEARCH_ENGINE_PAGES = {
    "index.html": page("CG.show(h('form', {action: 'results.html'}, h('input', {type: 'search', name: 'q', "
                       "'aria-label': 'Search'}), h('button', {}, 'Search')));"),
    "results.html": page(
        "var q = CG.q('q') || ''; CG.set('query', q); CG.show(h('h2', {}, 'Results for ' + q));"
        "var hits = q.toLowerCase() === p.query ? p.results : [];"
        "if (!hits.length) CG.show(h('p', {}, 'No results.'));"
        "hits.forEach(function (r) { CG.show(h('p', {}, h('a', {href: 'open.html?t=' + "
        "encodeURIComponent(r)}, r))); });"),
    "open.html": page("CG.set('opened', CG.q('t')); CG.show(h('h1', {}, CG.q('t')));"),
}
FILTER_LIST_PAGES = {"index.html": page(
    "var box = CG.show(h('input', {type: 'search', 'aria-label': 'Filter', placeholder: 'Type a name'})); "
    "var ul = CG.show(h('ul'));"
    "function draw() { ul.innerHTML = ''; var q = box.value.toLowerCase(); "
    "if (q.length < 2) { ul.appendChild(h('li', {}, 'Type at least 2 letters.')); return; }"
    " p.people.filter(function (r) { return r.name.toLowerCase().indexOf(q) >= 0; "
    "}).forEach(function (r) { ul.appendChild(h('li', {}, r.name + ' — ' + r.city)); }); }"
    "box.addEventListener('input', draw); draw();")}
PAGINATE_PAGES = {"index.html": page(
    "var at = 0, box = CG.show(h('div')), info = CG.show(h('p'));"
    "function draw() { box.innerHTML = ''; p.items.slice(at * 10, at * 10 + 10).forEach(function (it) {"
    " box.appendChild(h('div', {}, h('button', {onclick: function () { CG.push('clicks', it); }}, it))); }); "
    "info.textContent = 'Page ' + (at + 1) + ' of 3'; }"
    "CG.show(h('button', {onclick: function () { if (at > 0) { at--; draw(); } }}, 'Previous page'));"
    "CG.show(h('button', {onclick: function () { if (at < 2) { at++; draw(); } }}, 'Next page')); draw();")}
SORT_AND_BUY_PAGES = {"index.html": page(
    "var sel = CG.show(h('select', {'aria-label': 'Sort by'}, h('option', {value: 'name'}, 'Name'), h('option', "
    "{value: 'low'}, 'Price: low to high'), h('option', {value: 'high'}, 'Price: high to low')));"
    "var box = CG.show(h('div'));"
    "function draw() { var rows = p.products.slice(); var k = sel.value; "
    "rows.sort(function (a, b) { return k === 'name' ? (a.name < b.name ? -1 : 1) : k === 'low' ? a.price - b.price : "
    "b.price - a.price; });"
    " CG.set('sort', k); box.innerHTML = ''; rows.forEach(function (r) { box.appendChild(h('div', {}, h('span', {}, "
    "r.name + ' — $' + r.price + ' '),"
    " h('button', {onclick: function () { CG.set('bought', {name: r.name, sort: sel.value}); "
    "}}, 'Buy ' + r.name))); }); }"
    "sel.addEventListener('change', draw); draw();")}
FIND_WORD_PAGES = {"index.html": page("CG.show(h('p', {role: 'paragraph'}, p.words.join(' ') + '.'));")}
FOLDER_TREE_PAGES = {"index.html": page(
    "var tree = CG.show(h('div', {role: 'tree'})), out = CG.show(h('p', {}, 'No file open.'));"
    "p.folders.forEach(function (f) { var kids = h('div', {role: 'group', style: 'display:none;margin-left:16px'});"
    " var node = h('div', {role: 'treeitem', 'aria-expanded': 'false', 'aria-label': f, tabindex: 0, "
    "onclick: function () {"
    " var open = kids.style.display === 'none'; kids.style.display = open ? 'block' : 'none'; "
    "node.setAttribute('aria-expanded', open); }}, '📁 ' + f);"
    " p.files[f].forEach(function (x) { kids.appendChild(h('div', {role: 'treeitem', 'aria-label': x, tabindex: 0, "
    "onclick: function () {"
    " CG.push('opened', f + '/' + x); out.textContent = 'Opened ' + f + '/' + x; }}, '📄 ' + x)); });"
    " tree.appendChild(node); tree.appendChild(kids); });")}


# ---------------------------------------------------------------- generators
def _lookup_gen(rng):
    people = _people(rng, int(rng.integers(5, 9)))
    target = choice(rng, people)
    return {"prompt": f"What is the email address of {target['name']}? Answer with the address.",
            "people": people, "target": target}


def _oldest_gen(rng):
    people = _people(rng, 7)
    ages = sample(rng, list(range(18, 90)), 7)
    for person, age in zip(people, ages):
        person["age"] = age
    oldest = max(people, key=lambda r: r["age"])
    return {"prompt": "Who is the oldest person in the table? Answer with the full name.", "people": people,
            "target": oldest["name"]}


def _delete_gen(rng):
    people = _people(rng, 6)
    target = choice(rng, people)["name"]
    return {"prompt": f"Remove {target} from the table.", "people": people, "target": target}


def _sort_gen(rng):
    col = choice(rng, ["Name", "Age", "City"])
    desc = bool(rng.integers(2))
    return {"prompt": f"Sort the table by {col}, "
                      f"{'descending (Z to A, highest first)' if desc else 'ascending (A to Z, lowest first)'}.",
            "people": _people(rng, 6), "col": col, "dir": "desc" if desc else "asc"}


def _search_gen(rng):
    topics = sample(rng, WORDS, 10)
    query = topics[0]
    results = [f"{query.capitalize()} {w}" for w in sample(rng, WORDS[1:], 5)]
    k = int(rng.integers(5))
    return {"prompt": f'Search for "{query}" and open the result titled "{results[k]}".', "query": query,
            "results": results, "target": results[k]}


def _filter_gen(rng):
    people = _people(rng, 20)
    target = choice(rng, people)
    return {"prompt": f"Find {target['name']} in the directory and answer with their city.",
            "people": people, "target": target}


def _paginate_gen(rng):
    items = sample(rng, [f"{a}-{b}" for a in WORDS[:12] for b in WORDS[12:24]], 30)
    target = items[int(rng.integers(10, 30))]
    return {"prompt": f'Find the item "{target}" in the paged list and click it.', "items": items, "target": target}


def _cheapest_gen(rng):
    products = [{"name": w.capitalize(), "price": int(p)}
                for w, p in zip(sample(rng, WORDS, 6), sample(rng, list(range(5, 200)), 6))]
    return {"prompt": "Sort the products by price, lowest first, and buy the cheapest one.", "products": products,
            "target": min(products, key=lambda r: r["price"])["name"]}


def _word_gen(rng):
    words = sample(rng, WORDS, 12)
    k = int(rng.integers(1, 12))
    ordinal = {1: "1st", 2: "2nd", 3: "3rd"}.get(k + 1, f"{k + 1}th")
    return {"prompt": f"What is the {ordinal} word of the paragraph below? Answer with that word.",
            "words": words, "k": k}


def _tree_gen(rng):
    folders = sample(rng, ["docs", "src", "music", "photos", "backup", "notes"], 3)
    files = {f: [f"{w}.txt" for w in sample(rng, WORDS, 3)] for f in folders}
    folder = choice(rng, folders)
    target = choice(rng, files[folder])
    return {"prompt": f"Open the file {folder}/{target}.", "folders": folders, "files": files,
            "path": f"{folder}/{target}", "folder": folder, "target": target}


# ---------------------------------------------------------------- oracles that read the page
def _lookup_solve(p, v):
    row = next(e for e in v.find_all("row") if e.name.startswith(p["target"]["name"] + " |"))
    yield act("done", answer=row.name.split(" | ")[3])


def _oldest_solve(p, v):
    rows = [e.name.split(" | ") for e in v.find_all("row")]
    yield act("done", answer=max(rows, key=lambda r: int(r[1]))[0])


def _delete_solve(p, v):
    i = next(k for k, e in enumerate(v.elements) if e.role == "cell" and e.name == p["target"])
    button = next(e for e in v.elements[i:] if e.role == "button")
    yield act("click", ref=button.ref)
    yield act("done")


def _sort_solve(p, v):
    for _ in range(3):
        header = v.find("button", contains=p["col"])
        name = v.element(header).name
        if name.endswith("▲" if p["dir"] == "asc" else "▼"):
            break
        v = yield act("click", ref=header)
    yield act("done")


def _filter_solve(p, v):
    v = yield act("type", ref=v.find("searchbox", "Filter"), text=p["target"]["name"])
    item = next(e for e in v.find_all("listitem") if e.name.startswith(p["target"]["name"]))
    yield act("done", answer=item.name.split(" — ")[1])


def _paginate_solve(p, v):
    for _ in range(4):
        if v.find_all("button", p["target"]):
            break
        v = yield act("click", ref=v.find("button", "Next page"))
    yield act("click", ref=v.find("button", p["target"]))
    yield act("done")


def _cheapest_solve(p, v):
    v = yield act("select", ref=v.find("combobox", "Sort by"), option="Price: low to high")
    yield act("click", ref=v.find("button", contains="Buy "))
    yield act("done")


def _word_solve(p, v):
    para = v.find_all("paragraph")[0].name
    yield act("done", answer=para.split()[p["k"]].strip("."))


# ---------------------------------------------------------------- the table: id, pages, generate, check, solve
TASKS = [
    PageTask("table-lookup", TABLE_LOOKUP_PAGES, _lookup_gen, answer_is("$target.email"), _lookup_solve),
    PageTask("table-oldest", TABLE_OLDEST_PAGES, _oldest_gen, answer_is("$target"), _oldest_solve),
    PageTask("table-delete-row", TABLE_DELETE_PAGES, _delete_gen, state_is("deleted", ["$target"]), _delete_solve),
    PageTask("table-sort", TABLE_SORT_PAGES, _sort_gen, state_is("sort", ["$col", "$dir"]), _sort_solve),
    PageTask("search-engine", SEARCH_ENGINE_PAGES, _search_gen,
             lambda p, s, a: st(s, "opened") == p["target"] and normalise(st(s, "query")) == p["query"],
             plan(("type", "searchbox", None, {"text": "$query", "submit": True}),
                  ("click", "link", "$target"), ("done",))),
    PageTask("filter-list", FILTER_LIST_PAGES, _filter_gen, answer_is("$target.city"), _filter_solve),
    PageTask("paginate", PAGINATE_PAGES, _paginate_gen, state_is("clicks", ["$target"]), _paginate_solve),
    PageTask("sort-and-buy", SORT_AND_BUY_PAGES, _cheapest_gen,
             state_is("bought", {"name": "$target", "sort": "low"}), _cheapest_solve),
    PageTask("find-word", FIND_WORD_PAGES, _word_gen,
             lambda p, s, a: normalise(a).strip(".") == p["words"][p["k"]], _word_solve),
    PageTask("folder-tree", FOLDER_TREE_PAGES, _tree_gen, state_is("opened", ["$path"]),
             plan(("click", "treeitem", "$folder"), ("click", "treeitem", "$target"), ("done",))),
]
