"""E425: a number to recall that two numbers on the same front give by one arithmetic step.

The steps looked for: a ratio (a/b), a sum (a+b), a difference (a-b) or a product (a*b) of
two numbers on the front equal to the answer: exactly for a whole number, to within half a
unit of the last written digit for a decimal.  Not operands: years (1900-2100), exponents and
subscripts, and the note's other deletions.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from itertools import permutations

from deckbuild.cloze.scan import Deletion
from deckbuild.lint.codes import Finding
from deckbuild.lint.front import Front
from deckbuild.model import Card

_SCALE = {"k": 1e3, "K": 1e3, "M": 1e6, "B": 1e9}
_NUMBER = re.compile(
    r"(?<![\w.^_])(?<!\^\{)(?<!_\{)(?<!\^\{-)(?<!_\{-)(\d{1,3}(?:(?:,|\{,\})\d{3})+|\d+(?:\.\d+)?)(?:\s*\\?%|\s*(?:\\times|×)\s*10\^\{?(-?\d+)\}?"
    r"|e(-?\d+)|([kKMB])(?![A-Za-z]))?(?![\w^])"
)
_POWER = re.compile(r"(?<![\w.])10\^\{?(-?\d+)\}?")
_RATIO = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*:\s*(\d+(?:\.\d+)?)\s*$")
_NOISE = re.compile(r"\\[,;:! ]|\\approx|\\sim|~|≈|about|roughly|around|\$|\\\(|\\\)|\\text\{([^{}]*)\}")
YEARS = range(1900, 2101)
"""Whole numbers read as years (a citation's "2017") are not operands."""


def _value(match: re.Match[str]) -> float:
    digits = re.sub(r"\{,\}|,", "", match.group(1))
    value = float(digits)
    if match.group(2) is not None:
        value *= 10.0 ** int(match.group(2))
    elif match.group(3) is not None:
        value *= 10.0 ** int(match.group(3))
    elif match.group(4):
        value *= _SCALE[match.group(4)]
    return value


def numbers(text: str) -> list[float]:
    """Every number written in a text: 16, 0.5, 1{,}000, 32k, 3e-4, 2 \\times 10^{5}, 10^{-3}."""
    out = [_value(m) for m in _NUMBER.finditer(text) if not _is_year(m)]
    out += [10.0 ** int(m.group(1)) for m in _POWER.finditer(_NUMBER.sub(" ", text))]
    return out


def _is_year(match: re.Match[str]) -> bool:
    return match.group(0).isdigit() and int(match.group(0)) in YEARS


def answer_value(body: str) -> tuple[float, float] | None:
    """The answer as (value, tolerance), if the deletion is one number (or a ratio 1:3); else None."""
    text = _NOISE.sub(lambda m: m.group(1) or " ", body).strip()
    ratio = _RATIO.match(text)
    if ratio:
        a, b = float(ratio.group(1)), float(ratio.group(2))
        return (a / b, 1e-9) if b else None
    found = list(_NUMBER.finditer(text))
    power = _POWER.fullmatch(text)
    if power:
        return 10.0 ** int(power.group(1)), 1e-12
    if len(found) != 1 or _NUMBER.sub("", text).strip(" .×x\\times") or _is_year(found[0]):
        return None
    digits = found[0].group(1)
    decimals = len(digits.split(".")[1]) if "." in digits else 0
    value = _value(found[0])
    scale = value / float(re.sub(r"\{,\}|,", "", digits)) if float(re.sub(r"\{,\}|,", "", digits)) else 1.0
    if decimals == 0:
        return value, 1e-9 * abs(value)  # a whole number: only an exact result gives it
    return value, 0.5 * 10.0**-decimals * abs(scale)


def one_step(card: Card, shown_fronts: Sequence[Front]) -> list[Finding]:
    """E425 for every deletion whose number follows from two numbers its front shows."""
    found = []
    for front in shown_fronts:
        answer = answer_value(front.deletion.body)
        if answer is None:
            continue
        value, tolerance = answer
        shown = numbers(front.context) + numbers(_without(front.visible, front.others))
        if any(abs(n - value) <= tolerance for n in shown):
            continue  # the answer itself is on the front: E423's business
        step = _step(shown, value, max(tolerance, 1e-9 * abs(value)))
        if step:
            found.append(
                Finding(
                    "E425",
                    front.key,
                    front.deletion.start,
                    f"c{front.deletion.number}: its answer {front.deletion.body.strip()!r} is {step}, both on the front: "
                    "remove one of the numbers from the front, or delete what the step does not give",
                )
            )
    return found


def _without(visible: str, others: tuple[Deletion, ...]) -> str:
    """The visible text without the other deletions' answers: they are recall targets of their
    own, and a note's few numbers agree by chance (0.1 / 0.2 = 0.5)."""
    for other in others:
        visible = visible.replace(other.body, " ", 1)
    return visible


def _step(shown: list[float], value: float, tolerance: float) -> str:
    """The first ratio, sum, difference or product of two shown numbers within tolerance of value."""
    for a, b in permutations(range(len(shown)), 2):
        x, y = shown[a], shown[b]
        for name, result, trivial in (
            ("the ratio", x / y if y else None, y == 1),
            ("the sum", x + y if a < b else None, x == 0 or y == 0),
            ("the difference", x - y, y == 0),
            ("the product", x * y if a < b else None, x == 1 or y == 1),
        ):
            if result is not None and not trivial and abs(result - value) <= tolerance:
                sign = {"the ratio": "/", "the sum": "+", "the difference": "-", "the product": "*"}[name]
                return f"{name} {_show(x)} {sign} {_show(y)}"
    return ""


def _show(number: float) -> str:
    return f"{number:g}"
