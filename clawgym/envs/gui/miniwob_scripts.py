"""Scripted solutions of MiniWoB++ tasks that act only through the GUI observation: MiniWoB-v0's oracle.

A script is a generator ``script(utterance, view)``: it reads the task's utterance and the latest
:class:`PageView` (the page as the agent sees it), yields GUI tool calls on refs of that view, and is sent
the next view after each call. It never touches the page itself (no CSS selector, no DOM query), so a
task it solves is solvable from the observation alone; :func:`play_oracle` also checks that every ref a
script used was listed on the observation the agent had just been shown. ``miniwob_forms`` holds the
one-page forms and the helpers, ``miniwob_flows`` the pages that change as the agent acts; this module
maps task ids to them. ``benchmarks/miniwob_sweep.py`` plays every script on several page seeds.

``WRONG`` holds deliberately wrong scripts (MiniWoB++ answers them with a raw reward of -1, or a partial
one). ``benchmarks/miniwob_parity.py`` runs the same scripts through BrowserGym, turning each ref into
its element's ``bid``.

Not scripted (47 of the 125): tasks that need the mouse at a point or a drag (draw-*, drag-*,
bisect-angle, grid-coordinate, highlight-text, resize-textarea, ...); tasks that read colours, shapes or
pictures (click-color, click-shape, count-shape, identify-shape, use-colorwheel, visual-addition, half of
click-menu-2's problems, ...), which the text observation does not carry; terminal (the page reads key
events, and ``type`` fills fields); scrolling inside an element (scroll-text-2, sign-agreement); free-form
language (``*-nl-turk``, click-checkboxes-soft); a multi-choice list (click-scroll-list); and the long
forms, games and timed pages (book-flight, order-food, daily-calendar, text-editor, tic-tac-toe,
find-greatest, hot-cold, stock-market).
"""

from __future__ import annotations

import json
import re
from typing import Any, Generator

from clawgym.envs.gui import miniwob_flows as flows
from clawgym.envs.gui import miniwob_forms as forms
from clawgym.envs.gui.miniwob_forms import Script, after, click, fixed, nth, quoted, submit, text_field, type_into
from clawgym.envs.gui.observe import PageView
from clawgym.envs.gui.task import act

SCRIPTS: dict[str, Script] = {
    "click-test": fixed(lambda u, v: [click(v.find("button"))]),
    "click-test-2": fixed(lambda u, v: [click(v.find("button", re.search(r"button (\w+)", u).group(1)))]),
    "click-test-transfer": fixed(lambda u, v: [click(v.find("button", re.search(r"button (\w+)", u).group(1)))]),
    "click-button-sequence": fixed(lambda u, v: [click(v.find("button", "ONE")), click(v.find("button", "TWO"))]),
    "click-button": fixed(lambda u, v: [click(v.find("button", quoted(u)[0]))]),
    "unicode-test": fixed(lambda u, v: [click(v.find("button", quoted(u)[0]))]),
    "click-dialog": fixed(lambda u, v: [click(v.find("button", "Close"))]),
    "click-dialog-2": fixed(lambda u, v: [click(v.find("button", "Close" if quoted(u)[0] == "x" else quoted(u)[0]))]),
    "enter-text": forms.enter_then_submit(lambda u, v: quoted(u)[0]),
    "enter-text-dynamic": forms.enter_then_submit(lambda u, v: quoted(u)[0]),
    "enter-text-2": forms.enter_then_submit(forms.enter_text_2),
    "enter-password": fixed(lambda u, v: [type_into(text_field(v, 0), quoted(u)[0]),
                                           type_into(text_field(v, 1), quoted(u)[0]),
                                           click(submit(v))]),
    "login-user": fixed(lambda u, v: [type_into(text_field(v, 0), quoted(u)[0]),
                                       type_into(text_field(v, 1), quoted(u)[1]),
                                       click(v.find("button", "Login"))]),
    "login-user-popup": flows.login_user_popup,
    "focus-text": fixed(lambda u, v: [click(v.find("textbox"))]),
    "focus-text-2": fixed(lambda u, v: [click(text_field(v, nth(u) - 1))]),
    "click-checkboxes": fixed(forms.checkboxes),
    "click-checkboxes-large": fixed(forms.checkboxes),
    "click-checkboxes-transfer": fixed(forms.checkboxes),
    "click-option": fixed(lambda u, v: [
        act("check", ref=v.find("radio", re.match(r"Select (.*) and click Submit\.", u).group(1))),
        click(submit(v))]),
    "click-tab": fixed(lambda u, v: [click(v.find("tab", re.search(r"Tab #\d", u).group(0)))]),
    "enter-date": forms.enter_then_submit(forms.enter_date),
    "choose-date": flows.choose_date,
    "choose-date-easy": flows.choose_date,
    "choose-date-medium": flows.choose_date,
    "choose-date-nodelay": flows.choose_date,
    "form-sequence": flows.form_sequence,
    "form-sequence-2": fixed(forms.form_sequence_2),
    "form-sequence-3": fixed(forms.form_sequence_3),
    "generate-number": flows.generate_number,
    "buy-ticket": fixed(forms.buy_ticket),
    "enter-time": forms.enter_then_submit(forms.enter_time),
    "choose-list": fixed(lambda u, v: [
        act("select", ref=v.find("combobox"), option=re.match(r"Select (.*) from the list", u).group(1)),
        click(submit(v))]),
    "click-widget": fixed(forms.click_widget),
    "click-link": fixed(lambda u, v: [click(v.find("clickable", quoted(u)[0]))]),
    "click-collapsible": flows.click_collapsible,
    "click-collapsible-nodelay": flows.click_collapsible,
    "click-collapsible-2": flows.find_link_behind_tabs,
    "click-collapsible-2-nodelay": flows.find_link_behind_tabs,
    "click-tab-2": flows.find_link_behind_tabs,
    "click-tab-2-easy": flows.find_link_behind_tabs,
    "click-tab-2-medium": flows.find_link_behind_tabs,
    "click-tab-2-hard": flows.find_link_behind_tabs,
    "click-pie": flows.click_pie,
    "click-pie-nodelay": flows.click_pie,
    "click-menu": flows.click_menu,
    "ascending-numbers": flows.ascending,
    "use-slider": flows.use_slider,
    "use-slider-2": flows.use_slider_2,
    "use-spinner": flows.use_spinner,
    "use-autocomplete": flows.use_autocomplete,
    "use-autocomplete-nodelay": flows.use_autocomplete,
    "email-inbox": flows.email,
    "email-inbox-delete": flows.email,
    "email-inbox-forward": flows.email,
    "email-inbox-forward-nl": flows.email_forward_nl,
    "email-inbox-important": flows.email,
    "email-inbox-noscroll": flows.email,
    "email-inbox-reply": flows.email,
    "email-inbox-star-reply": flows.email,
    "social-media": flows.social_media,
    "social-media-all": flows.social_media_many,
    "social-media-some": flows.social_media_many,
    "navigate-tree": flows.navigate_tree,
    "search-engine": flows.search_engine,
    "guess-number": flows.guess_number,
    "phone-book": flows.phone_book,
    "find-word": forms.enter_then_submit(forms.find_word),
    "read-table": forms.enter_then_submit(
        lambda u, v: forms.table_value(v, re.search(r"value of (.+) into", u).group(1))),
    "read-table-2": fixed(forms.read_table_2),
    "simple-arithmetic": forms.enter_then_submit(forms.arithmetic),
    "simple-algebra": forms.enter_then_submit(forms.algebra),
    "odd-or-even": fixed(forms.odd_or_even),
    "copy-paste": fixed(forms.copy_paste),
    "copy-paste-2": fixed(forms.copy_paste),
    "scroll-text": forms.enter_then_submit(lambda u, v: v.find_all("textbox")[0].attrs["value"].split()[-1]),
    "multi-orderings": fixed(forms.movie_form),
    "multi-layouts": fixed(forms.movie_form),
}

WRONG: dict[str, Script] = {
    "click-test-2": fixed(lambda u, v: [click(v.find("button", "TWO" if "ONE" in u else "ONE"))]),
    "click-button": fixed(lambda u, v: [click(next(e.ref for e in v.find_all("button") if e.name != quoted(u)[0]))]),
    "enter-text": forms.enter_then_submit(lambda u, v: quoted(u)[0] + "x"),
    "click-option": fixed(lambda u, v: [click(submit(v))]),
    "click-tab": fixed(lambda u, v: [click(v.find("tab", "Tab #1" if "#1" not in u else "Tab #2"))]),
    "focus-text-2": fixed(lambda u, v: [click(text_field(v, 0 if nth(u) != 1 else 1))]),
    "click-checkboxes": fixed(lambda u, v: [click(submit(v))]),
    "email-inbox-delete": fixed(lambda u, v: [click(after(
        v, next(e.ref for e in v.elements if e.depth == 0 and e.role == "clickable"
                and " " in e.name and not e.name.startswith(re.search(r"by (\S+) ", u).group(1))),
        "clickable", "trash").ref)]),
}


def refs_shown(observation: str) -> set[int]:
    """The refs listed on an observation's page lines (``[12] button "OK"``)."""
    return {int(r) for r in re.findall(r"^\s*\[(\d+)\]", observation, flags=re.M)}


def play_oracle(env: Any, task_id: str, seed: int) -> dict[str, Any]:
    """Play one episode of the task's oracle in ``env`` (a MiniWoB-v0 env, any wrappers), checking that
    every ref it acts on was listed in the observation the agent had just been shown.

    Returns ``solved`` (raw reward 1 and no unseen ref), ``raw``, ``actions``, ``unseen`` (refs used that
    the latest observation did not list) and ``error`` (why it stopped early, if it did).
    """
    obs, info = env.reset(seed=seed, options={"task_id": task_id})
    shown = refs_shown(obs[-1]["content"])
    inner, actions, unseen, error, truncated = env.unwrapped, 0, [], None, False
    try:
        while True:
            action = inner.oracle_action()
            for call in action.get("tool_calls") or []:
                ref = json.loads(call["function"]["arguments"]).get("ref")
                if ref is not None and ref not in shown:
                    unseen.append(ref)
            obs, _, terminated, truncated, info = env.step(action)
            actions += 1
            shown = refs_shown(obs[-1]["content"])
            if terminated or truncated:
                break
    except (KeyError, IndexError, AttributeError, ValueError, RuntimeError) as exc:  # no target on the page shown
        error = f"{type(exc).__name__}: {str(exc).split(' on http')[0].splitlines()[0][:120]}"
    error = error or info.get("error") or (f"truncated by {info.get('truncated_by')}" if truncated else None)
    raw = float(info.get("raw_reward") or 0.0)
    return {"solved": raw == 1.0 and not unseen, "raw": raw, "actions": actions, "unseen": unseen, "error": error}


def start(task_id: str, utterance: str, view: PageView) -> Generator[dict[str, Any], PageView, None]:
    """The oracle of a MiniWoB task as a started generator; NotImplementedError when it has none."""
    script = SCRIPTS.get(task_id)
    if script is None:
        raise NotImplementedError(f"MiniWoB task {task_id!r} has no scripted oracle; "
                                  f"scripted: {', '.join(sorted(SCRIPTS))}")
    return script(utterance, view)


__all__ = ["SCRIPTS", "Script", "WRONG", "click", "play_oracle", "refs_shown", "start"]
