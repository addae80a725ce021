"""The consumers of a changeset: each report is a function of the Changeset it is given.

Each consumer gets a hand-made Changeset and must say exactly what it says (not what it would
find by comparing the two sides itself); then the changeset a real build of a real project
computes for a one-card edit, an image edit and a no-op; then push's report and status's lists,
whose changesets compare the package (or what was shipped) with the learner's collection.
(The release bump and the build line are fed hand-made changesets in test_changeset.py.)
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import copy_project

from deckbuild.apply import apply
from deckbuild.changeset import Changeset, NoteChange
from deckbuild.plan import plan
from deckbuild.plan_result import changeset
from deckbuild.release.diff import DeckNote, Published, changeset_of, diff, report

NAMES = ("Question", "Answer")
SCHEMA = (NAMES, ("Card 1",))


def _note(card_id: str, answer: str = "A.", *, tags: tuple[str, ...] = ("t",), deck: str = "") -> DeckNote:
    return DeckNote(card_id, f"Front {card_id}", (f"Q {card_id}?", answer), NAMES, tags, deck)


def _published(label: str, *notes: tuple[str, DeckNote], media: frozenset[str] = frozenset(), **types: object) -> Published:
    return Published(label, dict(notes), {"Basic": SCHEMA, **types}, media)  # type: ignore[dict-item]


OLD = _published(
    "old",
    ("g-a", _note("a")),
    ("g-b", _note("b")),
    ("g-d", _note("d")),
    ("g-e", _note("e")),
    ("g-f", _note("f")),
    ("g-gone", _note("gone")),
    media=frozenset({"y.png"}),
    Dropped=(("X",), ("Card 1",)),
)
NEW = _published(
    "new",
    ("g-a", _note("a")),
    ("g-b", _note("b", "Better.", tags=("t", "u"))),
    ("g-c", _note("c")),
    ("g-d", _note("d2")),
    ("g-e", _note("e", tags=("t", "retired"))),
    ("g-f", _note("f", deck="Sub")),
    media=frozenset({"x.png"}),
    Added=(("Y",), ("Card 1",)),
)

EXPECTED = """\
old -> new
notes: 1 added, 1 changed, 1 renamed, 1 moved, 1 retired, 1 removed, 1 unchanged
  + c — Front c
  ~ b — Front b (Answer, tags)
  > d -> d2 — Front d2 (renamed: same note, history kept)
  ↦ f — Front f (moved to Sub: a plain import leaves existing cards where they are; `deckbuild push` moves them)
  x e — Front e (retired)
  - gone — Front gone (no longer shipped; Anki keeps it)
note types: 2 changed
  + Added
  - Dropped
media: 1 added, 1 removed
  + x.png
  - y.png
"""


def test_the_diff_report_renders_a_hand_made_changeset() -> None:
    hand_made = Changeset(
        (
            NoteChange("b", "changed", ("Answer",), True),
            NoteChange("c", "added"),
            NoteChange("d2", "renamed", previous="d"),
            NoteChange("e", "retired", tags=True),
        ),
        leaving=("gone",),
        moved=(("f", "", "Sub"),),
        media_added=("x.png",),
        media_dropped=("y.png",),
        removed=("gone",),
        notetypes_added=("Added",),
        notetypes_dropped=("Dropped",),
    )
    assert report(hand_made, OLD, NEW) == EXPECTED
    # The report says what the changeset says, not what it would find itself: given nothing
    # changed, it lists nothing, though the two sides differ.
    assert report(Changeset(), OLD, NEW) == (
        "old -> new\nnotes: 0 added, 0 changed, 0 retired, 0 removed, 6 unchanged\nnote types: unchanged\nmedia: 0 added, 0 removed\n"
    )
    # And the changeset the two sides give is that hand-made one, so `diff` prints the same.
    assert changeset_of(OLD, NEW) == hand_made
    assert diff(OLD, NEW) == EXPECTED


def test_the_diff_of_a_deck_with_itself_is_an_empty_changeset() -> None:
    assert changeset_of(NEW, NEW).empty
    assert "notes: 0 added, 0 changed, 0 retired, 0 removed, 6 unchanged\nnote types: unchanged\n" in diff(NEW, NEW)


@pytest.fixture
def built(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The sample project (a card with a hand-made image among them), released once (so the
    baseline knows every note's old fields), then built."""
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")
    project = copy_project("sample", tmp_path)
    apply(plan(project, "release"))
    apply(plan(project, "build"))
    return project


def test_the_changeset_of_a_real_build_after_a_no_op_is_empty(built: Path) -> None:
    found = changeset(plan(built, "build"))
    assert found.empty and found.notes == () and found.media_added == found.media_replaced == found.media_dropped == ()


def test_the_changeset_of_a_one_card_edit_lists_that_note_and_its_image(built: Path) -> None:
    cards = built / "cards" / "basics.yaml"
    cards.write_text(cards.read_text().replace("Across the batch, per feature.", "Across the batch, for each feature."))
    found = changeset(plan(built, "build"))
    assert found.notes == (NoteChange("figure-card", "changed", ("Answer",), False, ("axes.png",)),)
    assert found.leaving == found.removed == found.moved == found.notetypes == ()
    assert found.media_added == found.media_replaced == found.media_dropped == ()


def test_the_changeset_of_an_image_edit_lists_that_note_and_its_image(built: Path) -> None:
    from test_push_media import png

    (built / "media" / "axes.png").write_bytes(png(24, 12, (200, 40, 40)))
    found = changeset(plan(built, "build"))
    # A released image whose bytes change ships under a new name (learners' Anki keeps a file
    # by its name): the note's Figure field names it, the new file comes, the old one goes.
    (renamed,) = found.media_added
    assert renamed.startswith("axes-") and renamed.endswith(".png")
    assert found.notes == (NoteChange("figure-card", "changed", ("Figure",), False, (renamed,)),)
    assert found.media_dropped == ("axes.png",) and found.media_replaced == ()
    assert found.leaving == found.removed == found.moved == found.notetypes == ()


# -- push: its report counts what a Changeset of the package against the collection says


def _push_plan(changes: Changeset) -> object:
    from deckbuild.collection.push import PushPlan

    return PushPlan(
        collection=Path("/learner/collection.anki2"),
        package=Path("deck.apkg"),
        namespace="deck",
        changeset=changes,
        updates=(),
        unchanged=3,
        conflicting=(),
        retired=(),
        moves=(),
        record={},
        previous_version="1.0.0",
    )


def test_the_push_report_renders_a_hand_made_changeset() -> None:
    from deckbuild.collection.push import report_of
    from deckbuild.collection.report import push_text

    hand_made = Changeset(
        notes=(NoteChange("n1", "added"), NoteChange("n2", "added"), NoteChange("c1", "changed", ("Answer",))),
        media_added=("fig.png",),
    )
    text = push_text(report_of(_push_plan(hand_made), "1.1.0", dry_run=True))  # type: ignore[arg-type]
    assert "would add 2, would update 0, unchanged 3" in text
    assert "media: would deliver 1 file(s) the collection lacked: fig.png" in text
    empty = push_text(report_of(_push_plan(Changeset()), "1.1.0", dry_run=True))  # type: ignore[arg-type]
    assert "would add 0," in empty and "media:" not in empty


def test_the_changeset_against_a_collection_lists_the_edited_note_and_the_missing_file() -> None:
    from deckbuild.apkg.read import ShippedNote
    from deckbuild.collection.against import against_collection

    def shipped(guid: str, answer: str) -> ShippedNote:
        return ShippedNote(guid, "Basic", {"CardId": guid.upper(), "Question": "Q?", "Answer": answer}, ("t",), 0)

    package = {"a": shipped("a", "A."), "b": shipped("b", "B, edited."), "c": shipped("c", "C.")}
    held = {"a": (["A", "Q?", "A."], ["t"]), "b": (["B", "Q?", "B."], ["t"])}  # the learner lacks c
    found = against_collection(package, held, media=["x.png", "y.png"], media_held=["x.png"])
    assert [(c.card_id, c.kind, c.fields) for c in found.notes] == [("B", "changed", ("Answer",)), ("C", "added", ())]
    assert found.media_added == ("y.png",)
    same = against_collection(
        package,
        {**held, "b": (["B", "Q?", "B, edited."], ["t"]), "c": (["C", "Q?", "C."], ["t"])},
        media=["x.png"],
        media_held=["x.png"],
    )
    assert same.empty


# -- status: its lists are what a Changeset of the shipped notes against the collection says


def test_the_status_lists_render_a_hand_made_changeset() -> None:
    from deckbuild.apkg.read import ShippedNote
    from deckbuild.collection.report import status_text
    from deckbuild.collection.status import StatusReport, from_changeset

    shipped = {
        g: ShippedNote(g, "", {"CardId": g.upper(), "Answer": f"{g}.", "My notes": ""}, ("t",), 0) for g in ("a", "b", "c")
    }
    current = {"A": {"CardId": "A", "Answer": "mine", "My notes": "x"}, "B": {"CardId": "B", "Answer": "b.", "My notes": "y"}}
    hand_made = Changeset(
        notes=(
            NoteChange("A", "changed", ("Answer", "My notes")),
            NoteChange("B", "changed", ("My notes",)),
            NoteChange("C", "added"),
        ),
        media_added=("gone.png",),
    )
    report = StatusReport("collection.anki2", "1.0.0")
    report.edited, report.missing, report.missing_media = from_changeset(hand_made, shipped, current)
    text = status_text(report)
    assert "edited 1, missing 1," in text and "media files missing 1" in text
    assert "edited: A: Answer\n    shipped: a.\n    now:     mine" in text  # My notes is the learner's own
    assert "missing: C" in text and "media missing: gone.png" in text
    assert from_changeset(Changeset(), shipped, current) == ([], [], [])  # reads the changeset, not the sides
