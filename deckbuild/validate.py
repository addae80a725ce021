"""Every check that needs the whole deck.  Collects all problems; never stops at the first."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from deckbuild.errors import Location, Problem
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
    if card.kind != "qa":
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
        checks: list[tuple[str, Callable[[str], list[cloze.Problem]]]] = [
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
                problems.append(Problem(where, found.code, f"card '{card.id}': {key}: {found.message}"))
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
