"""The sample deck, imported into the official Anki backend, shows exactly what we wrote."""

from __future__ import annotations

from pathlib import Path

from ankiutil import import_package, notes_by_card_id, visible_text

from deckbuild.commands import build


def test_import_counts_fields_tags_deck(sample: Path, collection) -> None:
    result = build(sample)
    assert result.path == sample / "dist" / "deckbuild-sample-1.0.0.apkg"
    log = import_package(collection, result.path)
    assert len(log.new) == result.notes
    notes = notes_by_card_id(collection)
    assert set(notes) >= {"escaping", "math-answer", "figure-card", "twin-question"}
    assert collection.card_count() == result.cards

    esc = notes["escaping"]
    assert esc.note_type()["name"] == "deckbuild-sample · Question"
    assert esc["Question"] == (
        "<p>Which characters must show literally, like <code>&lt;div&gt;</code>, a &lt; b &amp; c, "
        "and &#123;&#123;c1::not a cloze&#125;&#125;?</p>"
    )
    assert esc["Answer"] == (
        "<p>All of them: &lt;b&gt;not bold&lt;/b&gt;, 3 &lt; 4 &gt; 2, R&amp;D, and "
        "&#123;&#123;braces&#125;&#125; stay as typed.</p>"
    )
    assert "<em>emphasis</em>" in esc["Details"] and "<code>code</code>" in esc["Details"]
    assert esc["Difficulty"] == "easy"
    assert esc["Topics"] == "foundations › text"
    assert esc["Source"] == "sample-notes · question 1"
    assert esc["CardId"] == "escaping"
    assert sorted(esc.tags) == ["difficulty::easy", "sample::escaping", "source::sample-notes", "topic::foundations::text"]

    fig = notes["figure-card"]
    assert '<img class="diagram" src="axes.png"' in fig["Figure"]
    assert "flag::missing-code" in fig.tags and "code example" in fig["Notice"]
    twin = notes["twin-question"]
    assert "dup::figure-card" in twin.tags
    assert "Which way does a batch-norm axis run?" in twin["Related"]

    deck = collection.decks.by_name("deckbuild Sample")
    assert deck is not None
    assert "Version 1.0.0" in deck["desc"] and "<strong>every</strong>" in deck["desc"]
    assert {c.did for n in notes.values() for c in n.cards()} == {deck["id"]}


def test_rendered_cards_show_special_characters_literally(sample: Path, collection) -> None:
    import_package(collection, build(sample).path)
    card = notes_by_card_id(collection)["escaping"].cards()[0]
    front = visible_text(card.question())
    back = visible_text(card.answer())
    assert "like <div> , a < b & c, and {{c1::not a cloze}}?" in front
    assert "<b>not bold</b>, 3 < 4 > 2, R&D, and {{braces}} stay as typed." in back
    assert "[...]" not in front  # {{c1::}} in a question card is text, not a deletion


def test_media_is_imported(sample: Path, collection) -> None:
    import_package(collection, build(sample).path)
    media_dir = Path(collection.media.dir())
    assert (media_dir / "axes.png").read_bytes() == (sample / "media" / "axes.png").read_bytes()


def test_new_cards_are_studied_in_source_order(sample: Path, collection) -> None:
    import_package(collection, build(sample).path)
    notes = notes_by_card_id(collection)
    order = sorted(notes, key=lambda cid: notes[cid].cards()[0].due)
    # files sorted by name (basics, extra), cards in file order
    assert order[:4] == ["escaping", "math-answer", "figure-card", "twin-question"]


def test_diagram_and_cloze_cards_of_the_sample(sample: Path, collection) -> None:
    result = build(sample)
    import_package(collection, result.path)
    notes = notes_by_card_id(collection)
    figure = notes["clipping-picture"]["Figure"]
    src = figure.split('src="', 1)[1].split('"', 1)[0]
    assert src.startswith("grad-clipping-") and src.endswith(".png")
    assert (Path(collection.media.dir()) / src).is_file()
    formula = notes["softmax-formula"]
    assert formula.note_type()["name"] == "deckbuild-sample · Cloze"
    assert len(formula.cards()) == 2 and "kind::formula" in formula.tags
    assert "difficulty::medium" in formula.tags  # inherited from math-answer
    fact = notes["dropout-fact"]
    assert "kind::fact" in fact.tags and len(fact.cards()) == 2
    front = visible_text(fact.cards()[0].question())
    assert "[...]" in front and "0.1–0.5" not in front


def test_noop_rebuild_renders_nothing_and_skips_matplotlib(sample: Path) -> None:
    import subprocess
    import sys

    build(sample)
    script = (
        "import sys; from pathlib import Path; from deckbuild.commands import build; "
        f"r = build(Path({str(sample)!r})); "
        "print(r.written, 'matplotlib' in sys.modules, 'numpy' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False", "False"]
