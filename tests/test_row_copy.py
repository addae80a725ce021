"""A rebuild copies the unchanged notes' rows from the last package's collection (apkg/row_copy.py)
and still writes, byte for byte, the package a clean build of the same sources and record writes.

No timings here: benchmarks/run.py measures the speed.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import cached_card_ords

from deckbuild.apkg import row_copy
from deckbuild.commands import build
from deckbuild.incremental import last_package
from deckbuild.layout import CACHE_DIR

CARDS = 60  # in three files: runs long enough (MIN_RUN) on both sides of an edit
NOTES = CARDS + 9  # and three fact clozes in each file


@pytest.fixture(autouse=True)
def _fixed_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")  # an incremental and a clean build stamp alike


def _deck(root: Path) -> Path:
    (root / "cards").mkdir(parents=True)
    (root / "deck.yaml").write_text(
        "name: Copy Test\nnamespace: copy-test\nversion: 1.0.0\ndescription: Rows copied.\n", encoding="utf-8"
    )
    for f in range(3):
        cards = []
        for i in range(CARDS // 3):
            n = f * 100 + i
            cards.append(
                f"- id: card-{n}\n  question: What does step {n} do?\n  answer: It moves the weights by {n} units.\n"
                f"  difficulty: {('easy', 'medium', 'hard')[n % 3]}\n  topics: [topic-{f}]"
                + ("\n  deck: Extra" if n == 115 else "")
            )
            if i % 7 == 3:
                cards.append(
                    f"- id: fact-{n}\n  fact: 'Step {n} moves the weights by {{{{c1::{n} units}}}}.'\n"
                    f"  context: The step of case {n}\n  of: card-{n}"
                )
        (root / "cards" / f"part-{f}.yaml").write_text("\n\n".join(cards) + "\n", encoding="utf-8")
    return root


@pytest.fixture
def copies(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[int, int]]]:
    """The runs of notes each build copies, as (start, end)."""
    made: list[tuple[int, int]] = []
    real = row_copy.copy_notes

    def spy(cursor: object, run: row_copy.Run, next_id: int) -> int:
        made.append((run.start, run.end))
        return real(cursor, run, next_id)  # type: ignore[arg-type]

    monkeypatch.setattr(row_copy, "copy_notes", spy)
    yield made


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text("utf-8")
    assert old in text, old
    path.write_text(text.replace(old, new, 1), "utf-8")


def _delete_last(project: Path) -> None:
    path = project / "cards" / "part-2.yaml"
    text = path.read_text("utf-8")
    path.write_text(text[: text.index("- id: card-219")].rstrip("\n") + "\n", "utf-8")


def _insert_first(project: Path) -> None:
    path = project / "cards" / "part-0.yaml"
    path.write_text(
        "- id: card-new\n  question: A new first card?\n  answer: Yes.\n  difficulty: easy\n  topics: [topic-0]\n\n"
        + path.read_text("utf-8"),
        "utf-8",
    )


EDITS: dict[str, tuple[Callable[[Path], None], bool]] = {
    # edit -> (what it does, whether rows are copied at all)
    "answer in the middle": (lambda p: _edit(p / "cards/part-1.yaml", "by 105 units.", "by 105 units, roughly."), True),
    "fact cloze": (lambda p: _edit(p / "cards/part-1.yaml", "{{c1::110 units}}", "{{c1::110 whole units}}"), True),
    "tag (difficulty)": (lambda p: _edit(p / "cards/part-2.yaml", "difficulty: easy", "difficulty: hard"), True),
    "card deleted at the end": (_delete_last, True),
    "card moved to a subdeck": (
        lambda p: _edit(p / "cards/part-1.yaml", "- id: card-104\n", "- id: card-104\n  deck: Extra\n"),
        True,
    ),
    "card moved to a new subdeck (a deck id more)": (
        lambda p: _edit(p / "cards/part-1.yaml", "- id: card-104\n", "- id: card-104\n  deck: Other\n"),
        False,
    ),
    "card inserted first (every place moves)": (_insert_first, False),
    "record deleted, a later clock (every note stamped again)": (lambda p: (p / "deckbuild.lock").unlink(), False),
    "deck renamed (every deck id)": (lambda p: _edit(p / "deck.yaml", "name: Copy Test", "name: Copy Test Two"), False),
}


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_a_rebuild_copies_unchanged_rows_and_writes_a_clean_builds_bytes(
    tmp_path: Path, edit: str, copies: list[tuple[int, int]], monkeypatch: pytest.MonkeyPatch
) -> None:
    change, copied = EDITS[edit]
    project = _deck(tmp_path / "incremental")
    build(project)
    assert not copies  # a first build has nothing to copy from
    build(project, force=True)
    assert copies == [(0, NOTES)]  # an unchanged deck: every note, in one run
    copies.clear()
    clean = tmp_path / "clean"
    shutil.copytree(project, clean, ignore=shutil.ignore_patterns("dist", CACHE_DIR))
    if edit.startswith("record"):
        monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700009999")
    change(project)
    change(clean)
    incremental = build(project, allow_identity_change=True).path.read_bytes()
    assert bool(copies) == copied
    assert incremental == build(clean, allow_identity_change=True).path.read_bytes()
    assert (project / "deckbuild.lock").read_bytes() == (clean / "deckbuild.lock").read_bytes()
    assert cached_card_ords(project) == cached_card_ords(clean)  # the copied notes' cards stay known


def test_a_copied_rebuild_updates_only_the_edited_note_in_a_learners_collection(
    tmp_path: Path, copies: list[tuple[int, int]]
) -> None:
    """What a learner meets: Anki's importer takes the rebuild as an update of one note, keeps
    every card's review history, and shows the edit."""
    from ankiutil import answer_all, history, import_package, new_collection, notes_by_card_id

    project = _deck(tmp_path / "deck")
    col = new_collection(tmp_path / "anki")
    try:
        first = import_package(col, build(project).path)
        assert len(first.new) == NOTES
        answer_all(col)
        before, col_cards = history(col), col.card_count()
        _edit(project / "cards/part-1.yaml", "by 105 units.", "by 105 units, roughly.")
        package = build(project).path
        assert copies  # this rebuild copied rows
        log = import_package(col, package)
        assert (len(log.new), len(log.updated), len(log.conflicting), len(log.duplicate)) == (0, 1, 0, NOTES - 1)
        assert "by 105 units, roughly." in notes_by_card_id(col)["card-105"]["Answer"]
        assert history(col) == before  # every card's schedule and review log kept
    finally:
        col.close()
    # ... and a new learner gets every note with its cards from the copied rows.
    fresh = new_collection(tmp_path / "anki-new")
    try:
        assert len(import_package(fresh, package).new) == NOTES
        assert fresh.card_count() == col_cards and fresh.note_count() == NOTES
        card = fresh.get_card(fresh.find_cards("CardId:card-210")[0])
        assert "What does step 210 do?" in card.question()
    finally:
        fresh.close()


def test_an_edit_copies_the_runs_around_the_edited_note(tmp_path: Path, copies: list[tuple[int, int]]) -> None:
    project = _deck(tmp_path / "deck")
    build(project)
    _edit(project / "cards/part-1.yaml", "by 105 units.", "by 105 units, roughly.")
    build(project)
    edited = 20 + 3 + 6  # part-0's notes (20 cards, 3 facts), then card-105 is part-1's seventh note
    assert copies == [(0, edited), (edited + 1, NOTES)]


@pytest.mark.parametrize(
    "damage",
    [
        "collection bytes",  # its CRC-32 then differs from the index's
        "collection replaced by an older one",
        "index cut short",
        "index damaged",  # a key changed (its own CRC-32 then differs)
        "index of other code",
    ],
)
def test_a_damaged_or_mismatched_kept_collection_is_never_copied_from(
    tmp_path: Path, damage: str, copies: list[tuple[int, int]]
) -> None:
    project = _deck(tmp_path / "deck")
    folder = project / CACHE_DIR
    build(project)
    older = (folder / last_package.FILE).read_bytes()
    _edit(project / "cards/part-0.yaml", "by 1 units.", "by one unit.")
    build(project)
    _edit(project / "cards/part-1.yaml", "by 105 units.", "by 105 units, roughly.")
    collection, index = folder / last_package.FILE, folder / last_package.INDEX
    if damage == "collection bytes":
        data = bytearray(collection.read_bytes())
        data[len(data) // 2] ^= 0xFF
        collection.write_bytes(bytes(data))
    elif damage == "collection replaced by an older one":
        collection.write_bytes(older)
    elif damage == "index damaged":
        index.write_bytes(index.read_bytes()[:-1] + b"x")  # the last note's subdeck
    elif damage == "index cut short":
        data = index.read_bytes()
        index.write_bytes(data[: data.index(b"\n") + 20])
    else:
        index.write_bytes(index.read_bytes().replace(b'"code": "', b'"code": "other', 1))
    clean = tmp_path / "clean"
    shutil.copytree(project, clean, ignore=shutil.ignore_patterns("dist", CACHE_DIR))
    copies.clear()
    assert build(project).path.read_bytes() == build(clean).path.read_bytes()
    assert not copies
    # ... and that build's own collection is kept in their place, to copy from next time.
    _edit(project / "cards/part-2.yaml", "by 205 units.", "by 205 units, roughly.")
    build(project)
    assert copies


def test_a_build_that_fails_keeps_the_last_collection_and_leaves_nothing_beside_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from deckbuild.errors import DeckbuildError

    project = _deck(tmp_path / "deck")
    folder = project / CACHE_DIR
    package = build(project).path
    kept = {name: (folder / name).read_bytes() for name in (last_package.FILE, last_package.INDEX)}
    _edit(project / "cards/part-1.yaml", "by 105 units.", "by 105 units, roughly.")
    # It fails after its package is made (its collection moved aside): writing the package.
    monkeypatch.setenv("DECKBUILD_FAULT", f"fail-rename:{package.relative_to(project).as_posix()}")
    with pytest.raises(DeckbuildError):
        build(project)
    assert {name: (folder / name).read_bytes() for name in kept} == kept
    assert sorted(p.name for p in folder.iterdir() if p.name.startswith(("last-package", "package-"))) == sorted(kept)


def test_runs_copy_only_long_runs_of_equal_keys_under_the_same_layout() -> None:
    keys = [f"k{i}" for i in range(60)]
    last = row_copy.Collection(Path("x"), "layout", keys, [1000 + 3 * i for i in range(61)], 60, 0)
    short = row_copy.MIN_RUN - 1
    # note 20 edited, a short run of equal keys after it, note 21 + short edited, the rest
    # equal but for five notes gone from the end and two new ones after them
    changed = [*keys[:20], "edit", *keys[21 : 21 + short], "edit", *keys[22 + short : 55], "new", "new"]
    assert row_copy.runs(changed, len(changed) + 3, last, "layout") == [
        row_copy.Run(0, 20, 1000, 1060),
        row_copy.Run(20, 22 + short),
        row_copy.Run(22 + short, 55, 1000 + 3 * (22 + short), 1000 + 3 * 55),
        row_copy.Run(55, len(changed) + 3),  # the new notes, then three past the keys (retired ones)
    ]
    assert row_copy.runs(keys, 60, last, "other layout") == [row_copy.Run(0, 60)]
    assert row_copy.runs(keys, 60, None, "layout") == [row_copy.Run(0, 60)]
    assert row_copy.runs([], 0, last, "layout") == []


def test_gone_lists_the_last_packages_notes_no_run_copies() -> None:
    keys = [f"k{i}" for i in range(10)]
    last = row_copy.Collection(Path("x"), "layout", keys, list(range(11)), 8, 0)  # k8, k9: retired
    runs = [row_copy.Run(0, 3, 0, 3), row_copy.Run(3, 4), row_copy.Run(4, 7, 4, 7), row_copy.Run(7, 9)]
    assert row_copy.gone(runs, last) == ["k3", "k7", "k8", "k9"]
