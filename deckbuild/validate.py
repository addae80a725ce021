"""Every check that needs the whole deck.  Collects all problems; never stops at the first."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from deckbuild.errors import Location, Problem, TextProblem
from deckbuild.model import Card
from deckbuild.render import markdown_images

MATH_KEYS = ("question", "answer", "details", "context")


def validate_cards(cards: Sequence[Card]) -> list[Problem]:
    """Duplicate ids, dangling references, and text rules that hold for every card."""
    problems: list[Problem] = []
    first_seen: dict[str, Card] = {}
    for card in cards:
        if card.id in first_seen:
            other = first_seen[card.id]
            problems.append(
                Problem(
                    card.where("id"),
                    "E108",
                    f"duplicate card id '{card.id}': also at {other.where('id')}; ids must be unique in the deck",
                )
            )
        else:
            first_seen[card.id] = card
    for card in cards:
        problems.extend(_check_references(card, first_seen))
        problems.extend(_check_text(card))
    problems.extend(validate_cloze_rules(cards))
    return problems


# --- clozes that test one thing ----------------------------------------------

INTERNAL_CODE = re.compile(r"\(\s*[A-Z]{1,2}\d{2}\s*\)")  # (F01), (N60): bookkeeping codes; (A100) is a GPU
"""A bookkeeping code like "(F01)" left in learner-facing text."""

_TEXT_KEYS = ("question", "answer", "details", "context", "formula", "fact")


def _tokens(text: str) -> list[str]:
    """Words and symbols of a deletion or hint, ignoring case, spacing, braces and text macros."""
    text = re.sub(r"\\(text|textbf|textit|mathrm|mathbf|operatorname)\b", " ", text)
    return re.findall(r"\\[A-Za-z]+|\w+|[^\w\s{}]", text.lower())


def _contains(hint: list[str], answer: list[str]) -> bool:
    n = len(answer)
    return n > 0 and any(hint[i : i + n] == answer for i in range(len(hint) - n + 1))


def validate_cloze_rules(cards: Sequence[Card]) -> list[Problem]:
    """E413 a hint that is or contains its answer; E414 (warning) two cloze notes of one
    question deleting the same text; E415 (warning) an internal code such as (F01) in a
    field; E416 (warning) a fact without a context line."""
    from deckbuild.cloze import parse_deletions

    problems: list[Problem] = []
    deleted_by: dict[tuple[str, tuple[str, ...]], str] = {}
    for card in cards:
        for key in _TEXT_KEYS:
            text = getattr(card, key)
            match = INTERNAL_CODE.search(text) if text else None
            if match:
                problems.append(
                    Problem(
                        offset_location(card.where(key), text, match.start()),
                        "E415",
                        f"card '{card.id}': {key}: internal code {match.group(0).strip()!r} in what the learner reads; "
                        "remove it (keep bookkeeping in YAML comments or tags)",
                        "warning",
                    )
                )
        if card.kind not in ("formula", "fact"):
            continue
        key = card.kind
        text = getattr(card, key)
        if card.kind == "fact" and not card.context.strip():
            problems.append(
                Problem(
                    card.location,
                    "E416",
                    f"card '{card.id}': a fact without 'context': expected a line saying what the fact is about",
                    "warning",
                )
            )
        for deletion in parse_deletions(text).deletions:
            answer = _tokens(deletion.body)
            where = offset_location(card.where(key), text, deletion.start)
            if deletion.hint is not None and _contains(_tokens(deletion.hint), answer):
                problems.append(
                    Problem(
                        where,
                        "E413",
                        f"card '{card.id}': c{deletion.number}: the hint {deletion.hint.strip()!r} gives away its answer "
                        f"{deletion.body.strip()!r}; expected a hint that does not contain it",
                    )
                )
            if card.of and answer:
                other = deleted_by.setdefault((card.of, tuple(answer)), card.id)
                if other != card.id:
                    problems.append(
                        Problem(
                            where,
                            "E414",
                            f"card '{card.id}': c{deletion.number} deletes {deletion.body.strip()!r}, as card '{other}' "
                            f"(also of '{card.of}') does; merge the two notes or delete different text",
                            "warning",
                        )
                    )
    return problems


def _check_references(card: Card, by_id: dict[str, Card]) -> list[Problem]:
    problems = []
    for key, targets in (
        ("related", card.related),
        ("duplicate_of", (card.duplicate_of,) if card.duplicate_of else ()),
        ("of", (card.of,) if card.of else ()),
    ):
        for target in targets:
            if target == card.id:
                problems.append(Problem(card.where(key), "E110", f"card '{card.id}': '{key}' names the card itself"))
            elif target not in by_id:
                problems.append(Problem(card.where(key), "E110", f"card '{card.id}': '{key}': no card with id '{target}'"))
            elif key == "of" and by_id[target].kind != "qa":
                problems.append(
                    Problem(
                        card.where(key),
                        "E110",
                        f"card '{card.id}': 'of' must name a question card; '{target}' is a {by_id[target].kind} card",
                    )
                )
    if card.kind in ("formula", "fact"):
        if not card.of and not card.difficulty:
            problems.append(
                Problem(card.location, "E105", f"card '{card.id}': give 'of' (the question it comes from) or 'difficulty'")
            )
        if not card.of and not card.topics:
            problems.append(
                Problem(card.location, "E105", f"card '{card.id}': give 'of' (the question it comes from) or 'topics'")
            )
    return problems


def _check_text(card: Card) -> list[Problem]:
    problems = []
    for key in ("question", "answer", "details", "context", "fact"):
        text = getattr(card, key)
        if not text:
            continue
        if markdown_images(text):
            problems.append(
                Problem(
                    card.where(key),
                    "E121",
                    f"card '{card.id}': '{key}' has a Markdown image; use the card's 'image:' key (file, alt) instead",
                )
            )
    return problems


def validate_math_and_cloze(cards: Sequence[Card]) -> list[Problem]:
    """LaTeX and cloze rules (cloze.py) for formulas, facts, and math in any Markdown text."""
    from deckbuild import cloze

    problems: list[Problem] = []
    for card in cards:
        checks: list[tuple[str, Callable[[str], list[TextProblem]]]] = [
            (key, cloze.math_problems) for key in MATH_KEYS if getattr(card, key)
        ]
        if card.kind == "formula":
            checks.append(("formula", cloze.validate_formula))
        elif card.kind == "fact":
            checks.append(("fact", cloze.validate_fact))
        for key, checker in checks:
            text = getattr(card, key)
            if key in MATH_KEYS and "\\" not in text and "$" not in text:
                continue  # no math possible: skip the scan
            for found in checker(text):
                where = offset_location(card.where(key), text, found.offset)
                problems.append(found.at(where, f"card '{card.id}': {key}: "))
    return problems


def offset_location(value_at: Location, text: str, offset: int) -> Location:
    """file:line:col of a character inside a YAML text value (best effort for columns).

    Multi-line values are block scalars in practice ('|'), whose text starts on the line
    after the indicator, indented by two more columns than the key.
    """
    before = text[: max(offset, 0)]
    newlines = before.count("\n")
    if "\n" not in text.rstrip("\n"):
        return Location(value_at.path, value_at.line, value_at.col + len(before) + (1 if value_at.col else 0))
    column = len(before) - (before.rfind("\n") + 1) if newlines else len(before)
    return Location(value_at.path, value_at.line + 1 + newlines, column + 1)


def validate_diagrams(cards: Sequence[Card]) -> list[Problem]:
    """E130: an unknown diagram or params its generator does not take (checked without drawing)."""
    specs = [card for card in cards if card.figure is not None and card.figure.diagram]
    if not specs:
        return []  # deckbuild.diagrams is not even imported
    from deckbuild import diagrams

    problems = []
    for card in specs:
        assert card.figure is not None and card.figure.diagram is not None
        for message in diagrams.validate(card.figure.diagram, card.figure.params_dict()):
            problems.append(Problem(card.where("diagram"), "E130", f"card '{card.id}': diagram: {message}"))
    return problems
