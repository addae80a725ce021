"""Note types declared by a project (issue 16, acceptance 2), checked on the real Anki backend.

tests/projects/declared: a four-field note type with two templates, one conditional
(`{{#Reading}}`), a cloze type with extra fields, a type whose front is a negated section
(`{{^Audio}}`), cards in subdecks (per card and per file), a kept GUID, an HTML field.
"""

from __future__ import annotations

import itertools
import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
from ankiutil import import_package, new_collection
from conftest import copy_project
from hypothesis import given
from hypothesis import strategies as st

from deckbuild.apkg import template_language as tpl
from deckbuild.commands import build, check, release
from deckbuild.errors import DeckbuildError
from deckbuild.incremental.uptodate import inputs_fingerprint
from deckbuild.notetypes.fields import render_field
from deckbuild.notetypes.sanitize import sanitize_html


@pytest.fixture
def declared(tmp_path: Path) -> Path:
    return copy_project("declared", tmp_path)


def _notes(col: Any) -> dict[str, Any]:
    """The notes by their first field."""
    return {col.get_note(nid).fields[0]: col.get_note(nid) for nid in col.find_notes("")}


def _anki_ords(col: Any, notetype: dict[str, Any], fields: list[str]) -> list[int]:
    """The cards Anki itself generates for a note with these fields (added, then removed)."""
    note = col.new_note(notetype)
    for i, value in enumerate(fields):
        note.fields[i] = value
    col.add_note(note, col.decks.id("scratch"))
    ords = sorted(card.ord for card in note.cards())
    col.remove_notes([note.id])
    return ords


def test_declared_note_types_build_import_and_render(declared: Path, collection: Any) -> None:
    result = build(declared)
    log = import_package(collection, result.path)
    assert (len(log.new), len(log.updated), len(log.conflicting)) == (5, 0, 0)
    assert collection.card_count() == result.cards == 8
    notes = _notes(collection)

    # Fields as written: plain Markdown stays itself (no <p>), Markdown syntax renders, HTML is sanitized.
    taberu = notes["食べる"]
    assert taberu.note_type()["name"] == "Vocabulary"
    assert dict(taberu.items()) == {"Word": "食べる", "Reading": "たべる", "Meaning": "to eat", "Audio": "[sound:taberu.mp3]"}
    assert sorted(taberu.tags) == ["jlpt::n5", "動詞"]
    assert notes["飲む"]["Meaning"] == "<p>to <strong>drink</strong></p>"
    miru = notes["見る"]
    assert miru.guid == "f:V|x3#1q"
    assert miru["Meaning"] == '<b>to see</b> <img src="miru.png">'

    # Subdecks: per file (Verbs), per card (Verbs::Irregular, Geography), and the deck itself.
    def deck_of(first_field: str) -> set[str]:
        return {collection.decks.name(card.did) for card in notes[first_field].cards()}

    assert deck_of("食べる") == {"Japanese Verbs::Verbs"}
    assert deck_of("飲む") == {"Japanese Verbs::Verbs::Irregular"}
    assert deck_of("Paris is the capital of {{c1::France}}, on the {{c2::Seine}}.") == {"Japanese Verbs::Geography"}
    assert deck_of("静か") == {"Japanese Verbs"}

    # Every template renders in Anki, showing what it should.
    recognition, recall = taberu.cards()
    assert '<div class="word">食べる</div>' in recognition.question()
    assert '<div class="reading">たべる</div>' in recognition.answer() and "[anki:play:a:0]" in recognition.answer()
    assert '<div class="meaning">to eat</div>' in recall.question() and "たべる" in recall.question()
    assert '<div class="word">食べる</div>' in recall.answer()
    assert ".word { font-size: 40px; }" in recognition.question()
    cloze_cards = notes["Paris is the capital of {{c1::France}}, on the {{c2::Seine}}."].cards()
    assert [c.ord for c in cloze_cards] == [0, 1]
    assert 'data-cloze="France"' in cloze_cards[0].question() and "[...]" in cloze_cards[0].question()
    assert 'data-cloze="Seine"' in cloze_cards[1].question()
    assert "<em>10th</em>" in cloze_cards[0].answer() and "no source" in cloze_cards[0].answer()
    silent = notes["静か"].cards()
    assert len(silent) == 1 and "静か" in silent[0].question() and "(no recording)" in silent[0].answer()

    # Media the fields name were packed.
    media = Path(collection.media.dir())
    assert (media / "taberu.mp3").read_bytes() == (declared / "media" / "taberu.mp3").read_bytes()
    assert (media / "miru.png").is_file()

    # The cards each note got equal the cards Anki generates for the same fields.
    for note in notes.values():
        assert sorted(c.ord for c in note.cards()) == _anki_ords(collection, note.note_type(), list(note.fields))


def test_card_rule_equals_anki_for_every_empty_field_combination(declared: Path, collection: Any) -> None:
    """Conditional and negated templates: for each note type, every pattern of empty fields."""
    result = build(declared)
    import_package(collection, result.path)
    from deckbuild.plan import plan

    for key, notetype in plan(declared, "check").notetypes.items():
        if notetype.is_cloze or not notetype.declared:
            continue
        anki_type = collection.models.by_name(notetype.anki_name)
        fronts = [tpl.parse(front).nodes for _name, front, _back in notetype.templates]
        for pattern in itertools.product(("", "x", " <br><div></div>", "&nbsp;"), repeat=len(notetype.fields)):
            mine = tpl.card_ords(notetype.fields, pattern, fronts, is_cloze=False)
            if not mine:
                continue  # Anki refuses to add a note without cards; deckbuild refuses it too (E217)
            assert mine == _anki_ords(collection, anki_type, list(pattern)), (key, pattern)


def test_genanki_151_negated_front_is_refused_where_anki_makes_no_card(declared: Path) -> None:
    """`{{^Audio}}{{Word}}{{/Audio}}` with Audio given: genanki's req would add a card, Anki makes none."""
    cards = declared / "cards" / "clozes.yaml"
    cards.write_text(
        cards.read_text("utf-8")
        + "- id: loud-word\n  notetype: absent\n  fields:\n    Word: うるさい\n    Audio: '[sound:taberu.mp3]'\n",
        "utf-8",
    )
    problems = [p for p in check(declared) if p.severity == "error"]
    assert [(p.code, str(p.location)) for p in problems] == [("E217", "cards/clozes.yaml:14:5")]
    assert "fill a field its front shows (Word)" in problems[0].message


def _tree(root: Path) -> dict[str, bytes]:
    """The project's files (the parse cache, which a failed build may fill, left out)."""
    files = (p for p in sorted(root.rglob("*")) if p.is_file() and ".deckbuild-cache" not in p.parts)
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in files}


def test_template_naming_a_missing_field_fails_with_its_location(declared: Path) -> None:
    front = declared / "notetypes" / "vocab" / "recall-front.html"
    front.write_text("{{#Reading}}<div>{{Meaning}}</div>\n<div>{{hint:Readng}}</div>{{/Reading}}\n", "utf-8")
    before = _tree(declared)
    run = subprocess.run(
        [sys.executable, "-m", "deckbuild.cli", "build", "-C", str(declared)], capture_output=True, text=True, check=False
    )
    assert run.returncode == 1
    assert "notetypes/vocab/recall-front.html:2:6: E207 '{{hint:Readng}}' names no field of this note type" in run.stderr
    assert "Traceback" not in run.stderr
    assert _tree(declared) == before  # nothing written: no dist/, no deckbuild.lock
    assert not (declared / "dist").exists() and not (declared / "deckbuild.lock").exists()


def test_template_and_css_edits_update_the_note_type_in_place(declared: Path, tmp_path: Path) -> None:
    col = new_collection(tmp_path / "learner")
    try:
        import_package(col, build(declared).path)
        before = {m["name"]: m["id"] for m in col.models.all()}
        fingerprint = inputs_fingerprint(declared)
        folder = declared / "notetypes" / "vocab"
        (folder / "style.css").write_text(".card { color: #123456; }\n", "utf-8")
        (folder / "front.html").write_text('<div class="word big">{{Word}}</div>\n', "utf-8")
        assert inputs_fingerprint(declared) != fingerprint  # so `deckbuild build` is not "up to date"
        result = build(declared)
        assert result.changed_notes == 0
        log = import_package(col, result.path)
        assert (len(log.new), len(log.updated), len(log.conflicting)) == (0, 0, 0)
        after = {m["name"]: m["id"] for m in col.models.all()}
        assert after == before  # no "Vocabulary+": the same note type, updated
        vocab = col.models.by_name("Vocabulary")
        assert vocab["css"] == ".card { color: #123456; }\n"
        card = _notes(col)["食べる"].cards()[0]
        assert '<div class="word big">食べる</div>' in card.question()
    finally:
        col.close()


def test_a_field_added_after_a_release_is_refused(declared: Path) -> None:
    release(declared)
    spec = declared / "notetypes" / "vocab" / "notetype.yaml"
    spec.write_text(
        spec.read_text("utf-8").replace(
            "fields: [Word, Reading, Meaning, Audio]", "fields: [Word, Reading, Meaning, Audio, Notes]"
        ),
        "utf-8",
    )
    with pytest.raises(DeckbuildError) as refused:
        build(declared)
    (problem,) = refused.value.problems()
    assert problem.code == "E501" and problem.location.path == "notetypes/vocab/notetype.yaml"
    assert "note type 'vocab' changed its fields or templates since release 1.0.0" in problem.message
    with pytest.raises(DeckbuildError) as minor:
        release(declared, bump="minor")
    assert minor.value.problems()[0].code == "E501"
    assert release(declared, bump="major", allow_schema_change=True).version == "2.0.0"


def test_problems_in_declared_note_types_and_their_cards(declared: Path) -> None:
    (declared / "notetypes" / "qa").mkdir()
    (declared / "notetypes" / "vocab" / "back.html").write_text("{{FrontSide}}{{#Meaning}}{{Meaning}}\n", "utf-8")
    (declared / "cards" / "more.yaml").write_text(
        "\n".join(
            [
                "- id: no-type",
                "  notetype: grammar",
                "  fields: {Word: x}",
                "- id: bad-field",
                "  notetype: cloze-extra",
                "  fields: {Text: 'a {{c1::b}}', Extr: c}",
                "- id: cloze-elsewhere",
                "  notetype: cloze-extra",
                "  fields: {Text: 'no deletion', Extra: 'see {{c1::this}}'}",
                "- id: no-deletion",
                "  notetype: cloze-extra",
                "  fields: {Text: plain}",
                "- id: same-guid",
                "  notetype: cloze-extra",
                "  guid: 'f:V|x3#1q'",
                "  question: Why?",
                "  fields: {Text: '{{c1::x}}', Source: '<img src=\"gone.png\">'}",
                "",
            ]
        ),
        "utf-8",
    )
    found = [(p.code, str(p.location)) for p in check(declared) if p.severity == "error"]
    assert found == [
        ("E211", "cards/more.yaml:2:13"),
        ("E213", "cards/more.yaml:6:39"),
        ("E215", "cards/more.yaml:9:45"),
        ("E216", "cards/more.yaml:12:11"),
        ("E214", "cards/more.yaml:16:3"),
        ("E200", "notetypes/qa"),
        ("E206", "notetypes/vocab/back.html:1:14"),
    ]


def test_html_fields_are_sanitized_and_plain_fields_round_trip() -> None:
    assert sanitize_html('<b style="color: red">x</b> &amp; <br>') == ('<b style="color: red">x</b> &amp; <br>', [])
    safe, removed = sanitize_html(
        '<img src="a.png" onerror="x()"><script>alert(1)</script><a href="javascript:x()">l</a>'
        '<img src="https://example.com/t.png"><iframe src="x"></iframe><div style="background: url(http://x)">d</div>'
    )
    assert safe == '<img src="a.png"><a>l</a><img><div>d</div>'
    assert len(removed) == 6
    for plain in (
        "食べる",
        "to eat",
        "R&D < 3",
        "Paris {{c1::France}}",
        "東京は日本の首都です。",
        "a — b → c",
        "東京は{{c1::日本}}。",
    ):
        assert render_field(plain, False) == plain.replace("&", "&amp;").replace("<", "&lt;")
    assert render_field("to **eat**", False) == "<p>to <strong>eat</strong></p>"


def test_files_templates_name_ship_when_named_with_underscore(declared: Path) -> None:
    """Anki copies only what fields name: a template's own file must start with '_' (and is packed)."""
    (declared / "media" / "_kana-v1.woff2").write_bytes(b"wOF2 font")
    css = declared / "notetypes" / "vocab" / "style.css"
    css.write_text('@font-face { font-family: kana; src: url("_kana-v1.woff2"); }\n' + css.read_text("utf-8"), "utf-8")
    with zipfile.ZipFile(build(declared).path) as package:
        names = sorted(json.loads(package.read("media")).values())
    assert names == ["_kana-v1.woff2", "miru.png", "taberu.mp3"]


_PIECES = [
    "<script>", "</script>", "<img", " src=", "x.png", "http://e/x", "javascript:", "java&#x09;script:", " onerror=",
    "alert(1)", ">", "<", "\"", "'", "<!--", "-->", "--!>", "<style>", "<a", " href=", "<svg>", "<iframe", "</",
    "/", " ", "=", "&lt;", "<![CDATA[", "]]>", "<b>", "text", "<div", " style=", "url(", "<p/", "\x00",
]  # fmt: skip


@given(st.lists(st.sampled_from(_PIECES), max_size=14))
def test_sanitized_html_has_no_script_handlers_or_remote_loads(pieces: list[str]) -> None:
    """Whatever goes in, the output read by a parser holds no script, event handler, javascript: or remote load."""
    from html.parser import HTMLParser

    from deckbuild.notetypes.sanitize import DROPPED_TAGS, DROPPED_WITH_CONTENT, unsafe_attribute

    safe, _removed = sanitize_html("".join(pieces))
    found: list[str] = []

    class Reader(HTMLParser):
        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            if tag in DROPPED_WITH_CONTENT or tag in DROPPED_TAGS:
                found.append(tag)
            found.extend(why for name, value in attrs if (why := unsafe_attribute(tag, name, value)))

    reader = Reader(convert_charrefs=False)
    reader.feed(safe)
    reader.close()
    assert not found, (safe, found)
    assert sanitize_html(safe)[0] == safe  # sanitizing is idempotent: safe HTML comes out as it went in


def test_ankis_own_stock_note_types_load_clean_and_get_ankis_cards(tmp_path: Path, collection: Any) -> None:
    """Every stock note type of a new collection, written as notetypes/<key>/ (as adopt does), passes the checks."""
    from deckbuild.notetypes.load import load_notetypes

    for number, model in enumerate(collection.models.all()):
        folder = tmp_path / "project" / "notetypes" / f"stock{number}"
        folder.mkdir(parents=True)
        templates = []
        for index, template in enumerate(model["tmpls"]):
            (folder / f"front{index}.html").write_text(template["qfmt"], "utf-8")
            (folder / f"back{index}.html").write_text(template["afmt"], "utf-8")
            templates.append({"name": template["name"], "front": f"front{index}.html", "back": f"back{index}.html"})
        (folder / "style.css").write_text(model["css"], "utf-8")
        spec = {"name": model["name"], "cloze": model["type"] == 1, "fields": [f["name"] for f in model["flds"]]}
        spec |= {"templates": templates, "css": "style.css", "id": model["id"]}
        (folder / "notetype.yaml").write_text(json.dumps(spec, ensure_ascii=False), "utf-8")
    declared, problems = load_notetypes(tmp_path / "project")
    assert problems == []
    assert sorted(nt.anki_name for nt in declared.values()) == sorted(m["name"] for m in collection.models.all())
    for notetype in declared.values():
        if notetype.is_cloze:
            continue
        fronts = [tpl.parse(front).nodes for _name, front, _back in notetype.templates]
        anki_type = collection.models.get(notetype.given_id)
        for pattern in itertools.product(("", "x", "<br>"), repeat=len(notetype.fields)):
            mine = tpl.card_ords(notetype.fields, pattern, fronts, is_cloze=False)
            if mine:
                assert mine == _anki_ords(collection, anki_type, list(pattern)), (notetype.anki_name, pattern)


def test_a_released_note_type_cannot_leave_the_project(declared: Path) -> None:
    release(declared)
    shutil.rmtree(declared / "notetypes" / "absent")
    clozes = declared / "cards" / "clozes.yaml"
    clozes.write_text(clozes.read_text("utf-8").split("- id: silent-word")[0], "utf-8")
    with pytest.raises(DeckbuildError) as refused:
        build(declared)
    assert [(p.code, str(p.location)) for p in refused.value.problems()] == [("E224", "notetypes/absent")]


def test_a_card_keeps_the_guid_it_shipped_with(declared: Path) -> None:
    build(declared)
    verbs = declared / "cards" / "verbs.yaml"
    verbs.write_text(verbs.read_text("utf-8").replace('guid: "f:V|x3#1q"', 'guid: "f:V|x3#1z"'), "utf-8")
    found = [(p.code, str(p.location), p.message) for p in check(declared) if p.severity == "error"]
    assert found == [
        (
            "E225",
            "cards/verbs.yaml:19:11",
            "card 'miru' shipped as the note with GUID 'f:V|x3#1q' and would now be 'f:V|x3#1z': Anki would add a new "
            "note and leave the learner's note, and its history, behind; keep guid: 'f:V|x3#1q'",
        )
    ]


def test_built_in_cards_go_to_subdecks_per_file_and_per_card(sample: Path, collection: Any) -> None:
    formulas = sample / "cards" / "formulas.yaml"
    body = formulas.read_text("utf-8")
    formulas.write_text("deck: Math\ncards:\n" + "".join(f"  {line}\n" for line in body.splitlines()), "utf-8")
    extra = sample / "cards" / "extra.yaml"
    extra.write_text(
        extra.read_text("utf-8").replace("- id: twin-question\n", "- id: twin-question\n  deck: Math::Norms\n"), "utf-8"
    )
    import_package(collection, build(sample).path)
    decks = {}
    for nid in collection.find_notes(""):
        note = collection.get_note(nid)
        decks[note["CardId"]] = {collection.decks.name(card.did) for card in note.cards()}
    assert decks["softmax-formula"] == {"deckbuild Sample::Math"}
    assert decks["twin-question"] == {"deckbuild Sample::Math::Norms"}
    assert decks["escaping"] == {"deckbuild Sample"}


def test_problems_in_notetype_yaml_are_located(declared: Path) -> None:
    folder = declared / "notetypes" / "broken"
    folder.mkdir()
    (folder / "front.html").write_text("{{cloze:Text}}\n", "utf-8")
    (folder / "empty.html").write_text("<p>no field</p>\n", "utf-8")
    (folder / "notetype.yaml").write_text(
        "\n".join(
            [
                "name: Broken",
                "colour: red",
                "fields: [Text, 'Bad:Name', Text]",
                "templates:",
                "  - {name: One, front: front.html, back: ../vocab/back.html}",
                "  - {name: Two, front: empty.html, back: missing.html}",
                "  - {name: One, front: front.html, back: front.html}",
                "id: -4",
                "",
            ]
        ),
        "utf-8",
    )
    found = [(p.code, str(p.location)) for p in check(declared) if p.severity == "error"]
    assert found == [
        ("E209", "notetypes/broken/empty.html:1:1"),
        ("E208", "notetypes/broken/front.html:1:1"),
        ("E201", "notetypes/broken/notetype.yaml:2:1"),
        ("E205", "notetypes/broken/notetype.yaml:3:16"),
        ("E205", "notetypes/broken/notetype.yaml:3:28"),
        ("E204", "notetypes/broken/notetype.yaml:5:42"),
        ("E204", "notetypes/broken/notetype.yaml:6:42"),
        ("E205", "notetypes/broken/notetype.yaml:7:12"),
        ("E210", "notetypes/broken/notetype.yaml:8:5"),
    ]


@pytest.mark.parametrize(("written", "shown"), [("AT&T", "AT&T"), ("a &b", "a &b"), ("tom&jerry rule", "tom&jerry rule")])
def test_a_bare_ampersand_in_an_html_field_keeps_its_text(written: str, shown: str) -> None:
    """A hand-written {html:} field: Python's parser alone would drop the '&' ("AT&T" -> "ATT")."""
    import html

    safe, removed = sanitize_html(f"<b>{written}</b>")
    assert removed == []
    assert html.unescape(safe.removeprefix("<b>").removesuffix("</b>")) == shown
