"""The Source field names what a learner can look up: the bank's title and the question's number."""

from __future__ import annotations

import re
from pathlib import Path

import yaml
from ankiutil import notes_by_card_id, visible_text
from conftest import REPO
from golden import snapshot

from deckbuild.commands import build
from deckbuild.notes import source_text
from deckbuild.release.retirement import INTERNAL_CODE

HIDDEN = {"CardId", "Reserved2"}  # the note's key, read by no template, and the spare field


def test_source_text_gives_the_title_and_the_question_number() -> None:
    titles = {"bank-120": "The Bank (Someone)"}
    assert source_text("bank-120#q040", titles) == "The Bank (Someone) · question 40"
    assert source_text("bank-120#q7", titles) == "The Bank (Someone) · question 7"
    assert source_text("bank-120", titles) == "The Bank (Someone)"
    assert source_text("Bishop 2006#p. 230", titles) == "Bishop 2006 · p. 230"  # no title: as written
    assert source_text("", titles) == ""


def test_every_shipped_source_field_names_a_title_and_a_question(shipped_collection) -> None:
    titles = yaml.safe_load((REPO / "deck.yaml").read_text(encoding="utf-8"))["sources"]
    notes = notes_by_card_id(shipped_collection)
    questions = {n["CardId"]: n for n in notes.values() if "Question" in n and "retired" not in n.tags}
    assert len(questions) == 163
    pattern = re.compile(rf"({'|'.join(re.escape(t) for t in titles.values())}) · question ([1-9]\d*)")
    for card_id, note in questions.items():
        assert pattern.fullmatch(note["Source"]), (card_id, note["Source"])


def test_no_field_of_the_shipped_deck_holds_an_internal_code(shipped_collection) -> None:
    """Every field a template can show, Source included, in a real collection: no `q040`,
    no document name such as `deep-learning-120`, no `(F48)`, no card id."""
    notes = notes_by_card_id(shipped_collection)
    documents = yaml.safe_load((REPO / "deck.yaml").read_text(encoding="utf-8"))["sources"].keys()
    problems = []
    for card_id, note in notes.items():
        for name, value in note.items():
            if name in HIDDEN:
                continue
            text = visible_text(value)
            found = [m.group() for m in INTERNAL_CODE.finditer(text)]
            found += [d for d in documents if d in text]
            found += [w for w in re.findall(r"[a-z0-9]+(?:-[a-z0-9]+)+", text) if w in notes]
            problems += [f"{card_id} {name}: {code}" for code in found]
    assert not problems, "\n".join(problems)


def test_a_title_given_later_reaches_every_note_on_the_next_build(sample: Path) -> None:
    """The build cache keys notes on the titles too: editing `sources:` alone re-renders Source."""
    before = {n["fields"][9]: n["fields"][6] for n in snapshot(build(sample).path)["notes"]}
    assert before["escaping"] == "sample-notes · question 1"
    deck = sample / "deck.yaml"
    deck.write_text(deck.read_text(encoding="utf-8") + "sources:\n  sample-notes: The Sample Notes\n", encoding="utf-8")
    after = {n["fields"][9]: n["fields"][6] for n in snapshot(build(sample).path)["notes"]}
    assert after["escaping"] == "The Sample Notes · question 1"
    assert {k for k, v in after.items() if v != before[k]} == {k for k, v in before.items() if "sample-notes" in v}
