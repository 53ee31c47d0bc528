"""Scripted action sequences for a sample of MiniWoB++ tasks: the env's oracle and the parity scripts.

A script reads the task's utterance and returns steps such as ``Step("click", "#area button", text="OK")``.
A step names its element the way a person would point at it (a CSS selector plus its text or label),
and is turned into one env's own element id only when it runs: clawgym's ``data-cg-ref`` (then a GUI
tool call) or BrowserGym's ``bid`` (then its ``click("bid")`` action). So the same sequence runs through
both, which is what ``benchmarks/miniwob_parity.py`` compares. ``WRONG`` holds deliberately wrong
sequences (MiniWoB++ answers them with a raw reward of -1, or a partial one).

Left out, because GUI-v0's observation gives their target no ref (so no agent can act on it either):
click-link (its links are ``<span>``s with a pointer cursor inside a text paragraph, reported as text)
and click-collapsible (jQuery UI turns the paragraph holding Submit into an accordion ``tab``, whose
children are not walked).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable

from clawgym.envs.gui.task import act


@dataclass
class Step:
    tool: str  # click | type | select | check
    css: str
    text: str | None = None  # the element's own text (or value), exact
    label: str | None = None  # the text of the field's <label>, exact
    not_text: str | None = None  # any element but the one with this text
    args: dict[str, Any] = field(default_factory=dict)


# The id (``attr``) of the first visible element matching ``css`` and the text/label filters.
RESOLVE_JS = r"""
([css, text, label, notText, attr]) => {
  const norm = (s) => (s || '').replace(/\s+/g, ' ').trim();
  for (const e of document.querySelectorAll(css)) {
    if (e.checkVisibility && !e.checkVisibility({visibilityProperty: true})) continue;
    if (text !== null && norm(e.textContent) !== text && norm(e.value) !== text) continue;
    if (notText !== null && norm(e.textContent) === notText) continue;
    if (label !== null && !(e.labels && Array.from(e.labels).some((l) => norm(l.textContent) === label))) continue;
    return {found: true, id: e.getAttribute(attr)};
  }
  return {found: false, id: null};
}
"""


def resolve(page: Any, step: Step, attr: str) -> str:
    """The element id (attribute ``attr``) a step points at; LookupError when there is none."""
    hit = page.evaluate(RESOLVE_JS, [step.css, step.text, step.label, step.not_text, attr])
    if not hit["found"]:
        raise LookupError(f"no visible element {step.css!r} text={step.text!r} label={step.label!r}")
    if hit["id"] is None:
        raise LookupError(f"element {step.css!r} text={step.text!r} label={step.label!r} has no {attr} (not observed)")
    return str(hit["id"])


def _quoted(utterance: str) -> list[str]:
    return re.findall(r'"([^"]*)"', utterance)


def _click_button(u: str) -> list[Step]:
    return [Step("click", "#area button", text=_quoted(u)[0])]


def _click_named(u: str) -> list[Step]:  # "Click button ONE."
    return [Step("click", "#area button", text=re.search(r"button (\w+)", u).group(1))]


def _enter_text(u: str) -> list[Step]:
    return [Step("type", "#tt", args={"text": _quoted(u)[0]}), Step("click", "#subbtn")]


def _enter_text_2(u: str) -> list[Step]:
    word = _quoted(u)[0]
    word = word.lower() if "lower case" in u else word.upper()
    return [Step("type", "#tt", args={"text": word}), Step("click", "#subbtn")]


def _checkboxes(u: str) -> list[Step]:
    names = re.match(r"Select (.*) and click Submit\.", u).group(1)
    words = [] if names == "nothing" else [w.strip() for w in names.split(",")]
    return [Step("check", "#area input[type=checkbox]", label=w) for w in words] + [Step("click", "#subbtn")]


def _enter_date(u: str) -> list[Step]:
    month, day, year = re.search(r"(\d\d)/(\d\d)/(\d{4})", u).groups()
    return [Step("type", "#tt", args={"text": f"{year}-{month}-{day}"}), Step("click", "#subbtn")]


def _enter_time(u: str) -> list[Step]:
    hour, minute, half = re.search(r"(\d+):(\d\d) ?(AM|PM)", u).groups()
    hour = int(hour) % 12 + (12 if half == "PM" else 0)
    return [Step("type", "#tt", args={"text": f"{hour:02d}:{minute}"}), Step("click", "#subbtn")]


WIDGETS = {"button": "#area button", "checkbox": "#area input[type=checkbox]", "radio": "#area input[type=radio]",
           "text": "#area input[data-type=text]", "textarea": "#area textarea"}

SCRIPTS: dict[str, Callable[[str], list[Step]]] = {
    "click-test": lambda u: [Step("click", "#subbtn")],
    "click-test-2": _click_named,
    "click-test-transfer": _click_named,
    "click-button-sequence": lambda u: [Step("click", "#area button", text="ONE"), Step("click", "#area button", text="TWO")],
    "click-button": _click_button,
    "unicode-test": _click_button,
    "click-dialog": lambda u: [Step("click", ".ui-dialog-titlebar button")],
    "click-dialog-2": lambda u: [Step("click", ".ui-dialog-titlebar button") if _quoted(u)[0] == "x"
                                 else Step("click", ".ui-dialog-buttonset button", text=_quoted(u)[0])],
    "enter-text": _enter_text,
    "enter-text-dynamic": _enter_text,
    "enter-text-2": _enter_text_2,
    "enter-password": lambda u: [Step("type", "#password", args={"text": _quoted(u)[0]}),
                                 Step("type", "#verify", args={"text": _quoted(u)[0]}), Step("click", "#subbtn")],
    "login-user": lambda u: [Step("type", "#username", args={"text": _quoted(u)[0]}),
                             Step("type", "#password", args={"text": _quoted(u)[1]}), Step("click", "#subbtn")],
    "focus-text": lambda u: [Step("click", "#tt")],
    "click-checkboxes": _checkboxes,
    "click-checkboxes-large": _checkboxes,
    "click-checkboxes-transfer": _checkboxes,
    "click-option": lambda u: [Step("check", "#area input[type=radio]", label=re.match(r"Select (.*) and click Submit\.", u).group(1)),
                               Step("click", "#subbtn")],
    "click-tab": lambda u: [Step("click", "#area [role=tab]", text=re.search(r"Tab #\d", u).group(0))],
    "focus-text-2": lambda u: [Step("click", "#tt" + re.search(r"(\d)(st|nd|rd)", u).group(1))],
    "enter-date": _enter_date,
    "enter-time": _enter_time,
    "choose-list": lambda u: [Step("select", "#options", args={"option": re.match(r"Select (.*) from the list", u).group(1)}),
                              Step("click", "#area button", text="Submit")],
    "click-widget": lambda u: [Step("click", WIDGETS[_quoted(u)[0]])],
}

WRONG: dict[str, Callable[[str], list[Step]]] = {
    "click-test-2": lambda u: [Step("click", "#area button", text="TWO" if "ONE" in u else "ONE")],
    "click-button": lambda u: [Step("click", "#area button", not_text=_quoted(u)[0])],
    "enter-text": lambda u: [Step("type", "#tt", args={"text": _quoted(u)[0] + "x"}), Step("click", "#subbtn")],
    "click-option": lambda u: [Step("click", "#subbtn")],
    "click-tab": lambda u: [Step("click", "#area [role=tab]", text="Tab #1" if "#1" not in u else "Tab #2")],
    "focus-text-2": lambda u: [Step("click", "#tt1" if "1st" not in u else "#tt2")],
    "click-checkboxes": lambda u: [Step("click", "#subbtn")],
}


def next_action(env: Any, task_id: str, index: int) -> dict[str, Any]:
    """The oracle's ``index``-th GUI tool call for the running MiniWoB episode of ``env`` (a MiniWoBEnv)."""
    script = SCRIPTS.get(task_id)
    if script is None:
        raise NotImplementedError(f"MiniWoB task {task_id!r} has no scripted oracle; scripted: {', '.join(sorted(SCRIPTS))}")
    steps = script(env.utterance)
    if index >= len(steps):
        return act("done")
    step = steps[index]
    with env.browser.guard():
        ref = int(resolve(env.browser.page, step, "data-cg-ref"))
    return act(step.tool, ref=ref, **step.args)


__all__ = ["RESOLVE_JS", "SCRIPTS", "Step", "WRONG", "next_action", "resolve"]
