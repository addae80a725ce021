"""A learner who studied release 1.0.0 of the shipped deck imports the current release with the real Anki backend.

The 1.0.0 package is rebuilt from its published snapshot (releases/1.0.0.jsonl holds every
note exactly as it shipped; each note carries the release time as its mod, which is at or
after its real mod, so the test is if anything stricter about what counts as newer).
"""

from __future__ import annotations

from pathlib import Path

from ankiutil import answer_all, history, import_package, new_collection, notes_by_card_id
from conftest import REPO
from golden import snapshot

from deckbuild.apkg.notetypes import NOTETYPES
from deckbuild.apkg.package import write_package
from deckbuild.model import StampedNote
from deckbuild.plan import plan
from deckbuild.release.versioning import read_snapshot


def _package_1_0_0(project_root: Path, out: Path) -> dict[str, tuple[str, ...]]:
    """Write release 1.0.0's package to out; returns its notes' fields by card id."""
    released = read_snapshot(REPO / "releases" / "1.0.0.jsonl")
    config = plan(project_root, "check").config
    assert config is not None
    notes = sorted(released.notes.values(), key=lambda n: n.card_id)
    stamped = [StampedNote(n.as_rendered(i), released.time) for i, n in enumerate(notes)]
    data = write_package(
        out,
        deck_name=config.name,
        deck_description="",
        namespace=config.namespace,
        notetypes=NOTETYPES,
        notetype_mods=dict.fromkeys(NOTETYPES, released.time),
        notes=stamped,
        media=[],
    )
    out.write_bytes(data)
    return {n.card_id: n.fields for n in notes}


def test_learner_of_1_0_0_keeps_history_and_gets_the_changes(shipped_project: Path, tmp_path: Path) -> None:
    v1 = tmp_path / "deck-1.0.0.apkg"
    old_fields = _package_1_0_0(shipped_project, v1)
    checked = plan(shipped_project, "check")
    assert checked.config is not None and checked.package is not None
    assert checked.config.version != "1.0.0", "the shipped deck has a release after 1.0.0"
    current = checked.package
    shipped = {note["guid"]: note for note in snapshot(current)["notes"]}

    col = new_collection(tmp_path / "anki")
    try:
        first = import_package(col, v1)
        assert len(first.new) == len(old_fields)
        answer_all(col)
        before = history(col)
        before_fields = {cid: tuple(note.fields) for cid, note in notes_by_card_id(col).items()}

        log = import_package(col, current)
        assert not log.conflicting and not log.duplicate
        notes = notes_by_card_id(col)
        # No duplicates: one note per GUID, and every 1.0.0 note is still there.
        guids = [col.get_note(nid).guid for nid in col.find_notes("")]
        assert len(guids) == len(set(guids)) == len(set(shipped) | {n.guid for n in notes.values()})
        assert set(old_fields) <= set(notes)
        # Every day of review history kept: each reviewed card keeps its interval, due date and reviews.
        after = history(col)
        for card_id, cards in before.items():
            assert set(cards) <= set(after[card_id]), card_id
        # Changed notes carry the new release's text; the others are untouched.
        changed = 0
        for card_id, note in notes.items():
            new = shipped[note.guid]["fields"]
            assert list(note.fields) == new, card_id
            if card_id in before_fields and tuple(before_fields[card_id]) != tuple(new):
                changed += 1
        assert changed > 0
        assert len(log.updated) == changed
        # Cards merged away in the curation are retired, not deleted, and say so.
        retired = [cid for cid in old_fields if "retired" in notes[cid].tags]
        assert retired and all(cid not in {c.id for c in checked.cards} for cid in retired)
    finally:
        col.close()
