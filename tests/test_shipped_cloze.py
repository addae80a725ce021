"""Every cloze card of the built deck, as the official Anki backend renders it with our note type."""

from __future__ import annotations

import re

from ankiutil import notes_by_card_id
from cloze_support.anki_render import unwrap_highlight, visible_text
from cloze_support.deck_cards import expected_side, load_cards, squash

from deckbuild.cloze.checks import validate_math
from deckbuild.cloze.scan import cloze_numbers

CARDS = {c["id"]: c for c in load_cards("formulas") + load_cards("facts")}


def _cloze_text(rendered: str) -> str:
    """The visible text of the card's cloze field (our template wraps it in .db-cloze-text)."""
    match = re.search(
        r'<div class="db-cloze-text">(.*?)</div>(?=<details|<div class="db-|</div>\s*<script>|<div class="db-notice")',
        rendered,
        re.S,
    )
    assert match, rendered[-500:]
    return visible_text(unwrap_highlight(match.group(1)))


def test_every_cloze_card_renders_right(shipped_collection) -> None:
    cloze_notes = {cid: n for cid, n in notes_by_card_id(shipped_collection).items() if "Text" in n}
    # Retired notes keep shipping as they last shipped (their source is gone), tagged and with a notice.
    retired = {cid for cid, n in cloze_notes.items() if "retired" in n.tags}
    assert all("Retired in version" in cloze_notes[cid]["Notice"] for cid in retired)
    assert not retired & set(CARDS)
    notes = {cid: n for cid, n in cloze_notes.items() if cid not in retired}
    assert set(notes) == set(CARDS)
    formulas = sum(1 for n in notes.values() if "kind::formula" in n.tags)
    facts = sum(1 for n in notes.values() if "kind::fact" in n.tags)
    assert formulas >= 40 and facts >= 30
    for card_id, note in notes.items():
        source = CARDS[card_id]
        cards = sorted(note.cards(), key=lambda c: c.ord)
        numbers = sorted(cloze_numbers(source.get("formula") or source["fact"]))
        assert [c.ord + 1 for c in cards] == numbers, card_id
        back_expected = squash(visible_text(expected_side(source, None)))
        for card in cards:
            front = _cloze_text(card.question())
            back = _cloze_text(card.answer())
            assert squash(front) == squash(visible_text(expected_side(source, card.ord + 1))), card_id
            assert squash(back) == back_expected, card_id
            assert "[" in front, card_id
            for side in (front, back):
                assert "{{" not in side, card_id
                # No stray brace: what is left of the LaTeX is balanced.
                assert not [p for p in validate_math(side) if p.code == "E401"], (card_id, side)
        # Tagged like the question it comes from, plus its kind; a difficulty judged for the
        # note itself replaces the inherited one.
        parent = notes_by_card_id(shipped_collection)[source["of"]]
        prefixes = ("topic::", "source::") if "difficulty" in source else ("difficulty::", "topic::", "source::")
        inherited = {t for t in parent.tags if t.startswith(prefixes)}
        assert inherited <= set(note.tags), card_id
        if "difficulty" in source:
            assert f"difficulty::{source['difficulty']}" in note.tags, card_id
            assert sum(t.startswith("difficulty::") for t in note.tags) == 1, card_id
        assert ("kind::formula" if "formula" in source else "kind::fact") in note.tags
