"""Rebuild after an edit and re-import with Anki's defaults: only the edited notes change."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from ankiutil import answer_all, history, import_package, notes_by_card_id

from deckbuild.commands import build


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


@pytest.mark.parametrize("same_second", [True, False])
def test_edit_two_answers_add_one_card(sample: Path, collection, monkeypatch, same_second: bool) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    v1 = build(sample)
    import_package(collection, v1.path)
    answer_all(collection)
    before = history(collection)
    before_mods = {cid: n.mod for cid, n in notes_by_card_id(collection).items()}
    types_before = len(collection.models.all_names_and_ids())

    cards = sample / "cards" / "basics.yaml"
    _edit(cards, "a probability for each class.", "one probability per class.")
    _edit(cards, "Across the batch, per feature.", "Over the batch, separately per feature.")
    with (sample / "cards" / "extra.yaml").open("a") as handle:
        handle.write("\n- id: brand-new\n  question: New?\n  answer: Yes.\n  difficulty: easy\n  topics: [foundations::text]\n")
    if not same_second:
        monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700086400")
    v2 = build(sample)
    assert v2.changed_notes == 3

    log = import_package(collection, v2.path)  # Anki's defaults: update notes "if newer"
    assert len(log.new) == 1 and log.new[0].fields[-3] == "brand-new"
    assert sorted(n.fields[-3] for n in log.updated) == ["figure-card", "math-answer"]
    assert len(log.conflicting) == 0 and len(log.missing_notetype) == 0
    after = notes_by_card_id(collection)
    assert "one probability per class." in after["math-answer"]["Answer"]
    assert after["figure-card"]["Answer"] == "<p>Over the batch, separately per feature.</p>"
    for card_id, mod in before_mods.items():
        if card_id not in {"math-answer", "figure-card"}:
            assert after[card_id].mod == mod, f"{card_id} was touched"
    assert history(collection) == {**before, "brand-new": history(collection)["brand-new"]}
    assert len(collection.models.all_names_and_ids()) == types_before  # no "Question+" note type


def test_reimport_of_the_same_build_changes_nothing(sample: Path, collection) -> None:
    path = build(sample).path
    import_package(collection, path)
    answer_all(collection)
    before = history(collection)
    log = import_package(collection, path)
    assert not log.new and not log.updated
    assert history(collection) == before


def test_rebuild_keeps_mods_of_unchanged_notes(sample: Path, monkeypatch) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    build(sample)
    first = (sample / "deckbuild.lock").read_text()
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1800000000")
    build(sample)
    assert (sample / "deckbuild.lock").read_text() == first
    assert os.environ["SOURCE_DATE_EPOCH"] == "1800000000"
