"""An edited card file parsed only where it changed (incremental/splice.py) gives exactly what
parsing the whole file gives: its cards, where each of their keys is, their facts for the
deck-wide checks, the cache's encoding of them and the file's segments -- or it declines.

The property runs over card files of every value style (plain, quoted, block scalars that keep
or strip their trailing lines, folded) with random edits: text typed anywhere (YAML's steering
characters, document markers, directives, quotes left open), cards added, removed and repeated,
blank and comment lines.  CI runs 200 examples; HYPOTHESIS_PROFILE=long runs 10,000.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import assume, event, given
from hypothesis import strategies as st

from deckbuild import sources
from deckbuild.incremental.codec import KeyLocations, encode_card
from deckbuild.incremental.splice import Old, spans, splice
from deckbuild.sources import load_cards, load_text
from deckbuild.validate import card_facts

DISPLAY = "cards/topic.yaml"

ANSWERS = st.sampled_from(
    [
        "plain text, {n}",
        '"quoted: {n}"',
        '"a quoted answer\n    on two lines {n}"',
        "|\n    A block answer {n}.\n    - not a card: it is indented\n",
        "|+\n    Kept trailing lines {n}.\n\n",
        "|-\n    Stripped {n}.\n",
        ">\n    Folded {n}\n    text.\n",
        "'single {n}'",
        "\\( x^{{2}} \\) and {{{{c1::not a cloze}}}} {n}",
        "a bookkeeping code (F{n:02d}) left in, a warning with its place",
    ]
)
TAILS = st.sampled_from(["", "\n", "# a comment\n", "\n# a comment between cards\n\n"])
ENDINGS = st.sampled_from(["", "", "...\n", "# the end\n", "\n\n", "...\n# after the end\n"])
HEADERS = st.sampled_from(["", "# Topic\n", "\n# Topic\n\n", "---\n", "--- # Topic\n\n"])
TYPED = st.sampled_from(
    [
        "x",
        " ",
        "\n",
        "- ",
        "\n- ",
        "\n-",
        ": ",
        "#",
        '"',
        "'",
        "|",
        ">",
        "[",
        "]",
        "{",
        "}",
        ",",
        "&a ",
        "*a",
        "---\n",
        "...\n",
        "\n---\n",
        "\n...\n",
        "%YAML 1.1\n",
        "\n%TAG ! x\n",
        "\ufeff",
        "\t",
        "id: z\n",
        "\n- id: new\n  question: Q?\n  answer: A.\n",
        "  topics: [t]\n",
        "cards:\n",
        "\r",
        "\r\n",
        "\x85",
        "\u2028",
        "\u2029",
    ]
)


def _item(n: int, answer: str, tail: str, answer_last: bool = False) -> str:
    """A card; with `answer_last` its answer ends it (a block answer then takes the blank lines after it)."""
    keys = f"  difficulty: easy\n  topics: [t{n % 3}]\n  source: s#{n}\n"
    answered = f"  answer: {answer.format(n=n)}\n"
    return f"- id: c{n}\n  question: What is {n}?\n" + (keys + answered if answer_last else answered + keys) + tail


@st.composite
def card_files(draw: st.DrawFn) -> str:
    count = draw(st.integers(1, 6))
    items = [_item(n, draw(ANSWERS), draw(TAILS), draw(st.booleans())) for n in range(count)]
    return draw(HEADERS) + "".join(items) + draw(ENDINGS)


@st.composite
def edits(draw: st.DrawFn, text: str) -> str:
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["type", "type", "replace", "add", "remove", "repeat", "lines", "append"]))
        if kind == "append":  # below the last card
            text += draw(st.sampled_from([_item(200, draw(ANSWERS), "", draw(st.booleans())), draw(TYPED)]))
            continue
        starts = [i for i in range(len(text)) if text.startswith("- id:", i) and (i == 0 or text[i - 1] == "\n")]
        if kind in ("type", "replace", "lines") or not starts:
            at = draw(st.integers(0, len(text)))
            if kind == "replace":
                gone = draw(st.integers(0, 12))
                text = text[:at] + draw(TYPED) + text[at + gone :]
            else:
                text = (
                    text[:at] + (draw(st.sampled_from(["\n", "\n\n", "# c\n"])) if kind == "lines" else draw(TYPED)) + text[at:]
                )
            continue
        bounds = [*starts, len(text)]
        which = draw(st.integers(0, len(starts) - 1))
        item = text[bounds[which] : bounds[which + 1]]
        if kind == "add":
            new = _item(100 + which, draw(ANSWERS), draw(TAILS), draw(st.booleans()))
            text = text[: bounds[which]] + new + text[bounds[which] :]
        elif kind == "remove":
            text = text[: bounds[which]] + text[bounds[which + 1] :]
        else:
            text = text[: bounds[which + 1]] + item + text[bounds[which + 1] :]
    return text


def _old(text: str) -> Old | None:
    """What the cache keeps of a file's parse: its segments, its cards (their key locations as
    text, as decoded from the cache) and their facts."""
    cards, problems = load_text(text, DISPLAY)
    segments = spans(text, cards, problems)
    if segments is None:
        return None
    facts = [card_facts(card) for card in cards]
    for card in cards:
        object.__setattr__(card, "key_locations", KeyLocations.compact(card.key_locations))
    return Old(segments, cards, facts)


def _same_as_a_whole_parse(text: str, old: Old) -> bool:
    """Whether splice gave what a whole parse gives (False: it declined)."""
    spliced = splice(text, DISPLAY, old, load_text)
    if spliced is None:
        return False
    cards, problems = load_text(text, DISPLAY)
    assert problems == []
    assert spliced.cards == cards
    assert [dict(card.key_locations) for card in spliced.cards] == [dict(card.key_locations) for card in cards]
    assert [card.figure for card in spliced.cards] == [card.figure for card in cards]
    assert spliced.facts == [card_facts(card) for card in cards]
    assert [encode_card(card) for card in spliced.cards] == [encode_card(card) for card in cards]
    assert spans(text, spliced.cards, []) == spans(text, cards, [])
    assert spliced.kept + spliced.fresh + spliced.moved == len(cards)
    return True


@given(st.data())
def test_a_spliced_parse_is_the_whole_files_parse_or_none(data: st.DataObject) -> None:
    before = data.draw(card_files())
    old = _old(before)
    assume(old is not None)
    assert old is not None
    event("spliced" if _same_as_a_whole_parse(data.draw(edits(before)), old) else "parsed whole")


def _file(count: int) -> str:
    answers = ["plain text, {n}", "|+\n    Kept trailing lines {n}.\n\n", '"quoted: {n}"', ">\n    Folded {n}\n    text.\n"]
    answers[3] += "\n  details: A bookkeeping code (F{n:02d}) left in."  # a warning, placed in the file
    return "# Topic\n" + "".join(_item(n, answers[n % 4], "\n") for n in range(count))


def test_an_edit_inside_one_card_parses_that_card_alone_and_moves_the_ones_below() -> None:
    before = _file(12)
    old = _old(before)
    assert old is not None
    # One more line in card 5's answer: card 5 parsed again, 6-11 one line further down.
    after = before.replace(
        "  answer: |+\n    Kept trailing lines 5.", "  answer: |+\n    Kept trailing lines 5.\n    And one more."
    )
    assert _same_as_a_whole_parse(after, old)
    spliced = splice(after, DISPLAY, old, load_text)
    assert spliced is not None
    assert (spliced.kept, spliced.fresh, spliced.moved) == (5, 1, 6)
    assert spliced.cards[:5] == list(old.cards[:5])
    assert all(a is b for a, b in zip(spliced.cards[:5], old.cards[:5], strict=True))  # kept, not copied
    assert [c.location.line for c in spliced.cards[6:]] == [c.location.line + 1 for c in old.cards[6:]]
    assert old.facts is not None
    warned = [p.location.line for f in old.facts[6:] for p in f.problems]
    assert warned and [p.location.line for f in spliced.facts[6:] for p in f.problems] == [line + 1 for line in warned]
    # A card removed, a card added, the same line count: nothing moves.
    removed = before.replace(before[before.index("- id: c3\n") : before.index("- id: c4\n")], "")
    assert _same_as_a_whole_parse(removed, old)
    added = before.replace("- id: c9\n", _item(50, "plain text, {n}", "") + "- id: c9\n")
    assert _same_as_a_whole_parse(added, old)
    typo = before.replace("What is 7?", "What is seven?")
    assert _same_as_a_whole_parse(typo, old)


def test_what_could_read_on_across_a_card_is_parsed_whole() -> None:
    """Each of these edits leaves the chunk valid YAML on its own, where the whole file differs
    (or fails): splice must decline."""
    before = _file(6)
    old = _old(before)
    assert old is not None
    declined = {
        "a changed header": "# Topic, renamed\n" + before.removeprefix("# Topic\n"),
        # a document end: the cards below it would be a second document
        "a document end": before.replace("- id: c4\n", "...\n- id: c4\n", 1),
        "a document start": before.replace("- id: c4\n", "---\n- id: c4\n", 1),
        "a directive": before.replace("- id: c4\n", "%YAML 1.1\n- id: c4\n", 1),
        "an open quote": before.replace("plain text, 4", '"plain text, 4', 1),
        "a byte order mark": before.replace("What is 2?", "What\ufeff is 2?", 1),
        # a line break YAML counts that is no "\n": the cards below would move by one line more
        "a lone carriage return": before.replace("What is 2?", "What\ris 2?", 1),
        "a line separator": before.replace("What is 2?", "What\u2028is 2?", 1),
        # only blank lines between two cards: the card above keeps them if it ends in a |+ block
        "blank lines alone": before.replace("- id: c2\n", "\n\n- id: c2\n", 1),
        # a card's first line cut short: the cards after it no longer start lines of their own
        "a card run into the line above": before.replace("s#2\n\n- id: c3", "s#2 - id: c3", 1),
        "a card run into a comment": before.replace("s#2\n\n- id: c3", "s#2\n# note- id: c3", 1),
    }
    for what, after in declined.items():
        assert after != before, what
        assert splice(after, DISPLAY, old, load_text) is None, what
    # Why blank lines alone are parsed whole: a card ending in a |+ answer keeps them.
    kept_lines = _item(0, "|+\n    Kept {n}.\n", "", answer_last=True) + _item(1, "plain {n}", "")
    kept_old = _old(kept_lines)
    assert kept_old is not None
    widened = kept_lines.replace("- id: c1", "\n- id: c1")
    assert load_text(widened, DISPLAY)[0][0].answer != kept_old.cards[0].answer
    assert splice(widened, DISPLAY, kept_old, load_text) is None
    # Why the chunk must start a line: a file without a last line break, a card typed onto its end.
    unended = _file(3).rstrip("\n")
    unended_old = _old(unended)
    assert unended_old is not None
    run_on = unended + "- id: c9\n  question: Q?\n  answer: A.\n  difficulty: easy\n  topics: [t]\n"
    assert load_text(run_on, DISPLAY)[1] != []  # read as a whole: "s#2- id: c9" is no card
    assert splice(run_on, DISPLAY, unended_old, load_text) is None
    # ... and a file holding one is never cut (Windows line ends, "\r\n", are cut as usual).
    assert spans(before.replace("What is 2?", "What\ris 2?"), *load_text(before, DISPLAY)) is None
    crlf = before.replace("\n", "\r\n")
    assert spans(crlf, *load_text(crlf, DISPLAY)) is not None
    started = "---\n" + before  # a file that says where its document starts is cut as usual
    assert spans(started, *load_text(started, DISPLAY)) is not None
    # A file whose last card is followed by a document end is never cut: a card added below it
    # would be kept whole by a splice, where the whole file reads "..." as its end and fails.
    ended = before + "...\n"
    assert load_text(ended, DISPLAY)[1] == []
    assert load_text(ended + _item(9, "plain {n}", ""), DISPLAY)[1] != []
    assert spans(ended, *load_text(ended, DISPLAY)) is None
    # The mapping form ({deck:, cards:}) is never cut: its cards are not the file's top level.
    mapping = "deck: Verbs\ncards:\n" + before.removeprefix("# Topic\n")
    cards, problems = load_text(mapping, DISPLAY)
    assert len(cards) == 6 and problems == []
    assert spans(mapping, cards, problems) is None


def test_a_rebuild_after_an_edit_splices_and_gives_the_clean_builds_cards(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the cache, as a build reads it: the edited file is spliced (no whole parse), and
    every card and problem is what a build without a cache reads."""
    from deckbuild.incremental.cache import open_cache

    project = tmp_path / "deck"
    (project / "cards").mkdir(parents=True)
    (project / "deck.yaml").write_text("name: Splice\nnamespace: splice\n")
    (project / "cards" / "topic.yaml").write_text(_file(12))
    with open_cache(project, writable=True) as cache:
        load_cards(project, cache, prerender=True)
        cache.keep()
    path = project / "cards" / "topic.yaml"
    path.write_text(path.read_text().replace("What is 7?", "What is\n    seven?"))
    parsed: list[int] = []

    def counting(text: str, display: str) -> object:
        parsed.append(text.count("- id:"))
        return load_text(text, display)

    monkeypatch.setattr(sources, "load_text", counting)
    with open_cache(project, writable=True) as cache:
        cards, problems = load_cards(project, cache, prerender=True)
        cache.keep()
    monkeypatch.undo()
    assert parsed == [1]  # card 7 alone
    clean = tmp_path / "clean"
    shutil.copytree(project, clean, ignore=shutil.ignore_patterns(".deckbuild-cache"))
    expected, expected_problems = load_cards(clean)
    assert problems == expected_problems == []
    assert [c.location.path for c in cards] == [DISPLAY] * 12
    assert cards == expected
    assert [dict(c.key_locations) for c in cards] == [dict(c.key_locations) for c in expected]


def test_a_row_naming_another_files_parse_is_not_spliced(tmp_path: Path) -> None:
    """The cache names each path's last clean parse by its key (the parse's segments are kept
    under that key): a row that names another file's parse (copied by hand, or by a bug) must
    not put that file's cards into this one, and one naming an older parse of the same file
    splices into that one."""
    import sqlite3

    from deckbuild.incremental.cache import open_cache

    project = tmp_path / "deck"
    (project / "cards").mkdir(parents=True)
    (project / "deck.yaml").write_text("name: Splice\nnamespace: splice\n")
    (project / "cards" / "a.yaml").write_text(_file(4).replace("id: c", "id: a"))
    (project / "cards" / "b.yaml").write_text(_file(4).replace("id: c", "id: b"))
    with open_cache(project, writable=True) as cache:
        load_cards(project, cache, prerender=True)
        cache.keep()
    database = sqlite3.connect(project / ".deckbuild-cache" / "cache.sqlite")
    with database:
        (first_of_a,) = database.execute("SELECT value FROM splices WHERE key = ?", (b"cards/a.yaml",))
        (row,) = database.execute("SELECT value FROM splices WHERE key = ?", (b"cards/b.yaml",))
        database.execute("UPDATE splices SET value = ? WHERE key = ?", (row[0], b"cards/a.yaml"))
    database.close()
    # a's text as b's was, but for one card: b's segments match all of it but that card
    path = project / "cards" / "a.yaml"
    path.write_text((project / "cards" / "b.yaml").read_text().replace("What is 2?", "What is\n    two?"))
    with open_cache(project, writable=True) as cache:
        cards, problems = load_cards(project, cache, prerender=True)
        cache.keep()
    clean = tmp_path / "clean"
    shutil.copytree(project, clean, ignore=shutil.ignore_patterns(".deckbuild-cache"))
    expected, expected_problems = load_cards(clean)
    assert problems == expected_problems
    assert [c.location for c in cards] == [c.location for c in expected]
    assert cards == expected
    # a's row pointed back at its first parse, not the last: the splice is made against that one
    with sqlite3.connect(project / ".deckbuild-cache" / "cache.sqlite") as database:
        database.execute("UPDATE splices SET value = ? WHERE key = ?", (first_of_a[0], b"cards/a.yaml"))
    database.close()
    path.write_text(path.read_text().replace("What is 1?", "What is\n    one?"))
    with open_cache(project, writable=True) as cache:
        cards, problems = load_cards(project, cache, prerender=True)
        cache.keep()
    shutil.rmtree(clean)
    shutil.copytree(project, clean, ignore=shutil.ignore_patterns(".deckbuild-cache"))
    expected, expected_problems = load_cards(clean)
    assert problems == expected_problems
    assert [dict(c.key_locations) for c in cards] == [dict(c.key_locations) for c in expected]
    assert cards == expected
