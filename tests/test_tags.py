"""One tag rule for every card: a tag ships if Anki stores it exactly as written."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from ankiutil import import_package, new_collection, notes_by_card_id
from conftest import write_tree

from deckbuild.limits import tag_problem

# Tags real decks carry (Ultimate Geography's `UG::Oceans+Seas`) and Anki keeps as they are.
KEPT = ["UG::Oceans+Seas", "x'y", "p%q&r", "Ü::ü", "a:b", "_t", "C++"]

DECK = """\
name: Tags
namespace: tags
version: 1.0.0
"""

DECLARED = {
    "notetypes/word/notetype.yaml": "name: Word\nfields: [Front, Back]\ntemplates:\n  - {name: Card 1, front: f.html, back: b.html}\n",
    "notetypes/word/f.html": "{{Front}}",
    "notetypes/word/b.html": "{{FrontSide}}<hr id=answer>{{Back}}",
}


def _project(root: Path, tags: list[str]) -> Path:
    listed = ", ".join(json.dumps(tag) for tag in tags)  # a JSON string is a YAML one
    return write_tree(
        root,
        {
            "deck.yaml": DECK,
            "cards/main.yaml": (
                "- id: builtin\n  question: Q?\n  answer: A.\n  difficulty: easy\n  topics: [a::b]\n"
                f"  tags: [{listed}]\n"
                "- id: declared\n  notetype: word\n  fields: {Front: F, Back: B}\n"
                f"  tags: [{listed}]\n"
            ),
            **DECLARED,
        },
    )


def _deckbuild(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "deckbuild.cli", *args], cwd=cwd, capture_output=True, text=True)


def test_tags_anki_stores_ship_on_every_card_as_written(tmp_path: Path) -> None:
    project = _project(tmp_path / "p", KEPT)
    assert _deckbuild("check", cwd=project).returncode == 0
    built = _deckbuild("build", cwd=project)
    assert built.returncode == 0, built.stderr
    col = new_collection(tmp_path / "anki")
    try:
        import_package(col, next((project / "dist").glob("*.apkg")))
        builtin = notes_by_card_id(col)["builtin"]
        (declared,) = (col.get_note(nid) for nid in col.find_notes("") if nid != builtin.id)
        assert set(KEPT) <= set(builtin.tags)
        assert sorted(declared.tags) == sorted(KEPT)
    finally:
        col.close()


# tag -> why Anki would not keep it as written (checked against the real backend below)
REFUSED = {
    "a b": "space",
    "tab\tx": "control character",
    'say"it': "'\"'",
    "a::": "empty part",
    "::a": "empty part",
    "a::::b": "empty part",
    "Cafe\u0301": "NFC",
}


@pytest.mark.parametrize("tag", sorted(REFUSED))
def test_check_refuses_a_tag_anki_would_change_naming_why(tmp_path: Path, tag: str) -> None:
    for card in ("builtin", "declared"):
        project = write_tree(
            tmp_path / card,
            {
                "deck.yaml": DECK,
                "cards/main.yaml": (
                    "- id: builtin\n  question: Q?\n  answer: A.\n  difficulty: easy\n  topics: [a::b]\n"
                    if card == "builtin"
                    else "- id: declared\n  notetype: word\n  fields: {Front: F, Back: B}\n"
                )
                + f"  tags: [{json.dumps(tag)}]\n",
                **DECLARED,
            },
        )
        result = _deckbuild("check", cwd=project)
        assert result.returncode == 1
        assert f"E107 card '{card}': tag {tag!r}: expected a tag Anki stores as written" in result.stderr
        assert REFUSED[tag] in result.stderr
        assert "Traceback" not in result.stderr


def test_the_rule_is_what_anki_does(tmp_path: Path) -> None:
    """Anki's importer keeps every tag the rule takes and changes every one it refuses."""
    import genanki

    model = genanki.Model(1607392319, "M", fields=[{"name": "F"}], templates=[{"name": "C", "qfmt": "{{F}}", "afmt": "{{F}}"}])
    deck = genanki.Deck(2059400110, "D")
    # Not tried: a space (genanki refuses it: Anki stores tags space-separated) and '"' (Anki's
    # tag normalizing removed it in earlier versions; this one keeps it, its searches do not).
    tags = [*KEPT, *(t for t in REFUSED if " " not in t and '"' not in t)]
    for index, tag in enumerate(tags):
        deck.add_note(genanki.Note(model=model, fields=[f"n{index}"], tags=[tag], guid=f"g{index}"))
    package = tmp_path / "tags.apkg"
    genanki.Package(deck).write_to_file(str(package), timestamp=1)
    col = new_collection(tmp_path / "anki")
    try:
        import_package(col, package)
        for index, tag in enumerate(tags):
            stored = col.get_note(col.find_notes(f"F:n{index}")[0]).tags
            assert (stored == [tag]) == (tag_problem(tag) is None), (tag, stored)
    finally:
        col.close()
