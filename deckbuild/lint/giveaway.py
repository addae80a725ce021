"""E423 and E424: a deletion whose answer the rest of its own front shows, or leaves as the only choice."""

from __future__ import annotations

from collections.abc import Sequence

from deckbuild.lint.codes import Finding
from deckbuild.lint.front import Front, contains, math_of, named_symbols, symbols, tokens
from deckbuild.model import Card

MIN_ANSWER_CHARS = 2
"""E423 looks only at answers with at least this many letters and digits: a one-letter symbol
shown elsewhere in its own formula is how formulas are written, not a give-away."""


def _answer_tokens(body: str) -> list[str]:
    return [t for t in tokens(body) if t.isalnum() or t.startswith("\\")]


def shown_elsewhere(card: Card, shown: Sequence[Front]) -> list[Finding]:
    """E423: the deletion's answer, word for word, in the context or the visible text of its front
    (its own hint aside: a hint that holds its answer is the error E413)."""
    found = []
    for front in shown:
        answer = _answer_tokens(front.deletion.body)
        if sum(len(t) for t in answer if t.isalnum()) < MIN_ANSWER_CHARS:
            continue
        for where, text in (("context", front.context), (front.key, front.unhinted)):
            if contains(_answer_tokens(text), answer):
                found.append(
                    Finding(
                        "E423",
                        front.key,
                        front.deletion.start,
                        f"c{front.deletion.number}: its answer {front.deletion.body.strip()!r} is shown on the same front "
                        f"(in the {'context' if where == 'context' else 'visible ' + _name(where)}): hide it there too, or "
                        "delete something the front does not give",
                    )
                )
                break
    return found


def eliminated(card: Card, shown: Sequence[Front]) -> list[Finding]:
    """E424: a symbol the context names that the formula shows only inside this deletion.

    The learner then knows the hidden part must use it; when such symbols are at least half
    of the deletion's distinct symbols, the answer is found by elimination (\\sqrt{b^2 - 4ac},
    where only c is missing from the front, is not).  For a fact, "the formula" is the LaTeX
    of its math spans.
    """
    found = []
    for front in shown:
        named = named_symbols(front.context)
        if not named:
            continue
        inside = symbols(math_of(front.deletion.body, front.key == "formula"))
        outside = symbols(math_of(front.visible, front.key == "formula"))
        only_inside = sorted(named & inside - outside)
        if only_inside and 2 * len(only_inside) >= len(inside):  # the missing symbols are much of the answer
            found.append(_finding(card, front, only_inside))
    return found


def _finding(card: Card, front: Front, only_inside: list[str]) -> Finding:
    names = ", ".join(only_inside)
    return Finding(
        "E424",
        front.key,
        front.deletion.start,
        f"c{front.deletion.number}: the context names {names}, which the {_name(front.key)} shows only inside this deletion, "
        "so the front tells the learner to use it: name it in the context only if the visible part shows it too",
    )


def _name(key: str) -> str:
    """How a message names the text: formula, fact, or field 'Text'."""
    return f"field '{key.removeprefix('fields.')}'" if key.startswith("fields.") else key
