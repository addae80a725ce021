"""The deck's formula and fact cards: valid, traceable, and rendered right by Anki itself."""

from __future__ import annotations

from typing import Any

import pytest
from cloze_support.anki_render import render_cloze, visible_text
from cloze_support.deck_cards import (
    expected_side,
    field_html,
    load_cards,
    seed_ids,
    source_text,
    squash,
)

from deckbuild.apkg.ids import CARD_ID_PATTERN
from deckbuild.cloze.checks import math_problems, validate_fact, validate_formula, validate_math
from deckbuild.cloze.scan import cloze_numbers

FORMULAS = load_cards("formulas")
FACTS = load_cards("facts")
ALL = FORMULAS + FACTS
ALLOWED_KEYS = {
    "id",
    "formula",
    "fact",
    "context",
    "of",
    "details",
    "related",
    "tags",
    "diagram",
    "image",
    "difficulty",
    "topics",
    "source",
    "lint",  # a learning-lint silence, each listed in docs/curation.md (tests/test_lint.py)
}


def test_counts() -> None:
    assert len(FORMULAS) >= 40
    assert len(FACTS) >= 30
    assert all("formula" in c for c in FORMULAS)
    assert all("fact" in c for c in FACTS)


def test_ids_unique_and_well_formed() -> None:
    ids = [c["id"] for c in ALL]
    assert len(ids) == len(set(ids))
    assert all(CARD_ID_PATTERN.match(i) for i in ids)
    assert all(c["id"].startswith("formula-") for c in FORMULAS)
    assert all(c["id"].startswith("fact-") for c in FACTS)


@pytest.mark.parametrize("card", ALL, ids=lambda c: c["id"])
def test_card_is_traceable_and_valid(card: dict[str, Any]) -> None:
    assert set(card) <= ALLOWED_KEYS
    assert card["of"] in seed_ids(), "of: must name a seed question card"
    assert not any(str(t).startswith("kind::") for t in card.get("tags", []))
    if "formula" in card:
        assert validate_formula(card["formula"]) == []
        assert card.get("context"), "a formula card needs its context sentence"
    else:
        assert validate_fact(card["fact"]) == []
    for key in ("context", "details"):
        if key in card:
            assert math_problems(card[key]) == []


@pytest.mark.parametrize("card", ALL, ids=lambda c: c["id"])
def test_anki_renders_card(card: dict[str, Any]) -> None:
    """Front: [...]/hint and none of the deleted text; back: everything; one card per cN."""
    cards = render_cloze(field_html(card))
    numbers = cloze_numbers(source_text(card))
    assert [c.ordinal for c in cards] == sorted(numbers)
    back = visible_text(expected_side(card, None))
    for c in cards:
        assert squash(c.back) == squash(back)
        assert squash(c.front) == squash(visible_text(expected_side(card, c.ordinal)))
        assert "[" in c.front
        for side in (c.front, c.back):
            assert "{{" not in side
            assert not [p for p in validate_math(side) if p.code == "E401"], side
