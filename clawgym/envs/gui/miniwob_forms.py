"""MiniWoB++ scripts whose every step is known from the first observation (one-page forms), and the
helpers every script uses to read a :class:`PageView`: find an element by role and name, the element
after another in page order, the Submit button. See ``miniwob_scripts`` for what a script is.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Generator

from clawgym.envs.gui.observe import Element, PageView
from clawgym.envs.gui.task import act

Script = Callable[[str, PageView], Generator[dict[str, Any], PageView, None]]


def quoted(utterance: str) -> list[str]:
    return re.findall(r'"([^"]*)"', utterance)


def click(ref: int) -> dict[str, Any]:
    return act("click", ref=ref)


def type_into(ref: int, text: str) -> dict[str, Any]:
    return act("type", ref=ref, text=text)


def fixed(steps: Callable[[str, PageView], list[dict[str, Any]]]) -> Script:
    """A script whose every step is known from the first view (its targets are all on the page)."""
    def script(utterance: str, view: PageView) -> Generator[dict[str, Any], PageView, None]:
        for step in steps(utterance, view):
            yield step
    return script


def find_first(view: PageView, test: Callable[[Element], bool], what: str) -> Element:
    """The first element of the page that passes ``test``; KeyError showing the page when none does."""
    for e in view.elements:
        if test(e):
            return e
    raise KeyError(f"no {what} on the page:\n{view.text()}")


def submit(view: PageView) -> int:
    return find_first(view,
                      lambda e: e.role in ("button", "clickable") and e.name.lower() == "submit", "Submit button").ref


def after(view: PageView, ref: int, role: str | None = None, name: str | None = None,
          prefix: str | None = None) -> Element:
    """The first element after ``ref`` in page order with this role (and name, or a name with ``prefix``)."""
    index = [e.ref for e in view.elements].index(ref)
    for e in view.elements[index + 1:]:
        if (role is None or e.role == role) and (name is None or e.name == name
                                                 or (prefix and e.name.startswith(prefix))):
            return e
    raise KeyError(f"nothing with role={role!r} name={name!r} after [{ref}]:\n{view.text()}")


def text_field(view: PageView, n: int = 0) -> int:
    """The n-th one-line text field (a textarea is ``multiline``)."""
    return [e for e in view.find_all("textbox") if not e.attrs.get("multiline")][n].ref


def enter_then_submit(text_of: Callable[[str, PageView], str]) -> Script:
    return fixed(lambda u, v: [type_into(text_field(v), text_of(u, v)), click(submit(v))])


def enter_text_2(u: str, v: PageView) -> str:
    word = quoted(u)[0]
    return word.lower() if "lower case" in u else word.upper()


def enter_date(u: str, v: PageView) -> str:
    month, day, year = re.search(r"(\d\d)/(\d\d)/(\d{4})", u).groups()
    return f"{year}-{month}-{day}"


def enter_time(u: str, v: PageView) -> str:
    hour, minute, half = re.search(r"(\d+):(\d\d) ?(AM|PM)", u).groups()
    return f"{int(hour) % 12 + (12 if half == 'PM' else 0):02d}:{minute}"


def checkboxes(u: str, v: PageView) -> list[dict[str, Any]]:
    names = re.match(r"Select (.*) and click Submit\.", u).group(1)
    words = [] if names == "nothing" else [w.strip() for w in names.split(",")]
    return [act("check", ref=v.find("checkbox", w)) for w in words] + [click(submit(v))]


def nth(u: str) -> int:
    return int(re.search(r"(\d+)(st|nd|rd|th)", u).group(1))


def arithmetic(u: str, v: PageView) -> str:
    a, op, b = re.match(r"(-?\d+) ([-+x*/]) (-?\d+) =", v.find_all(contains=" =")[0].name).groups()
    return str({"+": int(a) + int(b), "-": int(a) - int(b), "x": int(a) * int(b), "*": int(a) * int(b)}[op])


def algebra(u: str, v: PageView) -> str:
    """``a + x = b``, ``x - a = b``, ``a - x = b``: x from the equation line."""
    line = find_first(v, lambda e: bool(re.fullmatch(r"-?\w+ [-+] -?\w+ = -?\d+", e.name)), "equation").name
    left, op, right, total = re.match(r"(-?\w+) ([-+]) (-?\w+) = (-?\d+)", line).groups()
    total_n = int(total)
    if left == "x":
        return str(total_n - int(right) if op == "+" else total_n + int(right))
    return str(total_n - int(left) if op == "+" else int(left) - total_n)


def table_value(v: PageView, label: str) -> str:
    row = find_first(v, lambda e: e.role == "row" and e.name.startswith(label + " | "), f"row {label!r}").name
    return row.split(" | ", 1)[1]


def read_table_2(u: str, v: PageView) -> list[dict[str, Any]]:
    steps = []
    for e in v.elements:
        if e.role == "text" and e.name.endswith(":"):
            steps.append(type_into(after(v, e.ref, "textbox").ref, table_value(v, e.name[:-1])))
    return steps + [click(submit(v))]


def odd_or_even(u: str, v: PageView) -> list[dict[str, Any]]:
    """Each number sits between its Odd and Even buttons."""
    steps = []
    for i, e in enumerate(v.elements):
        if e.role == "text" and re.fullmatch(r"-?\d+", e.name):
            steps.append(click(v.elements[i + 1 if int(e.name) % 2 == 0 else i - 1].ref))
    return steps + [click(submit(v))]


def movie_form(u: str, v: PageView) -> list[dict[str, Any]]:
    """multi-orderings / multi-layouts: the i-th label (above or below its field) names the i-th field."""
    genre, director, year = re.match(r"Search for (.+) movies directed by (.+) from year (\d+)\.", u).groups()
    keys = {"genre": genre, "director": director, "year": year, "released": year}
    labels = [e for e in v.elements if e.role in ("text", "columnheader") and e.name != u
              and any(k in e.name.lower() for k in keys)]
    fields = v.find_all("textbox")
    steps = [type_into(f.ref, next(keys[k] for k in keys if k in label.name.lower()))
             for label, f in zip(labels, fields)]
    last = [e for e in v.elements if e.role in ("button", "clickable")][-1]  # Submit, Search or Go!
    return steps + [click(last.ref)]


def form_sequence_2(u: str, v: PageView) -> list[dict[str, Any]]:
    """"Check the Ith radio button and enter the number "N" into the Kth textbox."."""
    (radio, _), (box, _) = re.findall(r"(\d+)(st|nd|rd|th)", u)
    return [act("check", ref=v.find_all("radio")[int(radio) - 1].ref),
            type_into(text_field(v, int(box) - 1), quoted(u)[0]), click(submit(v))]


def form_sequence_3(u: str, v: PageView) -> list[dict[str, Any]]:
    """"Choose H from the dropdown, then click the button labeled "B"."."""
    option = re.match(r"Choose (.+) from the dropdown", u).group(1)
    return [act("select", ref=v.find("combobox"), option=option), click(v.find("button", quoted(u)[0]))]


def _minutes(duration: str) -> int:
    hours, minutes = re.match(r"(\d+)h (\d+)m", duration).groups()
    return int(hours) * 60 + int(minutes)


def buy_ticket(u: str, v: PageView) -> list[dict[str, Any]]:
    """"Buy the ticket with the cheapest / most expensive cost" or "the shortest / longest duration"."""
    offers = []  # (price, minutes, ref) per "Book for $P" button, with the duration shown before it
    for i, e in enumerate(v.elements):
        if e.role == "button" and e.name.startswith("Book for $"):
            duration = next(x.name for x in reversed(v.elements[:i]) if re.fullmatch(r"\d+h \d+m", x.name))
            offers.append((int(e.name[len("Book for $"):]), _minutes(duration), e.ref))
    key = {"cheapest": lambda o: o[0], "most expensive": lambda o: -o[0], "shortest": lambda o: o[1],
           "longest": lambda o: -o[1]}
    wanted = next(k for k in key if k in u)
    return [click(min(offers, key=key[wanted])[2])]


def copy_paste(u: str, v: PageView) -> list[dict[str, Any]]:
    """copy-paste(-2): the text of the (n-th) text area into the one-line field."""
    areas = [e for e in v.find_all("textbox") if e.attrs.get("multiline")]
    source = areas[nth(u) - 1 if re.search(r"\d(st|nd|rd|th)", u) else 0]
    return [type_into(text_field(v), source.attrs["value"]), click(submit(v))]


def find_word(u: str, v: PageView) -> str:
    paragraph = find_first(v, lambda e: e.role == "text" and e.name != u, "paragraph").name
    return paragraph.split()[nth(u) - 1]


WIDGETS = {"button": "button", "checkbox": "checkbox", "radio": "radio", "text": "textbox", "textarea": "textbox"}


def click_widget(u: str, v: PageView) -> list[dict[str, Any]]:
    kind = quoted(u)[0]
    found = [e for e in v.find_all(WIDGETS[kind])
             if e.role != "textbox" or bool(e.attrs.get("multiline")) == (kind == "textarea")]
    return [click(found[0].ref)]
