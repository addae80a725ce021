"""`adopt --ids-from`: a CrowdAnki deck's existing learners get updates in place.

The learner's collection is made with the real Anki backend (test_adopt.make_collection),
its deck written out as a CrowdAnki folder is (deck.json without any Anki id, as Brain
Brew writes it), and exported with Anki's own exporter: the .apkg --ids-from reads.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any

import pytest
from test_adopt import IMAGE, _build, _edit, _scheduling, deckbuild, export, make_collection


def crowdanki_from(col: Any, deck_name: str, folder: Path) -> Path:
    """The deck as a CrowdAnki folder: note models by uuid (no ids), nested decks, notes by GUID, media."""
    models = {}
    for entry in col.models.all_names_and_ids():
        model = col.models.get(entry.id)
        models[str(model["id"])] = {
            "__type__": "NoteModel",
            "crowdanki_uuid": f"uuid-{len(models)}",
            "name": model["name"],
            "type": model["type"],
            "css": model["css"],
            "sortf": model["sortf"],
            "flds": [{"name": f["name"], "ord": f["ord"]} for f in model["flds"]],
            "tmpls": [{"name": t["name"], "qfmt": t["qfmt"], "afmt": t["afmt"], "ord": t["ord"]} for t in model["tmpls"]],
        }

    def deck(name: str) -> dict[str, Any]:
        did = col.decks.id_for_name(name)
        notes = []
        for nid in sorted({col.get_card(cid).nid for cid in col.find_cards(f'deck:"{name}" -deck:"{name}::*"')}):
            note = col.get_note(nid)
            notes.append(
                {
                    "__type__": "Note",
                    "guid": note.guid,
                    "note_model_uuid": models[str(note.mid)]["crowdanki_uuid"],
                    "fields": list(note.fields),
                    "tags": list(note.tags),
                }
            )
        children = [deck(child) for child, _id in sorted(col.decks.children(did))]
        return {
            "__type__": "Deck",
            "name": name.split("::")[-1],
            "desc": col.decks.get(did)["desc"],
            "notes": notes,
            "children": children,
        }

    data = deck(deck_name)
    used = {n["note_model_uuid"] for d in [data, *data["children"]] for n in d["notes"]}
    data["note_models"] = [m for m in models.values() if m["crowdanki_uuid"] in used]
    (folder / "media").mkdir(parents=True)
    (folder / "media" / "cat.png").write_bytes(IMAGE)
    (folder / "media" / "_vocab.woff").write_bytes(b"wOFF" + bytes(64))
    (folder / "deck.json").write_text(json.dumps(data))
    return folder


def _models(package: Path) -> list[str]:
    with zipfile.ZipFile(package) as archive, tempfile.TemporaryDirectory() as tmp:
        archive.extract("collection.anki2", tmp)
        db = sqlite3.connect(Path(tmp) / "collection.anki2")
        try:
            (models,) = db.execute("select models from col").fetchone()
        finally:
            db.close()
    return sorted(m["name"] for m in json.loads(models).values())


@pytest.fixture
def learner(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A learner's collection with the deck (four cards reviewed), its .apkg export, and the deck as CrowdAnki."""
    col = make_collection(tmp_path / "anki")
    try:
        package = export(col, tmp_path / "lang.apkg", legacy=False)
        folder = crowdanki_from(col, "Lang", tmp_path / "Lang")
    finally:
        col.close()
    return tmp_path / "anki" / "collection.anki2", package, folder


def _import(collection: Path, package: Path) -> tuple[Any, tuple[Any, ...], dict[int, list[str]]]:
    from anki.collection import Collection
    from ankiutil import import_package

    col = Collection(str(collection))
    try:
        log = import_package(col, package)
        return log, _scheduling(col), {nid: list(col.get_note(nid).fields) for nid in col.find_notes("")}
    finally:
        col.close()


def _past_the_notes_of(collection: Path) -> None:
    """Wait until the clock is past the second the collection's notes last changed.

    Anki takes a note from an import only if its mod is newer, in whole seconds; a CrowdAnki
    deck keeps no mods, so an edit is stamped with the build's time.  This test makes the
    learner's notes and the edit within a second or two: built in the same second, the edit
    is not newer (an author's edit and a learner's change a second apart happen only here)."""
    db = sqlite3.connect(f"file:{collection}?mode=ro", uri=True)
    try:
        (newest,) = db.execute("select max(mod) from notes").fetchone()
    finally:
        db.close()
    while time.time() < newest + 1:
        time.sleep(0.05)


@pytest.mark.parametrize("ids_from", ["package", "collection"])
def test_an_adopted_crowdanki_deck_updates_its_learners_in_place(
    tmp_path: Path, learner: tuple[Path, Path, Path], ids_from: str
) -> None:
    collection, package, folder = learner
    _log, before, fields_before = _import(collection, package)  # Anki's own export: nothing changes
    project = tmp_path / "project"
    source_of_ids = package if ids_from == "package" else collection
    unread = hashlib.sha256(collection.read_bytes()).hexdigest()
    result = deckbuild("adopt", str(folder), str(project), "--ids-from", str(source_of_ids))
    assert result.returncode == 0, result.stderr
    assert hashlib.sha256(collection.read_bytes()).hexdigest() == unread  # only read, never opened by Anki
    assert "E296" not in result.stderr and "E295" not in result.stderr
    built = _build(project)
    assert _models(built) == ["Basic", "Basic (and reversed card)", "Cloze", "Vocab"]  # only those its notes use
    log, after, fields_after = _import(collection, built)
    assert (len(log.new), len(log.updated), len(log.conflicting)) == (0, 0, 0)
    assert after == before and fields_after == fields_before

    _edit(project, "inu", "Meaning", "dog (the animal)")
    _past_the_notes_of(collection)
    log, after, fields_after = _import(collection, _build(project))
    assert (len(log.new), len(log.updated), len(log.conflicting)) == (0, 1, 0)
    changed = [nid for nid in fields_after if fields_after[nid] != fields_before[nid]]
    assert len(changed) == 1 and "dog (the animal)" in fields_after[changed[0]]
    assert after == before  # the cards, their scheduling and review history untouched

    from anki.collection import Collection

    col = Collection(str(collection))
    try:
        assert not any(m["name"].endswith("+") for m in col.models.all())  # no second note type
    finally:
        col.close()


def test_without_ids_from_adopt_says_learners_will_see_conflicts(tmp_path: Path, learner: tuple[Path, Path, Path]) -> None:
    collection, _package, folder = learner
    project = tmp_path / "project"
    result = deckbuild("adopt", str(folder), str(project))
    assert result.returncode == 0, result.stderr
    assert f"{folder}: E296 warning: a CrowdAnki folder does not say which note-type ids" in result.stderr
    assert "will see its notes as conflicting" in result.stderr and "--ids-from" in result.stderr
    _edit(project, "inu", "Meaning", "dog (the animal)")
    log, _after, _fields = _import(collection, _build(project))
    # What the warning says: the note types arrive with other ids, so Anki adds them anew and
    # every note it already has is conflicting, the edited one too.
    assert len(log.conflicting) == log.found_notes == 6 and not log.updated


def test_a_note_type_whose_schema_changed_is_refused(tmp_path: Path, learner: tuple[Path, Path, Path]) -> None:
    collection, package, folder = learner
    deck = json.loads((folder / "deck.json").read_text())
    vocab = next(m for m in deck["note_models"] if m["name"] == "Vocab")
    vocab["flds"][3]["name"] = "Notes"  # renamed since the learner's version
    for template in vocab["tmpls"]:
        template["afmt"] = template["afmt"].replace("{{Extra}}", "{{Notes}}").replace("{{#Extra}}", "{{#Notes}}")
        template["afmt"] = template["afmt"].replace("{{/Extra}}", "{{/Notes}}")
    (folder / "deck.json").write_text(json.dumps(deck))
    project = tmp_path / "project"
    result = deckbuild("adopt", str(folder), str(project), "--ids-from", str(package))
    assert result.returncode == 1 and not project.exists()
    assert (
        f"{package}: E293 note type 'Vocab': fields: expected ['Word', 'Reading', 'Meaning', 'Extra'] (as here), "
        "the source has ['Word', 'Reading', 'Meaning', 'Notes']"
    ) in result.stderr
    assert "Traceback" not in result.stderr


def test_ids_from_something_else_is_refused(tmp_path: Path, learner: tuple[Path, Path, Path]) -> None:
    _collection, _package, folder = learner
    other = tmp_path / "notes.txt"
    other.write_text("not a deck")
    for given, expected in (
        (other, "E292 --ids-from: expected an .apkg"),
        (tmp_path / "missing.apkg", "E292 --ids-from: no such file"),
    ):
        result = deckbuild("adopt", str(folder), str(tmp_path / "project"), "--ids-from", str(given))
        assert result.returncode == 1 and f"{given}: {expected}" in result.stderr
        assert not (tmp_path / "project").exists() and "Traceback" not in result.stderr


def test_notes_of_one_type_split_over_several_there_are_refused(tmp_path: Path, learner: tuple[Path, Path, Path]) -> None:
    _collection, package, folder = learner
    deck = json.loads((folder / "deck.json").read_text())
    basic = next(m["crowdanki_uuid"] for m in deck["note_models"] if m["name"] == "Basic")
    verbs = next(d for d in deck["children"] if d["name"] == "Verbs")
    taberu = next(n for n in verbs["notes"] if n["fields"][0] == "taberu")  # "Basic (and reversed card)" there
    taberu["note_model_uuid"] = basic
    (folder / "deck.json").write_text(json.dumps(deck))
    result = deckbuild("adopt", str(folder), str(tmp_path / "project"), "--ids-from", str(package))
    assert result.returncode == 1 and not (tmp_path / "project").exists()
    assert (
        f"{package}: E294 the notes of note type 'Basic' belong to 2 note types here ('Basic', 'Basic (and reversed card)')"
        in result.stderr
    ) or (
        f"{package}: E294 the notes of note type 'Basic' belong to 2 note types here ('Basic (and reversed card)', 'Basic')"
        in result.stderr
    )


def test_a_note_type_new_to_the_collection_keeps_its_own_ids(tmp_path: Path, learner: tuple[Path, Path, Path]) -> None:
    """A note type of the same name but another schema, none of whose notes is there: new notes, not a refusal."""
    collection, _package, folder = learner
    deck = json.loads((folder / "deck.json").read_text())
    deck["note_models"].append(
        {  # the collection has a stock note type of this name, with fields Front and Back
            "crowdanki_uuid": "uuid-new",
            "name": "Basic (type in the answer)",
            "type": 0,
            "css": "",
            "flds": [{"name": "Front"}, {"name": "Back"}, {"name": "Source"}],
            "tmpls": [{"name": "Card 1", "qfmt": "{{Front}}", "afmt": "{{Back}}<br>{{Source}}"}],
        }
    )
    deck["notes"].append({"guid": "brand-new", "note_model_uuid": "uuid-new", "fields": ["Q", "A", "S"], "tags": []})
    (folder / "deck.json").write_text(json.dumps(deck))
    result = deckbuild("adopt", str(folder), str(tmp_path / "project"), "--ids-from", str(collection))
    assert result.returncode == 0, result.stderr
    assert (
        f"{collection}: E295 warning: note type 'Basic (type in the answer)': none of its 1 notes and no note type "
        "of that name and those fields and templates is here"
    ) in result.stderr
