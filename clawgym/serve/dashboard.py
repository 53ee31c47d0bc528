"""``GET /dashboard``: watch each user's agent learn, live, in any browser (no front-end build step).

The page is one static HTML document that polls ``GET /dashboard/data`` every two seconds and draws,
per user: turns recorded and judged, the verdict mix, the latest hindsight hints, the remembered
wishes (each with a button that takes it back through ``DELETE /v1/wishes/{id}``, and, for a wish with a
compiled check, "how I check this": its code, its test, and a button that takes the check alone back through
``DELETE /v1/wishes/{id}/check``), explicit thumbs,
train steps, failed train steps (with the last error) and the adapter version, a curve of the
judge's verdicts (a running mean over the last 8 judged turns) with a mark at every published
adapter version, and, with hindsight groups (``serve.hindsight_k``), a curve of the share of the
user's wishes that the served replies met (the rubric judge's score of each real reply, same mean).
Above the users, the training panel: the version that serves, whether training is paused and why (with a
button that resumes it, ``POST /v1/training/resume``), the publish gate's last verdict (both scores), the
alarms that fired and the kept versions, each with a button that serves it again (``POST /v1/rollback``).
With per-user adapters (``serve.adapters: per_user``) the panel is one card per person, for their adapter,
and each button names them (``{"user": ...}``: the person's own key, or the admin key, may press it).

:class:`Dashboard` keeps these numbers in memory, fed by the gateway (turn recorded, turn judged,
feedback), the wish memory (a user's wishes changed) and the trainer (step published);
:meth:`Dashboard.rebuild` recomputes them from the turn log after a restart, so the page shows the
whole history, and :meth:`Dashboard.forget` drops a forgotten user.
"""

from __future__ import annotations

import collections
import contextlib
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Mapping, TypedDict

from fastapi import APIRouter
from fastapi.responses import HTMLResponse

from clawgym.personal.rubric_cues import checkable

if TYPE_CHECKING:
    from clawgym.personal.wish_memory import Wish
    from clawgym.rl.types import JSONObject, Turn

CURVE_POINTS = 400


class WishView(TypedDict):
    """A wish as the dashboard shows it."""

    id: str
    text: str
    times: int
    source: str
    replaced: list[str]
    checkable: bool  # whether any reply can show it (else it is not scored)
    check: str  # its compiled check's code ("": none; clawgym.personal.wish_checks)
    check_note: str  # what the check's test showed, or why none was kept


@dataclass
class UserActivity:
    turns: int = 0
    judged: int = 0
    verdicts: collections.Counter = field(default_factory=collections.Counter)
    hints: collections.deque = field(default_factory=lambda: collections.deque(maxlen=5))
    thumbs: collections.Counter = field(default_factory=collections.Counter)
    steps: int = 0
    unpublished: int = 0  # steps the publish gate or an alarm kept from serving
    train_errors: int = 0  # steps that raised since the server started (their turns were dropped)
    last_train_error: str = ""
    adapter_version: int = 0
    curve: collections.deque = field(default_factory=lambda: collections.deque(maxlen=CURVE_POINTS))
    marks: list[dict[str, int]] = field(default_factory=list)  # {"judged": n, "version": v} per publication
    wishes: list[WishView] = field(default_factory=list)  # the wish memory's current list
    wishes_met: collections.deque = field(default_factory=lambda: collections.deque(maxlen=CURVE_POINTS))

    def to_json(self) -> JSONObject:
        return {"turns": self.turns, "judged": self.judged,
                "verdicts": {"+1": self.verdicts[1], "-1": self.verdicts[-1], "0": self.verdicts[0]},
                "hints": list(self.hints), "thumbs": {"up": self.thumbs["up"], "down": self.thumbs["down"]},
                "steps": self.steps, "unpublished": self.unpublished, "train_errors": self.train_errors,
                "last_train_error": self.last_train_error,
                "adapter_version": self.adapter_version,
                "curve": list(self.curve), "marks": self.marks[-50:], "wishes": self.wishes,
                "wishes_met": list(self.wishes_met)}


def _running(points: Iterable[Mapping[str, float]], key: str, value: float) -> float:
    recent = [p[key] for p in list(points)[-7:]] + [value]
    return round(sum(recent) / len(recent), 3)


def _verdict(turn: Turn) -> int | None:
    for name, result in turn.judge.items():
        if name != "hint" and getattr(result, "source", "") != "error":
            return int(round(float(result.score)))
    return None


class Dashboard:
    def __init__(self) -> None:
        self.users: dict[str, UserActivity] = collections.defaultdict(UserActivity)
        self.training: JSONObject = {}  # the learner's status (versions, the gate's verdict, alarms, paused)
        self.updates = 0  # bumped on every change: the page redraws only when it moved
        self._lock = threading.Lock()

    @staticmethod
    def user_of(turn: Turn) -> str:
        return str(turn.info.get("user") or "default")

    @contextlib.contextmanager
    def _changing(self, user: str) -> Iterator[UserActivity]:
        """``user``'s activity, under the lock, for one change; the change bumps ``updates`` once it is made."""
        with self._lock:
            yield self.users[user]
            self.updates += 1

    def observe_turn(self, turn: Turn) -> None:
        with self._changing(self.user_of(turn)) as activity:
            activity.turns += 1

    def observe_judged(self, turn: Turn) -> None:
        with self._changing(self.user_of(turn)) as activity:
            activity.judged += 1
            verdict = _verdict(turn)
            if verdict is not None:
                activity.verdicts[verdict] += 1
                activity.curve.append({"judged": activity.judged, "verdict": verdict,
                                       "mean": _running(activity.curve, "verdict", verdict)})
            hint = turn.judge.get("hint")
            for text in getattr(hint, "hints", None) or []:
                activity.hints.appendleft(text)

    def observe_step(self, user: str, adapter_version: int) -> None:
        with self._changing(user) as activity:
            activity.steps += 1
            activity.adapter_version = adapter_version
            activity.marks.append({"judged": activity.judged, "version": adapter_version})

    def observe_step_record(self, record: JSONObject) -> None:
        """A train step's record: a published one marks the curve; one the gate or an alarm kept back is counted."""
        user = str(record.get("user") or "default")
        if record.get("published", True):
            self.observe_step(user, int(record.get("adapter_version", record.get("policy_version", 0))))
        else:
            with self._changing(user) as activity:
                activity.unpublished += 1

    def observe_training(self, status: JSONObject) -> None:
        """The learner's status after a change: a step, a refusal, an alarm, a rollback, a resume."""
        with self._lock:
            self.training = dict(status)
            self.updates += 1

    def observe_wishes_met(self, user: str, met: float) -> None:
        """The rubric judge's score of a served reply: the share of ``user``'s wishes it met (hindsight groups)."""
        with self._changing(user) as activity:
            activity.wishes_met.append({"judged": activity.judged, "met": round(float(met), 3),
                                        "mean": _running(activity.wishes_met, "met", float(met))})

    def observe_train_error(self, user: str, message: str) -> None:
        with self._changing(user) as activity:
            activity.train_errors += 1
            activity.last_train_error = message

    def observe_feedback(self, user: str, thumb: str) -> None:
        with self._changing(user) as activity:
            activity.thumbs[thumb] += 1

    def observe_wishes(self, user: str, wishes: Iterable[Wish]) -> None:
        """The user's wishes changed (:class:`~clawgym.personal.wish_memory.WishMemory`'s ``on_change``)."""
        with self._changing(user) as activity:
            activity.wishes = [{"id": w.id, "text": w.text, "times": w.times, "source": w.source,
                                "replaced": list(w.replaced), "checkable": checkable(w.text),
                                "check": w.check if w.check_state == "compiled" else "", "check_note": w.check_note}
                               for w in wishes]

    def forget(self, user: str) -> None:
        with self._lock:
            self.users.pop(user, None)
            self.updates += 1

    def rebuild(self, turns: Iterable[Turn], steps: Iterable[JSONObject] = ()) -> None:
        """Recompute from the turn log (and the trainer's step records) after a restart."""
        for turn in turns:
            self.observe_turn(turn)
            if turn.judge:
                self.observe_judged(turn)
        for record in steps:
            self.observe_step_record(record)

    def data(self) -> JSONObject:
        with self._lock:
            return {"updates": self.updates, "training": self.training,
                    "users": {u: a.to_json() for u, a in sorted(self.users.items())}}

    def router(self) -> APIRouter:
        router = APIRouter()

        @router.get("/dashboard", response_class=HTMLResponse)
        async def page() -> str:
            return PAGE

        @router.get("/dashboard/data")
        async def data() -> dict[str, Any]:
            return self.data()

        return router


PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>clawgym: your agent, learning</title>
<style>
body{font-family:system-ui,sans-serif;margin:20px;background:#fafafa;color:#222}
.user{background:#fff;border:1px solid #ddd;border-radius:8px;padding:12px 16px;margin:12px 0;max-width:760px}
.stats span{display:inline-block;margin-right:14px}
.hints{font-size:13px;color:#555}
.error{font-size:13px;color:#b00}
.wishes{font-size:14px;margin:6px 0}
.wish button{font-size:11px;margin-left:8px}
.wish pre{font-size:12px;background:#f4f4f4;padding:6px;white-space:pre-wrap}
svg{background:#f4f7fb;border-radius:4px}
</style></head>
<body>
<h1>clawgym: your agent, learning</h1>
<p id="status">loading…</p>
<div id="training"></div>
<div id="users"></div>
<script>
var seen = -1;
function el(tag, attrs, text) { var e = document.createElement(tag); for (var k in attrs || {}) e.setAttribute(k, attrs[k]);
  if (text != null) e.textContent = text; return e; }
function curve(points, marks, label, lo) {
  var w = 700, h = 120, svg = document.createElementNS('http://www.w3.org/2000/svg', 'svg');
  svg.setAttribute('width', w); svg.setAttribute('height', h); svg.setAttribute('aria-label', label);
  if (!points.length) return svg;
  var n = Math.max(points[points.length - 1].judged, 2);
  function x(j) { return 10 + (w - 20) * (j - 1) / (n - 1); }
  function y(v) { return h - 10 - (h - 20) * (v - lo) / (1 - lo); }
  marks.forEach(function (m) { var l = document.createElementNS(svg.namespaceURI, 'line');
    l.setAttribute('x1', x(m.judged)); l.setAttribute('x2', x(m.judged)); l.setAttribute('y1', 0); l.setAttribute('y2', h);
    l.setAttribute('stroke', '#9c9'); l.setAttribute('stroke-dasharray', '3,3'); svg.appendChild(l); });
  var line = document.createElementNS(svg.namespaceURI, 'polyline');
  line.setAttribute('points', points.map(function (p) { return x(p.judged) + ',' + y(p.mean); }).join(' '));
  line.setAttribute('fill', 'none'); line.setAttribute('stroke', '#36c'); line.setAttribute('stroke-width', 2);
  svg.appendChild(line); return svg;
}
function post(path, body, what) {
  fetch(path, {method: 'POST', body: JSON.stringify(body || {}), headers: Object.assign({'Content-Type': 'application/json'},
    window.DASHBOARD_KEY ? {'Authorization': 'Bearer ' + window.DASHBOARD_KEY} : {})})
    .then(function (r) { if (!r.ok) return r.json().then(function (e) { throw new Error(e.error ? e.error.message : 'HTTP ' + r.status); });
      seen = -1; })
    .catch(function (e) { document.getElementById('status').textContent = 'could not ' + what + ': ' + e.message; });
}
function trainingCard(t, title, user) {
  // one set of weights: the shared ones (user null) or one person's adapter (every control names them)
  var named = user ? {user: user} : {};
  var card = el('div', {'class': 'user', 'data-training': user || '1'});
  card.appendChild(el('h2', {}, title + ': serving version ' + t.version));
  if (t.paused) {
    var p = el('div', {'class': 'error', 'data-paused': '1'}, 'training is paused: ' + t.reason + ' ');
    var resume = el('button', {}, 'resume training'); resume.onclick = function () { post('/v1/training/resume', named, 'resume'); };
    p.appendChild(resume); card.appendChild(p);
  } else card.appendChild(el('div', {'class': 'hints'}, t.gate ? 'each step publishes only if the publish gate finds it not worse'
    : 'every step publishes (no publish gate)'));
  var last = t.last;
  if (last) {
    var g = last.gate, words = last.published ? 'last step published' : 'last step NOT published';
    if (g && g.candidate != null) words += ': new weights ' + g.candidate + ' vs serving ' + g.serving + ' on ' + g.scored + ' held-back request(s)';
    else if (g) words += ' (' + g.reason.replace(/_/g, ' ') + ')';
    card.appendChild(el('div', {'class': last.published ? 'hints' : 'error', 'data-gate': '1'}, words));
    (last.alarms || []).forEach(function (a) { card.appendChild(el('div', {'class': 'error', 'data-alarm': a.signal}, '⚠ ' + a.message)); });
  }
  var list = el('div', {'class': 'wishes'}, (t.versions || []).length ? 'kept versions:' : 'no step trained yet');
  (t.versions || []).forEach(function (v) {
    var row = el('div', {'class': 'wish', 'data-version': v.version}, '• v' + v.version + ' (' + v.source + ')' + (v.serving ? ' — serving' : ''));
    if (!v.serving) { var b = el('button', {}, 'serve this version');
      b.onclick = function () { post('/v1/rollback', Object.assign({version: v.version}, named), 'roll back'); };
      row.appendChild(b); }
    list.appendChild(row); });
  card.appendChild(list);
  return card;
}
function drawTraining(t) {
  var box = document.getElementById('training'); box.innerHTML = '';
  if (!t) return;
  if (t.per_user) {  // per-user adapters: one panel per person, each with their own gate, alarms and versions
    Object.keys(t.users || {}).forEach(function (name) {
      box.appendChild(trainingCard(t.users[name], 'training of ' + name + "'s adapter", name)); });
    return;
  }
  if (t.version == null) return;
  box.appendChild(trainingCard(t, 'training', null));
}
function draw(data) {
  drawTraining(data.training);
  var box = document.getElementById('users'); box.innerHTML = '';
  var names = Object.keys(data.users);
  document.getElementById('status').textContent = names.length ? names.length + ' user(s); updated ' + new Date().toLocaleTimeString()
    : 'no turns yet: talk to the agent and this page fills in';
  names.forEach(function (name) {
    var u = data.users[name], card = el('div', {'class': 'user', 'data-user': name});
    card.appendChild(el('h2', {}, name));
    var s = el('div', {'class': 'stats'});
    [['turns', u.turns], ['judged', u.judged], ['verdicts +1/-1/0', u.verdicts['+1'] + '/' + u.verdicts['-1'] + '/' + u.verdicts['0']],
     ['thumbs up/down', u.thumbs.up + '/' + u.thumbs.down], ['train steps', u.steps], ['steps not published', u.unpublished],
     ['failed train steps', u.train_errors],
     ['adapter version', u.adapter_version]]
      .forEach(function (kv) { s.appendChild(el('span', {'data-stat': kv[0]}, kv[0] + ': ' + kv[1])); });
    card.appendChild(s);
    if (u.last_train_error) card.appendChild(el('div', {'class': 'error'}, 'last failed train step: ' + u.last_train_error));
    var wishes = el('div', {'class': 'wishes'}, u.wishes.length ? 'remembered wishes:' : 'no wishes remembered yet');
    u.wishes.forEach(function (w) {
      var row = el('div', {'class': 'wish', 'data-wish': w.id}, '• ' + w.text + (w.times > 1 ? ' (asked ' + w.times + ' times)' : '')
        + (w.replaced.length ? ' — replaces: ' + w.replaced.join('; ') : '')
        + (w.checkable ? '' : ' (no reply can show this one: it is not scored)'));
      var button = el('button', {}, 'forget this wish');
      button.onclick = function () { removeWish(name, w.id); };
      row.appendChild(button);
      if (w.check) { var how = el('details', {'data-check': w.id}); how.appendChild(el('summary', {}, 'how I check this'));
        how.appendChild(el('pre', {}, w.check)); how.appendChild(el('div', {'class': 'hints'}, w.check_note));
        var stop = el('button', {}, 'stop checking it by code'); stop.onclick = function () { removeCheck(name, w.id); };
        how.appendChild(stop); row.appendChild(how); }
      wishes.appendChild(row); });
    card.appendChild(wishes);
    card.appendChild(curve(u.curve, u.marks, 'verdict curve', -1));
    if (u.wishes_met.length) {
      card.appendChild(el('div', {'class': 'hints'}, 'share of your wishes the replies met (running mean of 8):'));
      card.appendChild(curve(u.wishes_met, u.marks, 'wishes met curve', 0));
    }
    var hints = el('div', {'class': 'hints'});
    u.hints.forEach(function (h) { hints.appendChild(el('div', {'class': 'hint'}, '💡 ' + h)); });
    card.appendChild(hints); box.appendChild(card);
  });
}
function removeWish(user, id) {
  fetch('/v1/wishes/' + encodeURIComponent(id) + '?user=' + encodeURIComponent(user), {method: 'DELETE',
    headers: window.DASHBOARD_KEY ? {'Authorization': 'Bearer ' + window.DASHBOARD_KEY} : {}})
    .then(function (r) { if (!r.ok) throw new Error('HTTP ' + r.status); seen = -1; })
    .catch(function (e) { document.getElementById('status').textContent = 'could not remove the wish: ' + e.message; });
}
function removeCheck(user, id) {
  fetch('/v1/wishes/' + encodeURIComponent(id) + '/check?user=' + encodeURIComponent(user), {method: 'DELETE',
    headers: window.DASHBOARD_KEY ? {'Authorization': 'Bearer ' + window.DASHBOARD_KEY} : {}})
    .then(function (r) { if (!r.ok) throw new Error('HTTP ' + r.status); seen = -1; })
    .catch(function (e) { document.getElementById('status').textContent = 'could not remove the check: ' + e.message; });
}
function poll() {
  fetch('/dashboard/data', {headers: window.DASHBOARD_KEY ? {'Authorization': 'Bearer ' + window.DASHBOARD_KEY} : {}})
    .then(function (r) { if (!r.ok) throw new Error('HTTP ' + r.status); return r.json(); })
    .then(function (d) { if (d.updates !== seen) { seen = d.updates; draw(d); } })
    .catch(function (e) { document.getElementById('status').textContent = 'cannot reach the gateway: ' + e.message; })
    .finally(function () { setTimeout(poll, 2000); });
}
var params = new URLSearchParams(location.search); if (params.get('key')) window.DASHBOARD_KEY = params.get('key');
poll();
</script></body></html>
"""  # noqa: E501  (the dashboard page: kept as written)
