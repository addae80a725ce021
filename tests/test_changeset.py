"""The changeset: a plan compared with what was last built, by one pure function."""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path

import pytest
from conftest import write_tree

from deckbuild.apkg.notetypes import NOTETYPES
from deckbuild.apply import apply
from deckbuild.changeset import Baseline, Changeset, NoteChange
from deckbuild.changeset import changes as compare
from deckbuild.model import RETIRED_TAG, MediaFile, RenderedNote, StampedNote, content_hash
from deckbuild.plan import plan
from deckbuild.plan_result import Output, Plan, build_baseline, changeset
from deckbuild.release.record import Record, Stamp
from deckbuild.release.versioning import Snapshot, published

ROOT = Path("/deck")


def _note(card_id: str, answer: str = "A.", *, media: tuple[str, ...] = (), tags: tuple[str, ...] = ("t",), **kw) -> RenderedNote:
    fields = (f"Q {card_id}?", answer, "", "", "", "", "", "", "", card_id, "", "")
    return RenderedNote(card_id, f"g-{card_id}", "qa", fields, tags, 0, content_hash("qa", fields, tags), media, **kw)


FIELDS = {k: nt.fields for k, nt in NOTETYPES.items()}
HASHES = {k: nt.content_hash() for k, nt in NOTETYPES.items()}


def changes(notes: tuple[RenderedNote, ...], base: Baseline, **kw) -> Changeset:
    return compare(base, notes, field_names=FIELDS, notetypes=HASHES, **kw)


def _base(*notes: RenderedNote, media: dict[str, str] | None = None, notetypes: dict[str, str] | None = None) -> Baseline:
    shipped = {n.card_id: published(n) for n in notes}
    hashes = {n.card_id: n.content_hash for n in notes}
    guids = {n.guid: n.card_id for n in notes}
    return Baseline(hashes, guids, shipped, notetypes if notetypes is not None else HASHES, media or {})


def _plan(*notes: RenderedNote, figures: dict | None = None, outputs: tuple[Output, ...] = (), **kw) -> Plan:
    return Plan(
        ROOT,
        "build",
        notetypes=NOTETYPES,
        notes=tuple(StampedNote(n, 1) for n in notes),
        figures=figures or {},
        outputs=outputs,
        **kw,
    )


def test_a_no_op_changes_nothing() -> None:
    notes = (_note("a"), _note("b", media=("x.png",)))
    found = changes(notes, _base(*notes))
    assert found.empty and found.notes == () and found.files == ()


def test_a_one_card_edit_lists_exactly_that_note_its_fields_and_its_media() -> None:
    a, b = _note("a"), _note("b", media=("fig-b.png",))
    edited = _note("b", "Better.", media=("fig-b.png",))
    found = changes((a, edited), _base(a, b))
    assert found.notes == (NoteChange("b", "changed", ("Answer",), False, ("fig-b.png",)),)
    assert not found.leaving and not found.media_added and not found.media_dropped and not found.notetypes


def test_a_tag_edit_says_tags_and_no_field() -> None:
    a = _note("a")
    found = changes((_note("a", tags=("t", "u")),), _base(a))
    assert found.notes == (NoteChange("a", "changed", (), True),)


def test_an_added_and_a_removed_card() -> None:
    a, b = _note("a"), _note("b")
    found = changes((a, _note("c", media=("c.svg",))), _base(a, b))
    assert found.notes == (NoteChange("c", "added", media=("c.svg",)),)
    assert found.leaving == ("b",)


def test_a_renamed_card_is_its_old_note_not_an_addition() -> None:
    a = _note("a")
    for renamed in (dataclasses.replace(_note("a2"), previous_ids=("a",)), dataclasses.replace(_note("a2"), guid=a.guid)):
        found = changes((renamed,), _base(a))
        assert found.notes == (NoteChange("a2", "renamed", previous="a"),)
        assert found.leaving == ()


def test_a_retired_note_live_again_is_restored() -> None:
    gone = dataclasses.replace(published(_note("a", tags=("t", RETIRED_TAG))), retired=True)
    base = Baseline({"a": gone.hash}, {gone.guid: "a"}, {"a": gone}, HASHES)
    assert [(n.card_id, n.kind) for n in changes((_note("a"),), base).notes] == [("a", "restored")]


def test_a_note_shipped_retired_now_is_retired() -> None:
    a = _note("a")
    retired = _note("a", tags=("t", RETIRED_TAG))
    found = changes((retired,), _base(a))
    assert [(n.card_id, n.kind, n.tags) for n in found.notes] == [("a", "retired", True)]


def test_a_moved_note() -> None:
    a = _note("a")
    found = changes((dataclasses.replace(a, deck="Sub"),), _base(a))
    assert found.moved == (("a", "", "Sub"),) and found.notes == ()


def test_notes_that_are_the_baselines_own_objects_change_as_their_copies_would() -> None:
    """serve compares a plan with the one it shows, sharing the unchanged notes: the changeset
    skips those (the very objects the baseline holds) and must say what a full comparison says."""
    kept = [_note("a"), _note("b", media=("b.png",)), _note("c"), _note("old-d"), _note("e"), _note("f")]
    retired = _note("r", tags=("t", RETIRED_TAG))
    shown = {n.card_id: n for n in [*kept, retired]}
    now = (
        kept[0],  # unchanged: the shown object itself
        _note("b", "Edited.", media=("b.png",)),
        dataclasses.replace(kept[2], deck="Sub"),  # moved
        _note("d", previous_ids=("old-d",)),  # renamed
        kept[4],
        _note("g"),  # added; f is gone
        retired,
    )

    def base(notes: dict[str, RenderedNote]) -> Baseline:
        return Baseline({k: n.content_hash for k, n in notes.items()}, {n.guid: k for k, n in notes.items()}, notes, HASHES, {})

    shared = changes(now, base(shown))
    copied = changes(now, base({k: dataclasses.replace(n) for k, n in shown.items()}))
    assert shared == copied
    assert [(n.card_id, n.kind) for n in shared.notes] == [("b", "changed"), ("d", "renamed"), ("g", "added")]
    assert shared.moved == (("c", "", "Sub"),) and shared.leaving == ("f",) and shared.removed == ("f",)


def test_a_media_replacement_an_addition_and_a_drop() -> None:
    a = _note("a", media=("a.png",))
    figures = {
        "a": (MediaFile("a.png", ROOT / "media/a.png", "a.png", "new"), False),
        "b": (MediaFile("b.png", ROOT / "media/b.png", "b.png", "bh"), False),
        "d": (MediaFile("d-1234.png", ROOT / ".deckbuild-cache/d.png"), False),  # drawn: named by content
    }
    record = Record(
        {"a": Stamp(a.content_hash, 1)},
        {k: Stamp(h, 1) for k, h in HASHES.items()},
        {"media": {"a.png": {"name": "a.png", "hash": "old"}, "gone.png": {"name": "gone.png", "hash": "g"}}},
    )
    found = changeset(_plan(a, figures=figures, before=record))
    assert found.media_replaced == ("a.png",)
    assert found.media_added == ("b.png",)
    assert found.media_dropped == ("gone.png",)
    assert found.notes == ()


def test_a_note_type_change() -> None:
    a = _note("a")
    hashes = {k: nt.content_hash() for k, nt in NOTETYPES.items()}
    found = changes((a,), _base(a, notetypes={**hashes, "cloze": "older"}))
    assert found.notetypes == ("cloze",)
    assert not found.empty


def test_files_are_the_outputs_whose_bytes_change() -> None:
    same = Output(ROOT / "deckbuild.lock", b"x", "dist", hashlib.sha256(b"x").hexdigest())
    new = Output(ROOT / "deck.yaml", b"y", "deck.yaml", hashlib.sha256(b"old").hexdigest())
    package = Output(ROOT / "dist/p.apkg", b"z", "dist")  # built from nothing it read: always written
    assert changeset(_plan(outputs=(same, new, package))).files == (new.path, package.path)


def test_the_baseline_knows_old_fields_only_where_the_release_shipped_them_unchanged() -> None:
    a, b = _note("a"), _note("b")
    b_now = _note("b", "Built since.")
    record = Record({"a": Stamp(a.content_hash, 1), "b": Stamp(b_now.content_hash, 2)}, {}, {})
    snapshot = Snapshot("1.0.0", 0, {}, (), {"a": published(a), "b": published(b)})
    assert set(build_baseline(record, snapshot).notes) == {"a"}
    assert build_baseline(None, snapshot) == Baseline()


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")
    card = "- id: {0}\n  question: Question {0}?\n  answer: {1}\n  difficulty: hard\n  topics: [t::s]\n"
    return write_tree(
        tmp_path / "deck",
        {
            "deck.yaml": "name: Change\nnamespace: change\nversion: 1.0.0\n",
            "cards/a.yaml": card.format("c1", "One.") + card.format("c2", "Two."),
        },
    )


def test_the_pipeline_changeset_of_a_one_card_edit_and_of_a_no_op(project: Path) -> None:
    apply(plan(project, "release"))
    assert changeset(plan(project, "build")).notes == ()
    cards = project / "cards" / "a.yaml"
    cards.write_text(cards.read_text().replace("Two.", "Two!"))
    edited = changeset(plan(project, "build"))
    assert edited.notes == (NoteChange("c2", "changed", ("Answer",)),)
    assert edited.leaving == () and edited.media_added == () and edited.notetypes == ()


def test_the_pipeline_changeset_of_a_removed_card(project: Path) -> None:
    apply(plan(project, "release"))
    cards = project / "cards" / "a.yaml"
    cards.write_text(cards.read_text().split("- id: c2")[0])
    assert changeset(plan(project, "build")).leaving == ("c2",)


def test_the_build_line_counts_the_changesets_notes() -> None:
    from deckbuild.commands import changed_since_last_build

    hand_made = Changeset(
        (NoteChange("a", "added"), NoteChange("b", "changed", ("Answer",)), NoteChange("c", "renamed", previous="z")),
        leaving=("gone",),  # not shipped by a build: a release retires it
        media_added=("x.png",),
    )
    assert changed_since_last_build(hand_made) == "3 notes changed"
    assert changed_since_last_build(Changeset()) == "0 notes changed"


def test_the_release_bump_is_a_function_of_the_changeset() -> None:
    from deckbuild.release.versioning import release_bump

    assert release_bump(Changeset()) is None
    assert release_bump(Changeset((NoteChange("a", "changed", ("Answer",)),))) == "patch"
    assert release_bump(Changeset((NoteChange("a", "renamed", previous="z"),))) == "patch"
    assert release_bump(Changeset(moved=(("a", "", "Sub"),))) == "patch"
    assert release_bump(Changeset((NoteChange("a", "changed"), NoteChange("b", "added")))) == "minor"
    assert release_bump(Changeset((NoteChange("b", "added"),), leaving=("c",))) == "major"
    assert release_bump(Changeset((NoteChange("r", "retired"),))) == "major"
    assert release_bump(Changeset(notetypes=("cloze",))) == "major"
    # A note retired long ago whose notice was reworded, or one live again, asks for no release.
    assert release_bump(Changeset((NoteChange("r", "still_retired"), NoteChange("s", "restored")))) is None
    assert release_bump(Changeset(), notice=True) == "patch" and release_bump(Changeset(), breaking=True) == "major"


def test_the_changelog_lists_are_a_function_of_the_changeset() -> None:
    from deckbuild.release.versioning import changelog_entry, release_changes

    old = {k: published(_note(k)) for k in ("a", "b", "gone")}
    previous = Snapshot("1.0.0", 0, HASHES, (), old)
    current = {
        "a": published(_note("a", "New.")),
        "b2": published(dataclasses.replace(_note("b2"), guid="g-b")),
        "c": published(_note("c")),
    }
    hand_made = Changeset(
        (
            NoteChange("a", "changed", ("Answer",)),
            NoteChange("b2", "renamed", previous="b"),
            NoteChange("c", "added"),
        ),
        leaving=("gone",),
        moved=(("c", "", "Sub"),),
    )
    found = release_changes(hand_made, previous, current)
    assert found.needed_bump() == "major"
    assert found.summary() == "1 added, 1 changed, 1 renamed, 1 moved, 1 retired"
    entry = changelog_entry("2.0.0", 0, found, "Deck")
    assert "### Added\n\n- `c` — Q c?\n\n### Changed\n\n- `a` — Q a?\n\n### Renamed\n\n- `b` → `b2`" in entry
    assert "### Moved\n\n- Moved to Deck::Sub: `c` — Q c?" in entry
    assert "### Retired\n\n- `gone` — Q gone?" in entry
