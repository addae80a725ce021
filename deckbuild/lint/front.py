"""What a cloze card's front shows while one deletion is hidden: its words, symbols and numbers.

Anki's card N shows the note's context, the text with deletion N replaced by its hint (or
``[...]``), and every other deletion in full.  The give-away checks read exactly that.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from deckbuild.cloze.scan import Deletion, Plain, find_math_spans, parse_deletions
from deckbuild.model import Card

_TEXT_MACROS = re.compile(r"\\(?:text|textbf|textit|mathrm|mathbf|mathit|operatorname|mathcal|mathbb)\b")
_SPACING = re.compile(r"\\[,;:! ]|\\(?:quad|qquad|left|right|big|Big|bigl|bigr|Bigl|Bigr|displaystyle)\b")
_TOKEN = re.compile(r"\\[A-Za-z]+|\w+|[^\w\s{}]")
_WORDED = re.compile(r"\\(?:text|textbf|textit|mathrm|operatorname)\s*\{[^{}]*\}")
_SYMBOL = re.compile(r"\\[A-Za-z]+|[A-Za-z]")
_GREEK_NAMES = (
    "alpha beta gamma delta epsilon varepsilon zeta eta theta vartheta iota kappa lambda mu nu xi pi rho "
    "sigma tau upsilon phi varphi chi psi omega Gamma Delta Theta Lambda Xi Pi Sigma Phi Psi Omega"
)
GREEK = frozenset(_GREEK_NAMES.split(" "))


@dataclass(frozen=True)
class Front:
    """Card N of a cloze note: the deletion it hides and the text its front shows."""

    deletion: Deletion
    context: str
    visible: str  # the cloze text with this deletion's number hidden (its hint kept)
    others: tuple[Deletion, ...]  # deletions of other numbers, shown in full
    unhinted: str = ""  # the visible text without this deletion's hint (a hint with its answer is E413)
    key: str = ""  # the card's key whose text holds the deletion: formula, fact, or fields.<name>


def tokens(text: str) -> list[str]:
    """Words and symbols, ignoring case, spacing macros, braces and text macros."""
    text = _SPACING.sub(" ", _TEXT_MACROS.sub(" ", text))
    return _TOKEN.findall(text.lower())


def contains(haystack: Sequence[str], needle: Sequence[str]) -> bool:
    n = len(needle)
    return n > 0 and any(list(haystack[i : i + n]) == list(needle) for i in range(len(haystack) - n + 1))


def cloze_texts(card: Card) -> list[tuple[str, str]]:
    """(key, text) of every text of the card that holds deletions: a formula or fact, or each
    Markdown field of a declared note type with cloze syntax (its cloze fields, E215)."""
    if card.kind in ("formula", "fact"):
        return [(card.kind, getattr(card, card.kind))]
    return [(f"fields.{name}", text) for name, text, is_html in card.note_fields if not is_html and "{{c" in text]


def value_of(card: Card, key: str) -> str:
    """The text of one of the card's keys (`fields.<name>` for a field of a declared note type)."""
    if key.startswith("fields."):
        return next((text for name, text, _html in card.note_fields if f"fields.{name}" == key), "")
    return str(getattr(card, key))


def fronts(card: Card) -> list[Front]:
    """One Front per deletion of a cloze card (a number used twice: one per occurrence).

    A declared note type's card has no context the lint knows of: its front is the field."""
    return [front for key, text in cloze_texts(card) for front in _fronts(text, card.context, key)]


def _fronts(text: str, context: str, key: str) -> list[Front]:
    parsed = parse_deletions(text)
    out = []
    for deletion in parsed.deletions:
        parts, unhinted = [], []
        for segment in parsed.segments:
            if isinstance(segment, Plain):
                shown = segment.text
            elif segment.number == deletion.number:
                parts.append(f" {segment.hint or '[...]'} ")
                unhinted.append(" [...] ")
                continue
            else:
                shown = segment.body
            parts.append(shown)
            unhinted.append(shown)
        others = tuple(d for d in parsed.deletions if d.number != deletion.number)
        out.append(Front(deletion, context, "".join(parts), others, "".join(unhinted), key))
    return out


def math_of(text: str, whole: bool) -> str:
    """The LaTeX of a text: all of it (a formula), or its \\( \\) and \\[ \\] spans joined."""
    return text if whole else " ".join(latex for _s, _e, latex, _d in find_math_spans(text))


_PROSE_LETTER = re.compile(r"(?<![\w'’\\-])([B-HJ-Z])(?![\w'’-])")  # "stride S"; not the words "A" and "I"
GREEK_LETTERS = {
    "α": "alpha",
    "β": "beta",
    "γ": "gamma",
    "δ": "delta",
    "ε": "epsilon",
    "η": "eta",
    "θ": "theta",
    "κ": "kappa",
    "λ": "lambda",
    "μ": "mu",
    "ν": "nu",
    "π": "pi",
    "ρ": "rho",
    "σ": "sigma",
    "τ": "tau",
    "φ": "phi",
    "ω": "omega",
}
"""Greek letters written as characters in prose, and the macro a formula writes them with."""


def named_symbols(context: str) -> set[str]:
    """The symbols a context names: those of its math, and single capital letters and Greek
    letters written in its prose ("with stride S", "learning rate η")."""
    named = symbols(math_of(context, whole=False))
    prose = context
    for start, end, _latex, _display in reversed(find_math_spans(context)):
        prose = prose[:start] + " " + prose[end:]
    named |= set(_PROSE_LETTER.findall(prose))
    named |= {f"\\{name}" for char, name in GREEK_LETTERS.items() if char in prose}
    return named


def symbols(latex: str) -> set[str]:
    """The symbols a piece of LaTeX names: single letters and Greek letters, not words in \\text{}."""
    found = set()
    for token in _SYMBOL.findall(_WORDED.sub(" ", latex)):
        if token.startswith("\\"):
            if token[1:] in GREEK:
                found.add(token)
        else:
            found.add(token)
    return found
