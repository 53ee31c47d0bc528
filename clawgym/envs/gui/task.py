"""The GUI task API: a page task is HTML pages + a seeded generator + a Python checker (+ an oracle).

```python
PageTask(
    id="click-color",
    pages={"index.html": "<button onclick=\"CG.set('clicked', this.innerText)\">...</button>"},
    generate=lambda rng: {"prompt": "Click red.", "target": "red"},      # per-episode content
    check=lambda p, s, answer: s["state"].get("clicked") == p["target"],  # reward 1.0 / 0.0 (or a float)
    solve=my_oracle,                                                      # optional: proves solvability
)
```

Pages are served by the env's task server under ``/ep/<seed>/<task_id>/``, so relative links keep the
episode's seed. Each HTML page gets ``window.CG`` injected (see ``CG_JS``): ``CG.p`` is the params dict
from ``generate``, ``CG.set/get/push`` record state in ``sessionStorage`` (which survives page loads
within the episode), ``CG.h`` builds elements, ``CG.q`` reads the query string, ``CG.rng`` is a seeded
PRNG. Checkers get ``s = {"state", "url", "text", "fields"}`` read from the page when the episode ends,
and the agent's final answer (None when the episode was truncated).

An oracle is a generator ``solve(params, view)`` yielding actions (``act("click", ref=3)``) and
receiving the next :class:`PageView` after each; it ends when it yields ``act("done", answer=...)``.

Most bundled tasks are data written with two small builders instead of code: ``plan(...)`` is an
oracle from a fixed list of steps (``("click", "button", "$target")``: click the button named by the
param ``target``; ``("each", "$order", ("click", "button", "$_"))`` repeats a step per item) and
``state_is(key, expected)`` / ``answer_is(expected)`` are checkers; ``"$a.b"`` anywhere reads
``params["a"]["b"]``. Tasks whose oracle must read the page (count rows, page through a calendar) keep
a Python ``solve``.

A URL task (``url_task``) points at any page on an allow-listed origin instead; it is checked by its
answer or by a JavaScript expression evaluated in the page.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Callable, Generator

import numpy as np

from clawgym.core.tasks import Task
from clawgym.envs.gui.observe import PageView

Params = dict[str, Any]
Oracle = Callable[[Params, PageView], Generator[dict[str, Any], PageView, None]]

CG_JS = r"""
(function () {
  var KEY = '__clawgym_state';
  function load() { try { return JSON.parse(sessionStorage.getItem(KEY) || '{}'); } catch (e) { return {}; } }
  function save(s) { sessionStorage.setItem(KEY, JSON.stringify(s)); window.__clawgym_state = s; }
  var seed = (window.__CG_SEED >>> 0) || 1;
  window.CG = {
    p: window.__CG_PARAMS || {},
    seed: window.__CG_SEED,
    state: function () { return load(); },
    get: function (k, d) { var s = load(); return (k in s) ? s[k] : d; },
    set: function (k, v) { var s = load(); s[k] = v; save(s); },
    push: function (k, v) { var s = load(); (s[k] = s[k] || []).push(v); save(s); },
    q: function (k) { return new URLSearchParams(location.search).get(k); },
    rng: function () { seed = (seed + 0x6D2B79F5) >>> 0; var t = seed; t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61); return ((t ^ (t >>> 14)) >>> 0) / 4294967296; },
    h: function (tag, attrs) {
      var el = document.createElement(tag);
      for (var k in (attrs || {})) {
        if (k === 'text') el.textContent = attrs[k];
        else if (k.slice(0, 2) === 'on') el.addEventListener(k.slice(2), attrs[k]);
        else if (attrs[k] !== false && attrs[k] != null) el.setAttribute(k, attrs[k] === true ? '' : attrs[k]);
      }
      for (var i = 2; i < arguments.length; i++) {
        var c = arguments[i];
        if (c == null) continue;
        el.appendChild(typeof c === 'string' ? document.createTextNode(c) : c);
      }
      return el;
    },
    show: function (el) { (document.getElementById('app') || document.body).appendChild(el); return el; }
  };
})();
"""

# what checkers get as ``s``: the page's reported state (sessionStorage), URL, body text and form fields
STATE_JS = r"""
() => {
  let state = {};
  try { state = JSON.parse(sessionStorage.getItem('__clawgym_state') || '{}'); } catch (e) {}
  const fields = {};
  document.querySelectorAll('input,select,textarea').forEach((el, i) => {
    const key = el.name || el.id || ('field' + i);
    if (el.type === 'checkbox' || el.type === 'radio') { if (el.type === 'radio') { if (el.checked) fields[key] = el.value; } else fields[key] = el.checked; }
    else fields[key] = el.value;
  });
  return {state: state, url: location.href, text: document.body ? document.body.innerText : '', fields: fields};
}
"""  # noqa: E501  (JavaScript run in the page: kept as written)

PAGE_STYLE = (
    "<style>body{font-family:sans-serif;margin:12px;font-size:14px}button{margin:3px}"
    "#instr{background:#ffc;padding:6px;margin-bottom:8px}.modal{position:fixed;inset:0;background:rgba(0,0,0,.4);"
    "display:flex;align-items:center;justify-content:center}.box{background:#fff;padding:16px;min-width:240px}"
    "td,th{border:1px solid #ccc;padding:2px 6px}</style>"
)


def act(name: str, **arguments: Any) -> dict[str, Any]:
    """An assistant message calling one GUI tool (what oracles yield and what ``env.step`` takes)."""
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "call_0", "type": "function",
                        "function": {"name": name, "arguments": json.dumps(arguments)}}],
    }


@dataclass
class PageTask:
    """A bundled or user-defined page task. ``generate`` must be deterministic in its ``rng``."""

    id: str
    pages: dict[str, str]
    generate: Callable[[np.random.Generator], Params]
    check: Callable[[Params, dict[str, Any], str | None], bool | float]
    solve: Oracle | None = None
    start: str = "index.html"
    description: str = ""
    split: str = "train"

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[A-Za-z0-9_.-]+", self.id):
            raise ValueError(f"task id {self.id!r} may only use letters, digits, '.', '_' and '-'")
        if self.start not in self.pages:
            raise ValueError(f"task {self.id!r}: start page {self.start!r} is not in pages {sorted(self.pages)}")

    def params(self, seed: int) -> Params:
        params = self.generate(np.random.default_rng(seed))
        if not isinstance(params, dict) or not isinstance(params.get("prompt"), str):
            raise ValueError(f"task {self.id!r}: generate() must return a dict with a 'prompt' string")
        json.dumps(params)  # the page receives them as JSON
        return params

    def to_task(self) -> Task:
        return Task(id=self.id, prompt=self.description or self.id, split=self.split, data={"page_task": self})


def render_page(html: str, params: Params, seed: int) -> str:
    """Inject the CG runtime and the episode's params at the top of a page."""
    payload = json.dumps(params).replace("</", "<\\/")
    head = f"<script>window.__CG_PARAMS={payload};window.__CG_SEED={int(seed)};{CG_JS}</script>{PAGE_STYLE}"
    match = re.search(r"<head[^>]*>", html, re.IGNORECASE)
    if match:
        return html[: match.end()] + head + html[match.end():]
    return "<!doctype html><html><head><meta charset='utf-8'>" + head + "</head><body>" + html + "</body></html>"


def resolve(value: Any, params: Params, item: Any = None) -> Any:
    """``"$key.sub"`` -> ``params["key"]["sub"]`` (``"$_"``: the current ``each`` item), recursively;
    ``"Delete {target}"`` is formatted with the params."""
    if isinstance(value, str) and "{" in value and not value.startswith("$"):
        return value.format(**params)
    if isinstance(value, str) and value.startswith("$"):
        path = value[1:].split(".")
        found: Any = item if path[0] == "_" else params[path[0]]
        for part in path[1:]:
            found = found[int(part)] if isinstance(found, list) else found[part]
        return found
    if isinstance(value, list):
        return [resolve(v, params, item) for v in value]
    if isinstance(value, dict):
        return {k: resolve(v, params, item) for k, v in value.items()}
    return value


def plan(*steps: tuple) -> Oracle:
    """An oracle from fixed steps: ``(tool, role, name, {args})`` (a ``ref`` found by role and name),
    ``(tool, {args})`` (no element), or ``("each", "$list", step)``; it ends with ``done``."""

    def expand(step: tuple, params: Params, item: Any = None) -> list[tuple[tuple, Any]]:
        if step[0] == "each":
            return [(step[2], x) for x in resolve(step[1], params, item)]
        return [(step, item)]

    def solve(params: Params, view: PageView) -> Generator[dict[str, Any], PageView, None]:
        for step, item in [pair for s in steps for pair in expand(s, params)]:
            tool, rest = step[0], list(step[1:])
            args = resolve(rest.pop() if rest and isinstance(rest[-1], dict) else {}, params, item)
            if rest:  # an element to act on: (role, name)
                role, name = (resolve(x, params, item) for x in rest)
                args = {"ref": view.find(role, name), **args}
            view = yield act(tool, **args)

    return solve


def state_is(key: str, expected: Any) -> Callable[[Params, dict[str, Any], str | None], bool]:
    """Success when the page recorded ``key`` (``CG.set``/``CG.push``) equal to ``expected`` ($-params resolved)."""
    return lambda p, s, a: s.get("state", {}).get(key) == resolve(expected, p)


def answer_is(expected: Any) -> Callable[[Params, dict[str, Any], str | None], bool]:
    """Success when the final answer equals ``expected`` (case and spacing ignored)."""
    return lambda p, s, a: normalise(a) == normalise(resolve(expected, p))


def url_task(
    id: str,
    url: str,
    prompt: str,
    *,
    answer: str | None = None,
    check_js: str | None = None,
    allowed_origins: list[str] | None = None,
    split: str = "train",
) -> Task:
    """A task on any page the env may reach; its origin joins the episode's allow-list.

    Success is ``answer`` matching the agent's final answer (case and surrounding space ignored) and/or
    ``check_js`` (a JS expression) being truthy in the page when the episode ends.
    """
    if answer is None and check_js is None:
        raise ValueError("a URL task needs an answer or a check_js expression to be checked")
    if not url.startswith(("http://", "https://")):
        raise ValueError(f"a URL task needs an http(s) URL, got {url!r}")
    return Task(id=id, prompt=prompt, answer=answer, split=split,
                data={"url": url, "check_js": check_js, "allowed_origins": list(allowed_origins or [])})


def normalise(text: Any) -> str:
    return re.sub(r"\s+", " ", str(text if text is not None else "")).strip().lower()
