"""apkg/ids.py: every id Anki sees is a fixed function of explicit names, the same on every run."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys

from deckbuild.apkg import ids
from deckbuild.apkg.notetypes import field_key
from deckbuild.model import slugify

NS = "package-test"


def test_ids_are_the_values_learners_already_have() -> None:
    # Pinned: a change here re-identifies every shipped note, deck or note type in Anki.
    assert ids.note_guid(NS, "two-plus-two") == "0e92f76a67de1e3346f9"
    assert ids.deck_id(NS, "Package Test") == 3282275386088873
    assert ids.notetype_id(NS, "qa") == 2735270882296704
    assert ids.notetype_id(NS, "cloze") == 2906276745286246
    assert ids.field_id(NS, "qa", "Question") == 3407612317364582093
    assert ids.template_id(NS, "qa", "Question") == 4570279360672185414


def test_ids_do_not_depend_on_the_process() -> None:
    """Python's str hash is salted per process; ids must not be."""
    code = "from deckbuild.apkg import ids; print(ids.note_guid('package-test', 'two-plus-two'), ids.deck_id('package-test', 'Package Test'))"
    outputs = {
        subprocess.run(
            [sys.executable, "-c", code], env={**os.environ, "PYTHONHASHSEED": seed}, capture_output=True, text=True, check=True
        ).stdout
        for seed in ("1", "2")
    }
    assert outputs == {"0e92f76a67de1e3346f9 3282275386088873\n"}


def test_namespaces_never_share_an_id() -> None:
    other = "another-deck"
    assert ids.note_guid(NS, "x") != ids.note_guid(other, "x")
    assert ids.deck_id(NS, "Deck") != ids.deck_id(other, "Deck")
    assert ids.notetype_id(NS, "qa") != ids.notetype_id(other, "qa")
    assert ids.field_id(NS, "qa", "Question") != ids.field_id(other, "qa", "Question")
    assert ids.template_id(NS, "qa", "Question") != ids.template_id(other, "qa", "Question")


def test_kinds_of_id_never_collide() -> None:
    """The same names give different ids for a deck, a note type, a field and a template."""
    assert len({ids.deck_id(NS, "qa"), ids.notetype_id(NS, "qa")}) == 2
    assert ids.field_id(NS, "qa", "Question") != ids.template_id(NS, "qa", "Question")


def test_ids_fit_anki() -> None:
    """Deck and note type ids stay below 2**53 (exact in JavaScript, which the desktop UI uses)."""
    for deck_or_type in (ids.deck_id(NS, "Package Test"), ids.notetype_id(NS, "qa"), ids.notetype_id(NS, "cloze")):
        assert 1 << 40 <= deck_or_type < 1 << 53
    assert 0 < ids.field_id(NS, "qa", "Question") < 1 << 63
    guid = ids.note_guid(NS, "two-plus-two")
    assert len(guid) == 20 and all(c in "0123456789abcdef" for c in guid)


def test_a_renamed_card_keeps_its_first_ids_guid() -> None:
    assert ids.card_guid(NS, "new-name", ("first-name", "second-name")) == ids.note_guid(NS, "first-name")
    assert ids.card_guid(NS, "plain") == ids.note_guid(NS, "plain")


def test_a_renamed_field_keeps_its_id() -> None:
    """The learner's field was released as Reserved1: its id follows that name, not "My notes"."""
    assert field_key("My notes") == "Reserved1"
    assert ids.field_id(NS, "qa", field_key("My notes")) == ids.field_id(NS, "qa", "Reserved1")


def test_row_ids_count_up_from_the_package_time() -> None:
    assert ids.package_time([1700000000, 1600000000]) == 1700000000
    assert ids.package_time([]) == 1
    assert list(itertools.islice(ids.row_ids(1700000000), 3)) == [1700000000000, 1700000000001, 1700000000002]


def test_slugs() -> None:
    assert ids.slug_for_question("Why does the learning rate need a warmup?") == "learning-rate-need-warmup"
    assert ids.slug_for_question("What is it?") == "card"
    assert slugify("Deep Learning: Interview Q&A") == "deep-learning-interview-q-a"
    assert slugify("???") == "deck"
    assert ids.CARD_ID_PATTERN.fullmatch("lr-warmup.v2_a")
    assert not ids.CARD_ID_PATTERN.fullmatch("-starts-with-dash")
