"""`deckbuild push` names every field both sides changed, on the real Anki backend (issue 25).

One small project is built once; its first release reaches four learners' collections (two by
push, two by a plain File → Import: no push record), of whom two also reviewed, marked,
suspended and flagged other cards.  Each collection holds all four kinds of note: with or
without `related:` links, with one or two fields changed on both sides.  One push per
collection, and every field both sides changed must be listed under `overwritten`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from ankiutil import answer_all, import_package, new_collection, notes_by_card_id
from conftest import write_tree

from deckbuild.apkg.read import read_package

REPO = Path(__file__).parent.parent
RELEASE_1 = "1700000000"
RELEASE_2 = str(int(time.time()) + 86400)  # after the learner studied and edited, as in life

CARDS = {
    name: {"question": f"What is {name}?", "answer": f"The answer of {name}.", "details": f"Details of {name}."}
    for name in ("linked-one", "linked-both", "plain-one", "plain-both", "other-a", "other-b", "other-c", "other-d")
}
RELATED = {"linked-one": ["other-a", "plain-one"], "linked-both": ["other-a"]}


def _cards_yaml(cards: dict[str, dict[str, str]]) -> str:
    out = []
    for card_id, card in cards.items():
        out.append(
            f"- id: {card_id}\n  question: {card['question']!r}\n  answer: {card['answer']!r}\n"
            f"  details: {card['details']!r}\n  difficulty: easy\n  topics: [merge::fields]\n"
        )
        if card_id in RELATED:
            out[-1] += f"  related: [{', '.join(RELATED[card_id])}]\n"
    return "\n".join(out)


def deckbuild(project: Path, *args: str, epoch: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "SOURCE_DATE_EPOCH": epoch}
    return subprocess.run(
        [sys.executable, "-m", "deckbuild.cli", *args, "-C", str(project)], capture_output=True, text=True, env=env, check=False
    )


def push_json(project: Path, collection: Path, *args: str, epoch: str) -> dict[str, Any]:
    done = deckbuild(project, "push", "--collection", str(collection), "--format", "json", *args, epoch=epoch)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def learner_text(card_id: str, field: str) -> str:
    # Long enough that the report's 80-character preview is a real cut.
    return f"<p>{field} as the learner rewrote it on {card_id}, with a mnemonic of their own that runs on and on.</p>"


LEARNER_EDITS = {  # card -> fields the learner changed in Anki
    "linked-one": ("Question", "Answer"),
    "plain-one": ("Question", "Answer"),
    "linked-both": ("Answer", "Details"),
    "plain-both": ("Answer", "Details"),
}
AUTHOR_EDITS = {  # card -> keys the author changed in the sources
    "linked-one": ("answer", "details"),
    "plain-one": ("answer", "details"),
    "linked-both": ("answer", "details"),
    "plain-both": ("answer", "details"),
    "other-a": ("question",),  # shows in linked-*'s Related field: the author's change alone
}
SAME_AS_AUTHOR: dict[str, str] = {}  # card -> the Question the learner typed: the author's new one, word for word
BOTH = {(c, f) for c, fields in LEARNER_EDITS.items() for f in fields if f.lower() in AUTHOR_EDITS.get(c, ())}
KEPT = {(c, f) for c, fields in LEARNER_EDITS.items() for f in fields} - BOTH


@pytest.fixture(scope="module")
def released(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The project at its first release, and a collection that got it by push and one by import."""
    root = tmp_path_factory.mktemp("merge")
    project = write_tree(
        root / "deck",
        {"deck.yaml": "name: Merge Deck\nnamespace: merge-deck\nversion: 1.0.0\n", "cards/c.yaml": _cards_yaml(CARDS)},
    )
    done = deckbuild(project, "release", epoch=RELEASE_1)
    assert done.returncode == 0, done.stderr
    pushed = root / "pushed" / "collection.anki2"
    new_collection(pushed.parent).close()
    first = push_json(project, pushed, epoch=RELEASE_1)
    assert first["new"] == len(CARDS)
    imported = root / "imported" / "collection.anki2"
    col = new_collection(imported.parent)
    try:
        import_package(col, next((project / "dist").glob("*.apkg")))
    finally:
        col.close()
    # The author's second release, in the sources (pushed, not yet released).
    cards = {k: dict(v) for k, v in CARDS.items()}
    for card_id, keys in AUTHOR_EDITS.items():
        for key in keys:
            cards[card_id][key] = cards[card_id][key] + " Extended by the author."
    (project / "cards" / "c.yaml").write_text(_cards_yaml(cards), encoding="utf-8")
    done = deckbuild(project, "build", epoch=RELEASE_2)
    assert done.returncode == 0, done.stderr
    (release_2,) = [n for n in read_package(next((project / "dist").glob("*.apkg"))).values() if n.card_id == "other-a"]
    SAME_AS_AUTHOR["other-a"] = release_2.fields["Question"]
    return {"project": project, "pushed": pushed, "imported": imported}


def _learner(base: Path, dest: Path, *, activity: bool) -> Path:
    """A copy of a learner's collection, edited in Anki as the matrix says."""
    shutil.copytree(base.parent, dest)
    path = dest / "collection.anki2"
    col = new_collection(dest)
    try:
        notes = notes_by_card_id(col)
        for card_id, fields in LEARNER_EDITS.items():
            note = notes[card_id]
            for name in fields:
                note[name] = learner_text(card_id, name)
            col.update_note(note)
        for card_id, text in SAME_AS_AUTHOR.items():
            notes[card_id]["Question"] = text
            col.update_note(notes[card_id])
        note = notes["linked-both"]
        note["My notes"] = "my own mnemonic"
        note.add_tag("mine")
        col.update_note(note)
        if activity:  # reviewed everything, marked, suspended and flagged other cards
            answer_all(col)
            notes["other-b"].add_tag("marked")
            col.update_note(notes["other-b"])
            col.sched.suspend_cards([notes["other-c"].card_ids()[0]])
            col.set_user_flag_for_cards(4, [notes["other-d"].card_ids()[0]])
    finally:
        col.close()
    return path


@pytest.mark.parametrize("activity", [False, True], ids=["no-activity", "reviewed-marked-suspended-flagged"])
@pytest.mark.parametrize("baseline", ["pushed", "imported"])
def test_every_field_both_sides_changed_is_overwritten_and_listed(
    released: dict[str, Path], tmp_path: Path, baseline: str, activity: bool
) -> None:
    path = _learner(released[baseline], tmp_path / "learner", activity=activity)

    dry = push_json(released["project"], path, "--dry-run", epoch=RELEASE_2)
    report = push_json(released["project"], path, epoch=RELEASE_2)

    listed = {(o["id"], o["field"]) for o in report["overwritten"]}
    assert listed == BOTH, (baseline, activity, report["overwritten"])
    assert all(o["certain"] for o in report["overwritten"])  # the release snapshot tells whose text it is
    for item in report["overwritten"]:
        whole = learner_text(item["id"], item["field"])
        assert item["learner_text"] == whole[:80] and item["length"] == len(whole) > 80
        assert item["whole_text_in"] == report["backup"] and Path(report["backup"]).is_file()
    assert {(k["id"], k["field"]) for k in report["kept"]} == KEPT
    # The four; other-a's one change is already in the collection (the learner typed it), so nothing is lost or written.
    assert (report["updated"], report["unchanged"], report["conflicting"], report["new"]) == (4, 4, 0, 0)
    assert {k: dry[k] for k in ("overwritten", "kept", "updated", "new")} == {
        k: report[k] for k in ("overwritten", "kept", "updated", "new")
    } | {"overwritten": [{**o, "whole_text_in": None} for o in report["overwritten"]]}

    col = new_collection(path.parent)
    try:
        notes = notes_by_card_id(col)
        for card_id, name in BOTH:
            assert notes[card_id][name].endswith("Extended by the author.</p>"), (card_id, name)
        for card_id, name in KEPT:
            assert notes[card_id][name] == learner_text(card_id, name)
        assert "Extended by the author." in notes["linked-one"]["Related"]  # other-a's question, the author's change
        assert notes["other-a"]["Question"] == SAME_AS_AUTHOR["other-a"]
        assert notes["linked-both"]["My notes"] == "my own mnemonic" and "mine" in notes["linked-both"].tags
        if activity:
            assert "marked" in notes["other-b"].tags
            assert col.get_card(notes["other-c"].card_ids()[0]).queue == -1
            assert col.get_card(notes["other-d"].card_ids()[0]).flags == 4
            assert all(col.get_card(c).reps == 1 for c in col.find_cards(""))
    finally:
        col.close()
