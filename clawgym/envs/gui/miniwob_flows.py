"""MiniWoB++ scripts for pages that change as the agent acts: each reads the next observation before its
next step (open a mail, then find Reply; expand a folder, then look for the file). See ``miniwob_scripts``.
"""

from __future__ import annotations

import re
from typing import Any, Generator

from clawgym.envs.gui.miniwob_forms import after, click, find_first, nth, quoted, submit, type_into
from clawgym.envs.gui.observe import Element, PageView
from clawgym.envs.gui.task import act


def click_collapsible(u: str, view: PageView) -> Generator[dict[str, Any], PageView, None]:
    view = yield click(view.find("tab", contains="Section"))
    yield click(view.find(name="Submit"))  # jQuery UI made its paragraph a header: a tab named Submit


def find_link_behind_tabs(u: str, view: PageView) -> Generator[dict[str, Any], PageView, None]:
    """click-collapsible-2 and click-tab-2: open each section in turn until the link shows, then click it."""
    word = quoted(u)[0]
    for tab in [e.ref for e in view.find_all("tab")]:
        if not view.find_all("clickable", word):
            view = yield click(tab)
    yield click(view.find("clickable", word))


def click_pie(u: str, view: PageView) -> Generator[dict[str, Any], PageView, None]:
    view = yield click(view.find("clickable", "+"))
    yield click(view.find("clickable", quoted(u)[0]))


def _slider_value(view: PageView, handle: int) -> int:
    return int(after(view, handle, "text").name)


def _set_slider(view: PageView, handle: int, target: int) -> Generator[dict[str, Any], PageView, PageView]:
    """Focus the handle, then PageUp/PageDown while a page step does not overshoot, then arrow keys."""
    view = yield click(handle)
    page_step = None
    while (value := _slider_value(view, handle)) != target:
        gap = target - value
        if page_step is None and abs(gap) >= 10 or page_step is not None and abs(gap) >= page_step > 0:
            view = yield act("press", key="PageUp" if gap > 0 else "PageDown")
            page_step = abs(_slider_value(view, handle) - value)
        else:
            view = yield act("press", key="ArrowRight" if gap > 0 else "ArrowLeft")
    return view


def use_slider(u: str, view: PageView) -> Generator[dict[str, Any], PageView, None]:
    target = int(re.search(r"Select (-?\d+)", u).group(1))
    view = yield from _set_slider(view, view.find("clickable", "ui-slider-handle"), target)
    yield click(submit(view))


def use_slider_2(u: str, view: PageView) -> Generator[dict[str, Any], PageView, None]:
    targets = [int(n) for n in re.search(r"\[([-\d,\s]+)\]", u).group(1).split(",")]
    for handle, target in zip([e.ref for e in view.find_all("clickable", "ui-slider-handle")], targets):
        view = yield from _set_slider(view, handle, target)
    yield click(submit(view))


def use_spinner(u: str, view: PageView) -> Generator[dict[str, Any], PageView, None]:
    target = re.search(r"Select (-?\d+)", u).group(1)
    view = yield type_into(view.find("spinbutton"), target)
    yield click(submit(view))


def _email_row(view: PageView, sender: str) -> Element:
    return find_first(view,
                      lambda e: e.role == "clickable" and e.name.startswith(sender + " ") and e.depth == 0,
                      f"email by {sender}")


def email(u: str, view: PageView) -> Generator[dict[str, Any], PageView, None]:
    """email-inbox and its variants: reply, forward, delete (trash icon) or mark important (star icon)."""
    sender = re.search(r"email by (\S+?)[ ,]", u).group(1)
    row = _email_row(view, sender)
    if "trash icon" in u or "star icon" in u:
        yield click(after(view, row.ref, "clickable", "trash" if "trash" in u else "star").ref)
        return
    view = yield click(row.ref)
    if "reply" in u:
        view = yield click(view.find("clickable", "Reply"))
        view = yield type_into(view.find("textbox"), re.search(r'with the text "(.*)"\.?$', u).group(1))
        yield click(view.find("clickable", "send-reply"))
        return
    view = yield click(view.find("clickable", "Forward"))
    view = yield type_into(view.find_all("textbox")[0].ref, re.search(r"forward that email to (\S+)\.", u).group(1))
    yield click(view.find("clickable", "send-forward"))


NOT_NAMES = {"Forward", "Send", "Please", "Give", "Go", "Search", "Navigate", "The", "I", "Get", "DEST", "NAME"}


def email_forward_nl(u: str, view: PageView) -> Generator[dict[str, Any], PageView, None]:
    """The phrasings of email-inbox-forward-nl: the sender follows "from"/"by" or precedes "sent"/"wants his"."""
    names = [w for w in re.findall(r"\b[A-Z][a-z]+\b", u) if w not in NOT_NAMES]
    by = re.search(r"(?:from|by) ([A-Z][a-z]+)|([A-Z][a-z]+) (?:sent|wants his|email)", u)
    sender = by.group(1) or by.group(2)
    dest = next(n for n in names if n != sender)
    view = yield click(_email_row(view, sender).ref)
    view = yield click(view.find("clickable", "Forward"))
    view = yield type_into(view.find_all("textbox")[0].ref, dest)
    yield click(view.find("clickable", "send-forward"))


def _posts_by(view: PageView, user: str) -> list[Element]:
    """The ``@user`` lines of a social-media feed (each post's buttons follow its text)."""
    return [e for e in view.elements if e.role == "text" and e.name == user]


def _post_button(view: PageView, handle: Element, button: str) -> Generator[dict[str, Any], PageView, PageView]:
    """Click a post's button: reply / retweet / like / share directly, anything else from its "more" menu."""
    key = button.lower()
    if key in ("reply", "retweet", "like", "share"):
        view = yield click(after(view, handle.ref, "clickable", key).ref)
        return view
    view = yield click(after(view, handle.ref, "clickable", "more").ref)
    item = after(view, handle.ref, "clickable", button, prefix=button + " @")  # also "Mute @user", "Block @user"
    view = yield click(item.ref)
    return view


def social_media(u: str, view: PageView) -> Generator[dict[str, Any], PageView, None]:
    user, button = re.search(r"For the user (@\S+), click on the \"(.*)\" button", u).groups()
    yield from _post_button(view, _posts_by(view, user)[0], button)


def social_media_many(u: str, view: PageView) -> Generator[dict[str, Any], PageView, None]:
    button, count, user = re.search(r'Click the "(.*)" button on (all|\d+) posts? by (@\S+) and', u).groups()
    posts = _posts_by(view, user)
    for post in posts if count == "all" else posts[: int(count)]:
        view = yield from _post_button(view, post, button)
    yield click(submit(view))


def navigate_tree(u: str, view: PageView) -> Generator[dict[str, Any], PageView, None]:
    """Expand folders (their "expandable-hitarea" toggles) until the named file or folder shows."""
    name = quoted(u)[0]
    while not view.find_all("clickable", name):
        view = yield click(view.find("clickable", contains="expandable-hitarea"))
    yield click(view.find("clickable", name))


def click_menu(u: str, view: PageView) -> Generator[dict[str, Any], PageView, None]:
    """Open each level of the menu path ("Select A>B>C") by hovering, then click the last item."""
    path = u[len("Select "):].split(">")
    for item, following in zip(path, path[1:]):
        view = yield act("hover", ref=view.find("menuitem", item))
        while not view.find_all("menuitem", following):  # a submenu opens after a short delay
            view = yield act("wait", ms=300)
    yield click(view.find("menuitem", path[-1]))


def ascending(u: str, view: PageView) -> Generator[dict[str, Any], PageView, None]:
    """Click 1; the other numbers then hide under squares, listed in the numbers' order: click those in turn."""
    view = yield click(view.find("clickable", "1"))
    while squares := view.find_all("clickable", "rect"):
        view = yield click(squares[0].ref)


def guess_number(u: str, view: PageView) -> Generator[dict[str, Any], PageView, None]:
    low, high = 0, 9
    while True:
        guess = (low + high) // 2
        view = yield type_into(view.find("spinbutton"), str(guess))
        view = yield click(submit(view))
        if view.has_text("higher"):
            low = guess + 1
        elif view.has_text("lower"):
            high = guess - 1
        else:
            return


def search_engine(u: str, view: PageView) -> Generator[dict[str, Any], PageView, None]:
    """Search, then page through the results (3 a page) to the n-th one."""
    term = quoted(u)[0]
    view = yield type_into(view.find("textbox"), term)
    view = yield click(view.find("button", "Search"))
    n = nth(u)
    page = (n - 1) // 3 + 1
    if page > 1:
        view = yield click(view.find("link", str(page)))
    results = [e for e in view.find_all("link") if e.name not in {str(i) for i in range(1, 10)}
               and e.name not in ("<", ">", "«", "»", "First", "Previous", "Next", "Last")]
    yield click(results[(n - 1) % 3].ref)


def use_autocomplete(u: str, view: PageView) -> Generator[dict[str, Any], PageView, None]:
    first, *rest = quoted(u)
    view = yield act("type", ref=view.find("textbox"), text=first)
    def fits(e: Element) -> bool:
        return (e.role in ("menuitem", "option", "clickable") and e.name.startswith(first)
                and (not rest or e.name.endswith(rest[0])))

    while not (options := [e for e in view.elements if fits(e)]):  # the suggestions show after a short delay
        view = yield act("wait", ms=200)
    chosen = options[0]
    view = yield click(chosen.ref)
    yield click(submit(view))


def login_user_popup(u: str, view: PageView) -> Generator[dict[str, Any], PageView, None]:
    """login-user where focusing a field may open a pop-up that disables the form: Cancel it, then retry."""
    username, password = quoted(u)[:2]
    wanted = [username, "*" * len(password)]
    while True:
        if view.find_all("button", "Cancel"):
            view = yield click(view.find("button", "Cancel"))
            continue
        fields = view.find_all("textbox")
        todo = [i for i, field in enumerate(fields[:2]) if field.attrs.get("value") != wanted[i]]
        if not todo:
            yield click(view.find("button", "OK"))  # the form's own button (the pop-up has gone)
            return
        view = yield type_into(fields[todo[0]].ref, (username, password)[todo[0]])


def phone_book(u: str, view: PageView) -> Generator[dict[str, Any], PageView, None]:
    """Page through the contact book to the person, then click their phone, email or address."""
    person, what = re.search(r"Find (.+) in the contact book and click on their (\w+)", u).groups()
    while not view.find_all("heading", person):
        view = yield click(view.find("link", ">"))
    label = {"phone": "Phone:", "email": "Email:", "address": "Address:"}[what.lower()]
    yield click(after(view, after(view, view.find("heading", person), "text", label).ref, "clickable").ref)


def form_sequence(u: str, view: PageView) -> Generator[dict[str, Any], PageView, None]:
    """form-sequence: "Select N with the slider, click the Kth checkbox, then hit Submit."."""
    target = int(re.search(r"Select (-?\d+) with the slider", u).group(1))
    view = yield from _set_slider(view, view.find("clickable", "ui-slider-handle"), target)
    view = yield act("check", ref=view.find_all("checkbox")[nth(u) - 1].ref)
    yield click(submit(view))


def generate_number(u: str, view: PageView) -> Generator[dict[str, Any], PageView, None]:
    """Press Generate until the shown number fits the request (less than, greater than, odd, even)."""
    fits = {"less": lambda n, k: n < k, "greater": lambda n, k: n > k, "odd": lambda n, k: n % 2 != 0,
            "even": lambda n, k: n % 2 == 0}
    kind = re.search(r"less|greater|odd|even", u).group(0)
    bound = int(re.search(r"than (-?\d+)", u).group(1)) if kind in ("less", "greater") else 0
    generate = view.find("button", "Generate")
    while True:
        shown = view.elements[view.elements.index(view.element(generate)) - 1].name  # the number above the button
        if re.fullmatch(r"-?\d+", shown) and fits[kind](int(shown), bound):
            yield click(submit(view))
            return
        view = yield click(generate)


MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December"]


def choose_date(u: str, view: PageView) -> Generator[dict[str, Any], PageView, None]:
    """Open the date picker (its field is read-only), step to the month with Prev / Next, click the day."""
    month, day, year = (int(n) for n in re.search(r"(\d\d)/(\d\d)/(\d{4})", u).groups())
    view = yield click(view.find("textbox"))
    while True:
        title = find_first(view, lambda e: e.name in MONTHS, "month")
        shown, shown_year = MONTHS.index(title.name) + 1, int(after(view, title.ref, "text").name)
        if (shown_year, shown) == (year, month):
            break
        view = yield click(view.find(name="Prev" if (shown_year, shown) > (year, month) else "Next"))
    view = yield click(view.find("link", str(day)))
    yield click(submit(view))
