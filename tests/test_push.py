"""`deckbuild push` and `deckbuild status` on the real Anki backend, as real processes (issue 14)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path
from typing import Any

import pytest
from ankiutil import answer_all, history, import_package, new_collection, notes_by_card_id

from deckbuild.apkg.read import read_package

REPO = Path(__file__).parent.parent
PROFILE = "User 1"
# Release 2 is made after the learner studied and edited (now), as it would be in life.
RELEASE_2 = str(int(time.time()) + 86400)


def deckbuild(project: Path, *args: str, epoch: str = "1700000000") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "SOURCE_DATE_EPOCH": epoch}
    return subprocess.run(
        [sys.executable, "-m", "deckbuild.cli", *args, "-C", str(project)], capture_output=True, text=True, env=env, check=False
    )


def push_json(project: Path, *args: str, epoch: str = "1700000000") -> dict[str, Any]:
    done = deckbuild(project, "push", *args, "--format", "json", epoch=epoch)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


@pytest.fixture
def anki_base(tmp_path: Path) -> Path:
    """An Anki base folder with one empty profile, 'User 1', as Anki desktop lays it out."""
    base = tmp_path / "Anki2"
    new_collection(base / PROFILE).close()
    return base


def learner_uses_release_1(sample: Path, base: Path) -> Path:
    """Push release N, then study and edit as a learner would (in Anki or on the phone)."""
    first = push_json(sample, "--profile", PROFILE, "--base", str(base))
    assert (first["new"], first["updated"], first["conflicting"]) == (7, 0, 0)
    path = base / PROFILE / "collection.anki2"
    col = new_collection(path.parent)
    try:
        answer_all(col)
        notes = notes_by_card_id(col)
        notes["math-answer"].add_tag("marked")
        notes["figure-card"]["My notes"] = "my own mnemonic"
        notes["escaping"]["Answer"] = "<p>fixed on my phone</p>"
        for note in (notes["math-answer"], notes["figure-card"], notes["escaping"]):
            col.update_note(note)
        col.set_user_flag_for_cards(3, [notes["twin-question"].card_ids()[0]])
        col.sched.suspend_cards([notes["clipping-picture"].card_ids()[0]])
    finally:
        col.close()
    return path


def sources_release_2(sample: Path) -> None:
    """Two notes changed in the sources and one added."""
    cards = sample / "cards" / "basics.yaml"
    _edit(cards, "a probability for each class.", "one probability per class.")
    _edit(cards, "Across the batch, per feature.", "Over the batch, separately per feature.")
    with (sample / "cards" / "extra.yaml").open("a") as handle:
        handle.write("\n- id: brand-new\n  question: New?\n  answer: Yes.\n  difficulty: easy\n  topics: [foundations::text]\n")


def snapshot(path: Path) -> tuple[Any, dict[str, tuple[list[str], list[str]]], dict[str, tuple[int, int]]]:
    col = new_collection(path.parent)
    try:
        notes = {k: (list(n.values()), list(n.tags)) for k, n in notes_by_card_id(col).items()}
        cards = {k: (n.cards()[0].queue, n.cards()[0].flags) for k, n in notes_by_card_id(col).items()}
        return history(col), notes, cards
    finally:
        col.close()


def test_push_updates_changed_notes_and_keeps_the_learners(sample: Path, anki_base: Path, tmp_path: Path) -> None:
    path = learner_uses_release_1(sample, anki_base)
    before_history, before_notes, before_cards = snapshot(path)
    col = new_collection(path.parent)
    mod_before = col.mod
    col.close()
    plain = tmp_path / "plain" / "collection.anki2"  # the same learner, importing the .apkg instead
    plain.parent.mkdir()
    shutil.copyfile(path, plain)
    sources_release_2(sample)

    report = push_json(sample, "--collection", str(path), epoch=RELEASE_2)

    assert (report["new"], report["updated"], report["conflicting"], report["overwritten"]) == (1, 2, 0, [])
    assert report["unchanged"] == 5 and report["full_sync"] is False
    assert report["backup"] and Path(report["backup"]).is_file() and Path(report["backup"]).parent == path.parent / "backups"
    after_history, after_notes, after_cards = snapshot(path)
    assert {k: v for k, v in after_history.items() if k != "brand-new"} == before_history  # reviews, intervals, due
    assert after_cards == {**before_cards, "brand-new": (0, 0)}  # suspension and flags kept
    col = new_collection(path.parent)
    try:
        notes = notes_by_card_id(col)
        assert "one probability per class." in notes["math-answer"]["Answer"]
        assert "marked" in notes["math-answer"].tags and "difficulty::medium" in notes["math-answer"].tags
        assert notes["figure-card"]["Answer"] == "<p>Over the batch, separately per feature.</p>"
        assert notes["figure-card"]["My notes"] == "my own mnemonic"
        assert notes["escaping"]["Answer"] == "<p>fixed on my phone</p>"  # unchanged in the sources: the edit stays
        assert notes["brand-new"]["Question"] == "<p>New?</p>"
        assert [n.name for n in col.models.all_names_and_ids()].count("deckbuild-sample · Question") == 1
        assert not [n.name for n in col.models.all_names_and_ids() if n.name.endswith("+")]
        assert col.mod > mod_before  # an ordinary sync sends the changes
    finally:
        col.close()
    # A plain .apkg import with Anki's defaults takes both from the learner.
    col = new_collection(plain.parent)
    try:
        package = sample / "dist"
        apkg = next(package.glob("*.apkg"))
        import_package(col, apkg)
        notes = notes_by_card_id(col)
        assert "marked" not in notes["math-answer"].tags
        assert notes["figure-card"]["My notes"] == ""
    finally:
        col.close()
    assert before_notes["figure-card"] != after_notes["figure-card"]


def test_overwritten_note_is_listed_and_in_the_backup(sample: Path, anki_base: Path, tmp_path: Path) -> None:
    path = learner_uses_release_1(sample, anki_base)
    col = new_collection(path.parent)
    try:
        note = notes_by_card_id(col)["math-answer"]
        note["Answer"] = "<p>my own answer</p>"
        col.update_note(note)
    finally:
        col.close()
    sources_release_2(sample)
    dry = deckbuild(sample, "push", "--collection", str(path), "--dry-run", epoch=RELEASE_2)
    assert dry.returncode == 0, dry.stderr
    assert "would be overwritten: math-answer: Answer: your text '<p>my own answer</p>';" in dry.stdout
    assert f"its whole text would be in the backup made first, in {path.parent / 'backups'}" in dry.stdout
    assert "is in " not in dry.stdout and "backup: " not in dry.stdout

    report = push_json(sample, "--collection", str(path), epoch=RELEASE_2)

    assert [(o["id"], o["field"], o["learner_text"], o["certain"]) for o in report["overwritten"]] == [
        ("math-answer", "Answer", "<p>my own answer</p>", True)
    ]
    assert report["overwritten"][0]["whole_text_in"] == report["backup"]
    assert report["updated"] == 2
    col = new_collection(path.parent)
    try:
        assert "one probability per class." in notes_by_card_id(col)["math-answer"]["Answer"]
    finally:
        col.close()
    from anki._backend import RustBackend

    restored = tmp_path / "restored"
    restored.mkdir()
    RustBackend().import_collection_package(
        col_path=str(restored / "collection.anki2"),
        backup_path=report["backup"],
        media_folder=str(restored / "media"),
        media_db=str(restored / "media.db"),
    )
    col = new_collection(restored)
    try:
        assert notes_by_card_id(col)["math-answer"]["Answer"] == "<p>my own answer</p>"
    finally:
        col.close()


def test_dry_run_leaves_the_collection_byte_identical(sample: Path, anki_base: Path) -> None:
    path = learner_uses_release_1(sample, anki_base)
    sources_release_2(sample)
    files = sorted(path.parent.iterdir())
    before = path.read_bytes()

    dry = push_json(sample, "--collection", str(path), "--dry-run", epoch=RELEASE_2)

    assert path.read_bytes() == before and sorted(path.parent.iterdir()) == files
    assert dry["backup"] is None and dry["dry_run"] is True
    real = push_json(sample, "--collection", str(path), epoch=RELEASE_2)
    keys = ("new", "updated", "unchanged", "retired", "conflicting", "overwritten")
    assert {k: dry[k] for k in keys} == {k: real[k] for k in keys} and real["updated"] == 2


HOLD = """
import sys
from anki.collection import Collection
col = Collection(sys.argv[1])
print("open", flush=True)
sys.stdin.read()
col.close()
"""


def test_push_refuses_a_collection_open_elsewhere(sample: Path, anki_base: Path) -> None:
    path = learner_uses_release_1(sample, anki_base)
    sources_release_2(sample)
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "open\n"
        before = path.read_bytes()
        backups = sorted((path.parent / "backups").iterdir())
        done = deckbuild(sample, "push", "--collection", str(path), epoch=RELEASE_2)
        assert done.returncode == 1
        assert "E601" in done.stderr and "Anki is running" in done.stderr and "Traceback" not in done.stderr
        assert path.read_bytes() == before and sorted((path.parent / "backups").iterdir()) == backups
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait()
        assert holder.stdout is not None
        holder.stdout.close()


def test_push_refuses_a_file_that_is_not_a_collection(sample: Path, tmp_path: Path) -> None:
    bogus = tmp_path / "notes.anki2"
    bogus.write_text("not a database")
    done = deckbuild(sample, "push", "--collection", str(bogus))
    assert done.returncode == 1 and "E602" in done.stderr and bogus.read_text() == "not a database"
    done = deckbuild(sample, "push", "--profile", "Nobody", "--base", str(tmp_path))
    assert done.returncode == 1 and "E603" in done.stderr


def test_status_lists_edited_and_missing_notes(sample: Path, anki_base: Path, tmp_path: Path) -> None:
    path = learner_uses_release_1(sample, anki_base)
    col = new_collection(path.parent)
    try:
        col.remove_notes([notes_by_card_id(col)["dropout-fact"].id])
    finally:
        col.close()
    before = path.read_bytes()

    done = deckbuild(sample, "status", "--collection", str(path), "--format", "json")

    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert path.read_bytes() == before
    assert [(e["id"], e["fields"]) for e in report["edited"]] == [("escaping", ["Answer"])]
    assert report["edited"][0]["current"]["Answer"] == "<p>fixed on my phone</p>"
    assert report["missing"] == ["dropout-fact"] and report["suspended"] == 1 and report["personal_notes"] == 1
    # An exported .apkg of the learner's collection works too (compared with the sources).
    export = tmp_path / "export.apkg"
    col = new_collection(path.parent)
    try:
        from anki.collection import ExportAnkiPackageOptions

        col.export_anki_package(out_path=str(export), options=ExportAnkiPackageOptions(with_scheduling=True), limit=None)
    finally:
        col.close()
    done = deckbuild(sample, "status", "--collection", str(export), "--format", "json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert [(e["id"], e["fields"]) for e in report["edited"]] == [("escaping", ["Answer"])]
    assert report["missing"] == ["dropout-fact"]


def test_renamed_personal_field_reaches_1x_learners_in_place(sample: Path, tmp_path: Path, monkeypatch) -> None:
    """A 1.x package named the field Reserved1; the rename keeps its id, so Anki renames in place."""
    from deckbuild.commands import build

    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    current = build(sample).path
    old = tmp_path / "old.apkg"
    _as_release_1(current, old)
    col = new_collection(tmp_path / "anki")
    try:
        import_package(col, old)
        assert "Reserved1" in col.models.field_names(col.models.by_name("deckbuild-sample · Question"))
        types = len(col.models.all_names_and_ids())
        log = import_package(col, current, update_notetypes=1)  # Anki's default: "if newer"
        assert len(log.conflicting) == 0 and len(log.new) == 0
        assert len(col.models.all_names_and_ids()) == types  # no "sample · Question+"
        for name in ("deckbuild-sample · Question", "deckbuild-sample · Cloze"):
            fields = col.models.field_names(col.models.by_name(name))
            assert "My notes" in fields and "Reserved1" not in fields
        assert len(col.find_notes("")) == len(read_package(current))
    finally:
        col.close()


def _as_release_1(package: Path, out: Path) -> None:
    """The package as 1.x shipped it: the personal field still named Reserved1, note types older."""
    import sqlite3
    import tempfile

    with zipfile.ZipFile(package) as zf, tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "c.anki2"
        db.write_bytes(zf.read("collection.anki2"))
        conn = sqlite3.connect(db)
        models = json.loads(conn.execute("select models from col").fetchone()[0])
        for model in models.values():
            model["mod"] -= 1000
            for fld in model["flds"]:
                if fld["name"] == "My notes":
                    fld["name"] = "Reserved1"
        conn.execute("update col set models = ?", (json.dumps(models),))
        conn.commit()
        conn.close()
        with zipfile.ZipFile(out, "w") as zout:
            for item in zf.namelist():
                zout.writestr(item, db.read_bytes() if item == "collection.anki2" else zf.read(item))


def test_push_after_a_plain_import_keeps_the_learners_tags(sample: Path, tmp_path: Path) -> None:
    """No push record yet (release N came in as a plain .apkg): the notes' own mods tell what changed."""
    path = tmp_path / "anki" / "collection.anki2"
    col = new_collection(path.parent)
    try:
        done = deckbuild(sample, "build")
        assert done.returncode == 0, done.stderr
        import_package(col, next((sample / "dist").glob("*.apkg")))
        notes = notes_by_card_id(col)
        notes["math-answer"].add_tag("marked")
        col.update_note(notes["math-answer"])
    finally:
        col.close()
    sources_release_2(sample)

    report = push_json(sample, "--collection", str(path), epoch=RELEASE_2)

    assert (report["new"], report["updated"], report["conflicting"], report["previous_version"]) == (1, 2, 0, None)
    col = new_collection(path.parent)
    try:
        note = notes_by_card_id(col)["math-answer"]
        assert "marked" in note.tags and "one probability per class." in note["Answer"]
    finally:
        col.close()
    text = deckbuild(sample, "push", "--collection", str(path), "--dry-run", epoch=RELEASE_2)
    assert text.returncode == 0 and "would add 0, would update 0, unchanged 8" in text.stdout and "dry run" in text.stdout
