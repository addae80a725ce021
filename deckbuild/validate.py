"""Every check that needs the whole deck.  Collects all problems; never stops at the first."""

from __future__ import annotations

import re
from collections.abc import Sequence

from deckbuild.errors import Problem
from deckbuild.model import Card
from deckbuild.render import markdown_images

DOLLAR_MATH = re.compile(r"(?<![\\$])\$[^$\n]+\$")


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
        parent = by_id.get(card.of)
        if not card.of and not card.difficulty:
            problems.append(
                Problem(card.location, "E105", f"card '{card.id}': give 'of' (the question it comes from) or 'difficulty'")
            )
        if not card.of and not card.topics:
            problems.append(
                Problem(card.location, "E105", f"card '{card.id}': give 'of' (the question it comes from) or 'topics'")
            )
        del parent
    return problems


def _check_text(card: Card) -> list[Problem]:
    problems = []
    for key in ("question", "answer", "details", "context", "fact"):
        text = getattr(card, key)
        if not text:
            continue
        if DOLLAR_MATH.search(text):
            problems.append(
                Problem(
                    card.where(key),
                    "E402",
                    f"card '{card.id}': '{key}' uses $...$ math, which Anki shows as plain text; write \\( ... \\) (inline) or \\[ ... \\] (display)",
                )
            )
        if markdown_images(text):
            problems.append(
                Problem(
                    card.where(key),
                    "E121",
                    f"card '{card.id}': '{key}' has a Markdown image; use the card's 'image:' key (file, alt) instead",
                )
            )
    return problems
