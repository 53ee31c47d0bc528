"""Shared pieces of the bundled tasks: word lists, seeded picks, the page shell, and the task kinds
(``one_of`` params, ``then_submit`` oracles) that let most tasks be one row of a table."""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from clawgym.envs.gui.task import Oracle, Params, plan

WORDS = [
    "apple", "river", "stone", "cloud", "tiger", "maple", "ocean", "piano", "lemon", "eagle", "candle", "forest",
    "silver", "rocket", "garden", "pepper", "window", "bridge", "violet", "falcon", "copper", "meadow", "harbor",
    "jungle", "marble", "orange", "pillow", "saddle", "tunnel", "winter", "yellow", "zebra", "anchor", "basket",
    "cactus", "dragon", "engine", "feather", "glacier", "hammer", "island", "jacket", "kettle", "ladder", "magnet",
]
FIRST = ["Alice", "Bruno", "Chen", "Dana", "Elif", "Farid", "Greta", "Hugo", "Ines", "Jonas", "Kira", "Liam",
         "Maya", "Nils", "Olga", "Pavel", "Quinn", "Rosa", "Sami", "Tara", "Umar", "Vera", "Wes", "Yara", "Zoe"]
LAST = ["Berg", "Costa", "Diaz", "Evans", "Fischer", "Garcia", "Hahn", "Ito", "Jensen", "Khan", "Lopez", "Moreau",
        "Novak", "Okafor", "Petrov", "Rossi", "Silva", "Tanaka", "Vogel", "Weber"]
CITIES = ["Paris", "Lima", "Oslo", "Cairo", "Delhi", "Quito", "Perth", "Rome", "Seoul", "Tunis", "Vienna", "Kyoto"]
COLORS = ["red", "blue", "green", "orange", "purple", "black", "pink", "brown", "gray", "teal"]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December"]


def choice(rng: np.random.Generator, seq: Sequence[Any]) -> Any:
    return seq[int(rng.integers(len(seq)))]


def sample(rng: np.random.Generator, seq: Sequence[Any], k: int) -> list[Any]:
    return [seq[int(i)] for i in rng.choice(len(seq), size=k, replace=False)]


def names(rng: np.random.Generator, k: int) -> list[str]:
    return [f"{first} {last}" for first, last in zip(sample(rng, FIRST, k), sample(rng, LAST, k))]


def page(script: str, body: str = "", title: str = "Task") -> str:
    """A task page: the instruction on top, an #app div, and the task's script (CG is injected)."""
    return (
        f"<html><head><meta charset='utf-8'><title>{title}</title></head><body>"
        f"<div id='instr'></div>{body}<div id='app'></div>"
        "<script>document.getElementById('instr').textContent = CG.p.prompt;\n"
        f"var h = CG.h, p = CG.p;\n{script}\n</script></body></html>"
    )


def st(s: dict[str, Any], key: str, default: Any = None) -> Any:
    """A value the page recorded with CG.set."""
    return s.get("state", {}).get(key, default)


def one_of(pool: Sequence[Any], k: int | tuple[int, int], prompt: str,
           key: str = "labels") -> Callable[[np.random.Generator], Params]:
    """The commonest generator: ``k`` items of ``pool`` (a ``(low, high)`` range is drawn per episode) under ``key``,
    one of them the ``target``; ``prompt`` is formatted with ``{target}``."""

    def generate(rng: np.random.Generator) -> Params:
        items = sample(rng, pool, k if isinstance(k, int) else int(rng.integers(*k)))
        target = choice(rng, items)
        return {"prompt": prompt.format(target=target), key: items, "target": target}

    return generate


def then_submit(*steps: tuple) -> Oracle:
    """An oracle that does ``steps``, then presses Submit and ends."""
    return plan(*steps, ("click", "button", "Submit"), ("done",))
