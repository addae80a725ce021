"""apkg/package.py: the rows Anki reads from a 2-card project's package, and the same bytes twice."""

from __future__ import annotations

import json
import sqlite3
import zipfile
from pathlib import Path

import pytest
from conftest import write_tree

from deckbuild.apkg import ids
from deckbuild.commands import build

NS = "package-test"
T = 1_700_000_000
FILES = {
    "deck.yaml": """
        name: Package Test
        namespace: package-test
        version: 1.0.0
        """,
    "cards/basics.yaml": """
        - id: two-plus-two
          question: What is 2 + 2?
          answer: Four.
          difficulty: easy
          topics: [arithmetic::addition]
          source: notes#q1

        - id: sum-rule
          formula: 'a + b = {{c1::b + a}}'
          context: Addition commutes.
          of: two-plus-two
        """,
}


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", str(T))
    root = write_tree(tmp_path / "deck", FILES)
    build(root)
    return root / "dist" / "package-test-1.0.0.apkg"


def _collection(package: Path, tmp_path: Path) -> sqlite3.Connection:
    with zipfile.ZipFile(package) as zf:
        assert zf.namelist() == ["collection.anki2", "media"]
        assert json.loads(zf.read("media")) == {}
        db = tmp_path / "collection.anki2"
        db.write_bytes(zf.read("collection.anki2"))
    return sqlite3.connect(db)


def test_notes_rows(package: Path, tmp_path: Path) -> None:
    rows = (
        _collection(package, tmp_path)
        .execute("SELECT id, guid, mid, mod, usn, tags, flds, sfld FROM notes ORDER BY id")
        .fetchall()
    )
    qa_fields = [
        "<p>What is 2 + 2?</p>",
        "<p>Four.</p>",
        "",
        "",
        "easy",
        "arithmetic › addition",
        "notes · question 1",
        "",
        "",
        "two-plus-two",
        "",
        "",
    ]
    formula = "\\[ a + b = {{c1::\\class{db-c1}{b + a} }} \\]"
    from_question = '<div class="db-related-label">From the question</div><ul class="db-related"><li>What is 2 + 2?</li></ul>'
    cloze_fields = [
        formula,
        "<p>Addition commutes.</p>",
        "",
        "",
        "easy",
        "arithmetic › addition",
        "notes · question 1",
        from_question,
        "",
        "sum-rule",
        "",
        "",
    ]
    assert rows == [
        (
            T * 1000,
            "0e92f76a67de1e3346f9",
            ids.notetype_id(NS, "qa"),
            T,
            -1,
            " difficulty::easy source::notes topic::arithmetic::addition ",
            "\x1f".join(qa_fields),
            "<p>What is 2 + 2?</p>",
        ),
        (
            T * 1000 + 2,
            ids.note_guid(NS, "sum-rule"),
            ids.notetype_id(NS, "cloze"),
            T,
            -1,
            " difficulty::easy kind::formula source::notes topic::arithmetic::addition ",
            "\x1f".join(cloze_fields),
            formula,
        ),
    ]


def test_cards_rows(package: Path, tmp_path: Path) -> None:
    rows = (
        _collection(package, tmp_path)
        .execute("SELECT id, nid, did, ord, mod, usn, type, queue, due FROM cards ORDER BY id")
        .fetchall()
    )
    deck = ids.deck_id(NS, "Package Test")
    # Each note's cards follow it in the id sequence; `due` is the study order (source order).
    assert rows == [(T * 1000 + 1, T * 1000, deck, 0, T, -1, 0, 0, 0), (T * 1000 + 3, T * 1000 + 2, deck, 0, T, -1, 0, 0, 1)]


def test_rows_are_the_ones_genanki_writes(package: Path, tmp_path: Path) -> None:
    """The rows written in bulk (apkg/package.py: the varying values bound, the constant ones
    in the statements) are the rows genanki's own Note.write_to_db writes for the same note:
    every column, value for value and storage type for type."""
    import itertools

    import genanki

    ours = _collection(package, tmp_path)
    note_id, guid, mid, mod, tags, flds = ours.execute(
        "SELECT id, guid, mid, mod, tags, flds FROM notes WHERE guid = ?", (ids.note_guid(NS, "two-plus-two"),)
    ).fetchone()
    deck_id, due = ours.execute("SELECT did, due FROM cards WHERE nid = ?", (note_id,)).fetchone()
    theirs = sqlite3.connect(":memory:")
    for (sql,) in ours.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name IN ('notes', 'cards')"):
        theirs.execute(sql)
    fields = flds.split("\x1f")
    model = genanki.Model(
        mid,
        "QA",
        fields=[{"name": f"F{i}"} for i in range(len(fields))],
        templates=[{"name": "Card 1", "qfmt": "{{F0}}", "afmt": "{{F1}}"}],
    )
    note = genanki.Note(model=model, fields=fields, tags=tags.split(), guid=guid, due=due)
    note.write_to_db(theirs.cursor(), mod, deck_id, itertools.count(note_id))

    def rows(conn: sqlite3.Connection, table: str, column: str) -> list[tuple[object, ...]]:
        names = [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]
        values = ", ".join(f"{name}, typeof({name})" for name in names)
        return conn.execute(f"SELECT {values} FROM {table} WHERE {column} = ? ORDER BY id", (note_id,)).fetchall()

    assert rows(ours, "notes", "id") == rows(theirs, "notes", "id")
    assert rows(ours, "cards", "nid") == rows(theirs, "cards", "nid")
    assert len(rows(ours, "cards", "nid")) == 1


def test_deck_and_note_types(package: Path, tmp_path: Path) -> None:
    models_json, decks_json = _collection(package, tmp_path).execute("SELECT models, decks FROM col").fetchone()
    models = json.loads(models_json)
    assert sorted(models) == sorted(str(ids.notetype_id(NS, key)) for key in ("qa", "cloze"))
    qa = models[str(ids.notetype_id(NS, "qa"))]
    assert qa["name"] == "package-test · Question" and qa["mod"] == T and qa["type"] == 0
    assert [f["name"] for f in qa["flds"]][:2] == ["Question", "Answer"]
    assert [f["id"] for f in qa["flds"]][:1] == [ids.field_id(NS, "qa", "Question")]
    assert models[str(ids.notetype_id(NS, "cloze"))]["type"] == 1
    assert {k: v["name"] for k, v in json.loads(decks_json).items()} == {
        "1": "Default",
        str(ids.deck_id(NS, "Package Test")): "Package Test",
    }


def test_same_sources_same_bytes(package: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = package.read_bytes()
    build(package.parent.parent)  # a forced rebuild over its own record
    assert package.read_bytes() == first
    monkeypatch.setenv("SOURCE_DATE_EPOCH", str(T + 86_400))  # another day, a fresh copy, no record
    again = write_tree(tmp_path / "again", FILES)
    (again / "deckbuild.lock").write_bytes((package.parent.parent / "deckbuild.lock").read_bytes())
    build(again)
    assert (again / "dist" / package.name).read_bytes() == first


def test_zip_entries_carry_no_build_time(package: Path) -> None:
    with zipfile.ZipFile(package) as zf:
        assert {(i.date_time, i.external_attr >> 16, i.create_system) for i in zf.infolist()} == {
            ((1980, 1, 1, 0, 0, 0), 0o644, 3)
        }


def test_the_collection_is_sound_and_has_every_index_of_ankis_schema(package: Path, tmp_path: Path) -> None:
    """The notes' and cards' indexes are made after their rows: the same indexes, the same statements."""
    from genanki.apkg_schema import APKG_SCHEMA

    conn = _collection(package, tmp_path)
    assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    made = {sql.rstrip(";") for (sql,) in conn.execute("SELECT sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL")}
    declared = {line.strip().rstrip(";") for line in APKG_SCHEMA.splitlines() if line.strip().upper().startswith("CREATE INDEX")}
    assert made == declared and len(declared) == 7
    # Anki finds a note's cards through ix_cards_nid: the index answers as the table does.
    plan = " ".join(str(row) for row in conn.execute("EXPLAIN QUERY PLAN SELECT id FROM cards WHERE nid = 1"))
    assert "ix_cards_nid" in plan
    assert conn.execute("SELECT count(*) FROM cards INDEXED BY ix_cards_nid WHERE nid > 0").fetchone()[0] == 2
