"""Load this branch's cloze cards and compute what Anki must show for them."""

from __future__ import annotations

import csv
import re
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from deckbuild.cloze.emit import render_fact, to_anki_formula
from deckbuild.cloze.scan import Deletion, find_math_spans, parse_deletions

ROOT = Path(__file__).resolve().parents[2]
SEED_IDS = Path(__file__).resolve().parents[1] / "data" / "seed_ids.csv"


@cache
def load_cards(name: str) -> list[dict[str, Any]]:
    """The cards of ``cards/<name>.yaml``."""
    return yaml.safe_load((ROOT / "cards" / f"{name}.yaml").read_text(encoding="utf-8"))


@cache
def seed_ids() -> dict[str, str]:
    """Question card id -> seed ref (000-q15)."""
    with SEED_IDS.open(encoding="utf-8") as f:
        return {row["card_id"]: row["seed_ref"] for row in csv.DictReader(f)}


def markdown_stand_in(text: str) -> str:
    """deckbuild's own Markdown renderer (the one the compiler uses for fact text)."""
    from deckbuild.render import markdown_html

    return markdown_html(text)


def field_html(card: dict[str, Any]) -> str:
    """The Text field deckbuild emits for a cloze card."""
    if "formula" in card:
        return to_anki_formula(card["formula"])
    return render_fact(card["fact"], markdown_stand_in)


def source_text(card: dict[str, Any]) -> str:
    """The card's cloze source (formula or fact)."""
    return card["formula"] if "formula" in card else card["fact"]


def expected_side(card: dict[str, Any], ordinal: int | None) -> str:
    """The field as it should look on card ``ordinal``'s front (None: the back).

    Built by substituting the deletions in the source and emitting it without any cloze, so
    it does not reuse the escaping under test.
    """
    text = source_text(card)
    spans = find_math_spans(text)
    in_math_formula = "formula" in card
    out = []
    for seg in parse_deletions(text).segments:
        if not isinstance(seg, Deletion):
            out.append(seg.text)
        elif seg.number != ordinal:
            out.append(seg.body)
        elif seg.hint is None:
            out.append("[...]")
        else:
            in_math = in_math_formula or any(s < seg.start and seg.end <= e for s, e, _, _ in spans)
            out.append(("[\\text{%s}]" if in_math else "[%s]") % seg.hint.strip())
    plain = "".join(out)
    if "formula" in card:
        return to_anki_formula(plain)
    return render_fact(plain, markdown_stand_in)


def squash(s: str) -> str:
    """Compare up to whitespace."""
    return re.sub(r"\s+", "", s)
