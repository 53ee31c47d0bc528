"""Answer extraction and comparison for verifiable tool-call tasks.

An agent's answer arrives as the ``submit`` tool's argument or as a final message with
``\\boxed{...}``. It is compared with the task's reference answer by value, not by spelling:

- numbers: ``1,234`` = ``1234``, ``$12.50`` = ``12.5``, ``3/4`` = ``\\frac{3}{4}`` = ``0.75``,
  ``5.0`` = ``5``, ``75%`` = ``0.75`` = ``75`` (a percent sign on either side allows both readings),
  ``1.5e3`` = ``1.5 \\times 10^{3}``, trailing units (``12 cm``, ``5 dollars``) are dropped;
- integers are compared exactly (a 13-digit answer off by one is wrong); other numbers with a
  relative tolerance, or, for answers the task says are rounded to ``decimals`` places, within one
  unit of the last place (so a different rounding mode or an unrounded value still counts);
- tuples/lists elementwise; anything else as text, case- and whitespace-insensitive.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

REL_TOL = 1e-6
ABS_TOL = 1e-9

_BOXED = re.compile(r"\\(?:boxed|fbox)\s*\{")
_THOUSANDS = re.compile(r"^[+-]?\d{1,3}(?:,\d{3})+(?:\.\d*)?$")
_NUMBER = re.compile(r"^[+-]?(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?$")
_FRACTION = re.compile(r"^([+-]?)\(?([+-]?(?:\d+\.?\d*|\.\d+))\)?/\(?([+-]?(?:\d+\.?\d*|\.\d+))\)?$")
_LATEX_FRAC = re.compile(r"\\[dt]?frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}")
_LATEX_FRAC_SHORT = re.compile(r"\\[dt]?frac\s*(\d)\s*(\d)")
_SCI_LATEX = re.compile(r"^(.+?)\s*(?:\\times|\\cdot|\*|x)\s*10\s*\^\s*\{?\s*([+-]?\d+)\s*\}?$")
_TEXT_WRAPPERS = re.compile(r"\\(?:text|textbf|mathrm|mathbf|operatorname|mbox)\s*\{([^{}]*)\}")
_PREFIX = re.compile(r"^(?:final answer|the answer is|answer|ans)\s*[:=]?\s*|^[a-z]\s*=\s*")
_UNITS = re.compile(r"(?:\s+[a-z°µ]+(?:\s*/\s*[a-z]+)?\^?[23²³]?\.?)+$")
_UNITS_TIGHT = re.compile(r"(?<=\d)(?:mm|cm|km|m|mg|kg|g|lbs?|oz|ft|in|mi|mph|km/h|kph|ml|l|s|h|hrs?|min)\.?$")


def last_boxed(text: str) -> str | None:
    """The content of the last ``\\boxed{...}`` (balanced braces), or None."""
    matches = list(_BOXED.finditer(text))
    for match in reversed(matches):
        depth, start = 1, match.end()
        for index in range(start, len(text)):
            if text[index] == "{":
                depth += 1
            elif text[index] == "}":
                depth -= 1
                if depth == 0:
                    return text[start:index].strip()
    return None


def extract_answer(text: str) -> str:
    """The boxed answer if the text has one, else the whole text, stripped."""
    boxed = last_boxed(text)
    return boxed if boxed is not None else text.strip()


def gsm8k_final(solution: str) -> str:
    """GSM8K reference solutions end with ``#### <answer>``; return that answer."""
    if "####" in solution:
        return solution.rsplit("####", 1)[1].strip().replace(",", "")
    return solution.strip()


def normalize_text(text: str) -> str:
    """Lower-case, unwrap LaTeX text commands, drop ``$`` and spacing commands, collapse spaces."""
    s = str(text).strip()
    for _ in range(3):
        s = _TEXT_WRAPPERS.sub(r"\1", s)
    for token in ("\\left", "\\right", "\\!", "\\,", "\\;", "\\:", "\\ ", "\\$", "$", "\\%"):
        s = s.replace(token, "%" if token == "\\%" else " " if token in ("\\,", "\\;", "\\:", "\\ ") else "")
    s = s.replace("^\\circ", "").replace("^{\\circ}", "").replace("°", " ").replace("\\displaystyle", "")
    s = " ".join(s.lower().split())
    s = s.strip(" .;:'\"`")
    return s


def _parse_scalar(text: str) -> tuple[Fraction, bool, bool] | None:
    """``(value, is_percent, written_exactly)`` for a number in any accepted spelling, else None."""
    s = normalize_text(text)
    s = _PREFIX.sub("", s).strip()
    if not s:
        return None
    s = _LATEX_FRAC.sub(r"(\1)/(\2)", s)
    s = _LATEX_FRAC_SHORT.sub(r"\1/\2", s)
    percent = False
    for suffix in ("%", "percent", "per cent"):
        if s.endswith(suffix):
            s, percent = s[: -len(suffix)].strip(), True
            break
    for currency in ("usd", "dollars", "dollar", "euros", "euro", "€", "£"):
        if s.endswith(currency):
            s = s[: -len(currency)].strip()
    s = s.lstrip("€£").strip()
    if not _looks_numeric(s):
        s = _UNITS_TIGHT.sub("", _UNITS.sub("", s)).strip()
    sci = _SCI_LATEX.match(s)
    if sci:
        mantissa = _parse_plain(sci.group(1).strip())
        if mantissa is None:
            return None
        return mantissa * Fraction(10) ** int(sci.group(2)), percent, True
    value = _parse_plain(s)
    return (value, percent, True) if value is not None else None


def _looks_numeric(s: str) -> bool:
    return bool(_NUMBER.match(s) or _THOUSANDS.match(s) or _FRACTION.match(s.replace(" ", "")))


def _parse_plain(s: str) -> Fraction | None:
    s = s.replace(" ", "")
    if _THOUSANDS.match(s):
        s = s.replace(",", "")
    if _NUMBER.match(s):
        try:
            return Fraction(s)
        except (ValueError, ZeroDivisionError):
            return None
    frac = _FRACTION.match(s)
    if frac:
        try:
            value = Fraction(frac.group(2)) / Fraction(frac.group(3))
        except (ValueError, ZeroDivisionError):
            return None
        return -value if frac.group(1) == "-" else value
    return None


def parse_number(text: str) -> Fraction | None:
    """The numeric value of an answer (percent signs ignored), or None if it is not a number."""
    parsed = _parse_scalar(text)
    return parsed[0] if parsed else None


def _candidates(parsed: tuple[Fraction, bool, bool]) -> list[Fraction]:
    value, percent, _ = parsed
    return [value, value / 100] if percent else [value]


def _close(predicted: Fraction, gold: Fraction, decimals: int | None, rel_tol: float) -> bool:
    if predicted == gold:
        return True
    if gold.denominator == 1 and predicted.denominator == 1:
        return False  # integers are exact
    difference = abs(float(predicted - gold))
    if decimals is not None:
        return difference <= 10.0 ** (-decimals) * (1 + 1e-9)
    return math.isclose(float(predicted), float(gold), rel_tol=rel_tol, abs_tol=ABS_TOL)


def _split_sequence(text: str) -> list[str] | None:
    s = normalize_text(text)
    if len(s) >= 2 and s[0] in "([{" and s[-1] in ")]}":
        s = s[1:-1]
    if "," not in s or _THOUSANDS.match(s.replace(" ", "")):
        return None
    return [part.strip() for part in s.split(",")]


def answers_match(predicted: str | None, gold: object, *, decimals: int | None = None,
                  rel_tol: float = REL_TOL) -> bool:
    """Whether ``predicted`` (an agent's answer, possibly boxed) equals the reference ``gold``."""
    if predicted is None or gold is None:
        return False
    predicted = extract_answer(str(predicted))
    gold_text = extract_answer(str(gold))
    if not predicted:
        return False
    p, g = _parse_scalar(predicted), _parse_scalar(gold_text)
    if p is not None and g is not None:
        return any(_close(a, b, decimals, rel_tol) for a in _candidates(p) for b in _candidates(g))
    p_items, g_items = _split_sequence(predicted), _split_sequence(gold_text)
    if p_items is not None and g_items is not None:
        return len(p_items) == len(g_items) and all(
            answers_match(a, b, decimals=decimals, rel_tol=rel_tol) for a, b in zip(p_items, g_items)
        )
    if g is not None:
        return False  # a number was expected and the answer is not one
    return normalize_text(predicted).replace(" ", "") == normalize_text(gold_text).replace(" ", "")
