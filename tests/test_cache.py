"""Caches and the up-to-date check never change what a build produces (issue 9).

No timings here: speed is measured by benchmarks/run.py, outside the test suite.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from conftest import REPO, cached_card_ords, copy_project

from deckbuild.cli import main
from deckbuild.commands import build, check
from deckbuild.incremental.uptodate import up_to_date
from deckbuild.layout import CACHE_DIR


@pytest.fixture(autouse=True)
def _fixed_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")


def _fields(apkg: Path) -> dict[str, list[str]]:
    """CardId -> fields of every note in a package."""
    import sqlite3
    import tempfile

    with zipfile.ZipFile(apkg) as zf, tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "c.anki2"
        db.write_bytes(zf.read("collection.anki2"))
        conn = sqlite3.connect(db)
        rows = [flds.split("\x1f") for (flds,) in conn.execute("SELECT flds FROM notes")]
        conn.close()
    return {fields[9]: fields for fields in rows}


def test_cached_build_equals_uncached_build(tmp_path: Path) -> None:
    cold = copy_project("sample", tmp_path / "cold")
    first = build(cold).path.read_bytes()
    assert (cold / CACHE_DIR / "cache.sqlite").is_file()
    # Same project, caches warm, output gone: every parse and rendering comes from the cache.
    warm = tmp_path / "warm" / "sample"
    shutil.copytree(cold, warm, ignore=shutil.ignore_patterns("dist"))
    assert build(warm).path.read_bytes() == first
    # And a third copy with the record but no cache at all.
    bare = tmp_path / "bare" / "sample"
    shutil.copytree(cold, bare, ignore=shutil.ignore_patterns("dist", CACHE_DIR))
    assert build(bare).path.read_bytes() == first


def test_editing_a_card_file_invalidates_the_cache(sample: Path) -> None:
    out = build(sample).path
    assert up_to_date(sample) is not None
    cards = sample / "cards" / "basics.yaml"
    cards.write_text(
        cards.read_text("utf-8").replace("Across the batch, per feature.", "Per feature, across the batch."), "utf-8"
    )
    assert up_to_date(sample) is None
    result = build(sample)
    assert result.changed_notes == 1
    assert "Per feature, across the batch." in _fields(out)["figure-card"][1]
    # The rebuilt package equals one built from scratch from the edited sources.
    fresh = sample.parent / "fresh"
    shutil.copytree(sample, fresh, ignore=shutil.ignore_patterns("dist", CACHE_DIR))
    assert build(fresh).path.read_bytes() == out.read_bytes()


def test_no_op_build_says_up_to_date_and_rebuilds_when_outputs_change(sample: Path) -> None:
    runner = CliRunner()
    first = runner.invoke(main, ["build", "-C", str(sample)])
    assert first.exit_code == 0, first.output
    again = runner.invoke(main, ["build", "-C", str(sample)])
    assert again.exit_code == 0 and again.stdout.startswith("up to date:"), again.output
    apkg = next((sample / "dist").glob("*.apkg"))
    before = {path: path.stat().st_mtime_ns for path in (apkg, sample / "deckbuild.lock")}
    # Forced on unchanged sources: it builds, and says so, though every byte is what it was.
    forced = runner.invoke(main, ["build", "--force", "-C", str(sample)])
    assert forced.exit_code == 0 and forced.stdout.startswith("built, unchanged: "), forced.output
    assert "(0 notes changed since the last build)" in forced.stdout
    assert {path: path.stat().st_mtime_ns for path in before} == before
    # So does a build whose edit changes no output (a comment).
    card_file = next((sample / "cards").glob("*.yaml"))
    card_file.write_text("# a comment\n" + card_file.read_text("utf-8"), "utf-8")
    commented = runner.invoke(main, ["build", "-C", str(sample)])
    assert commented.exit_code == 0 and commented.stdout.startswith("built, unchanged: "), commented.output
    data = apkg.read_bytes()
    apkg.unlink()  # a deleted output is rebuilt
    assert up_to_date(sample) is None
    assert runner.invoke(main, ["build", "-C", str(sample)]).stdout.startswith("wrote")
    assert apkg.read_bytes() == data
    lock = sample / "deckbuild.lock"
    lock.write_text(lock.read_text("utf-8").replace('"mod": ', '"mod": 1'), "utf-8")  # a changed record too
    assert up_to_date(sample) is None
    forced = runner.invoke(main, ["build", "--force", "-C", str(sample)])
    assert forced.exit_code == 0 and not forced.stdout.startswith("up to date"), forced.output


def _build_in_a_fresh_process(sample: Path, modules: tuple[str, ...]) -> str:
    """`deckbuild build` in a new process: what it printed, then a line listing which of `modules` it imported."""
    probe = (
        "import sys\n"
        "from deckbuild.cli import main\n"
        f"try:\n    main(['build', '-C', {str(sample)!r}])\nexcept SystemExit:\n    pass\n"
        f"print(sorted(m for m in {modules!r} if m in sys.modules))\n"
    )
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO, check=True)
    return proc.stdout


def test_no_op_build_imports_no_heavy_module(sample: Path) -> None:
    build(sample)
    out = _build_in_a_fresh_process(sample, ("yaml", "markdown", "genanki", "sqlite3"))
    assert out.startswith("up to date:"), out
    assert out.strip().endswith("[]"), out


def _edit_build_in_a_fresh_process(sample: Path, answer: str) -> tuple[bool, str, str]:
    """Set the `math-answer` card's answer, build in a new process: was Python-Markdown
    loaded, the answer field the package holds, and its deck's description."""
    cards = sample / "cards" / "basics.yaml"
    text = cards.read_text("utf-8")
    start = text.index("- id: math-answer")
    at = text.index("  answer: |\n", start) + len("  answer: |\n")
    end = text.index("  difficulty:", at)
    cards.write_text(text[:at] + "".join(f"    {line}\n" for line in answer.splitlines()) + text[end:], "utf-8")
    out = _build_in_a_fresh_process(sample, ("markdown",))
    assert out.startswith("wrote"), out
    with zipfile.ZipFile(next((sample / "dist").glob("*.apkg"))) as package:
        extracted = package.extract("collection.anki2", sample / "unpacked")
    import sqlite3

    conn = sqlite3.connect(extracted)
    try:
        fields = [row[0] for row in conn.execute("SELECT flds FROM notes")]
        (decks,) = conn.execute("SELECT decks FROM col").fetchone()
    finally:
        conn.close()
    shown = [f.split("\x1f")[1] for f in fields if f.startswith("<p>What does softmax compute?</p>\x1f")]
    assert len(shown) == 1, fields
    (description,) = [deck["desc"] for deck in json.loads(decks).values() if deck["name"] == "deckbuild Sample"]
    return out.strip().endswith("['markdown']"), shown[0], description


def test_an_edit_loads_python_markdown_only_for_a_text_that_needs_it(sample: Path) -> None:
    """Most texts take render.py's fast paths, and a rebuild whose edited texts all do never
    imports Python-Markdown (a tenth of a small deck's rebuild); a text that needs it is
    rendered by it in the same kind of process.  The deck's description, which needs it
    here, is rendered once and kept with the cards' renderings."""
    config = sample / "deck.yaml"
    text = config.read_text("utf-8")
    config.write_text(text.replace("  A small deck that", "  1. A small deck that"), "utf-8")
    build(sample)
    described = "<ol>\n<li>A small deck that exercises <strong>every</strong> feature of the source format.</li>\n</ol>"
    loaded, shown, description = _edit_build_in_a_fresh_process(
        sample, "- It gives **each** class a probability.\n- They sum to 1."
    )
    assert not loaded
    assert shown == "<ul>\n<li>It gives <strong>each</strong> class a probability.</li>\n<li>They sum to 1.</li>\n</ul>"
    assert description.startswith(described + "<p>Version 1.0.0</p>"), description
    loaded, shown, description = _edit_build_in_a_fresh_process(sample, "| class | p |\n| --- | --- |\n| a | 0.7 |")
    assert loaded
    assert shown.startswith("<table>") and "<td>0.7</td>" in shown, shown
    assert description.startswith(described + "<p>Version 1.0.0</p>"), description


def test_a_broken_cache_is_ignored(sample: Path) -> None:
    one = build(sample).path.read_bytes()
    (sample / "dist").joinpath(next((sample / "dist").glob("*.apkg")).name).unlink()
    (sample / CACHE_DIR / "cache.sqlite").write_bytes(b"not a database" * 100)
    assert build(sample).path.read_bytes() == one


def test_check_reads_but_never_writes_the_cache(sample: Path) -> None:
    assert check(sample) == []
    assert not (sample / CACHE_DIR).exists()


def test_a_change_of_deckbuild_itself_invalidates_state_and_cache(sample: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import sqlite3

    from deckbuild.incremental import uptodate

    one = build(sample).path.read_bytes()
    assert up_to_date(sample) is not None
    monkeypatch.setattr(uptodate, "_code", "another-deckbuild")  # as if its source had changed
    assert up_to_date(sample) is None
    assert check(sample) == []  # a read-only reader ignores a cache made by other code
    assert build(sample).path.read_bytes() == one
    conn = sqlite3.connect(sample / CACHE_DIR / "cache.sqlite")
    assert conn.execute("SELECT code FROM meta").fetchall() == [("another-deckbuild",)]
    conn.close()


def test_the_cache_is_made_in_large_pages_and_made_again_after_an_upgrade(sample: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A rebuild reads every card file's parse and every note back a page at a time: the cache
    file has large pages, and a cache another deckbuild wrote (in the default 4 KB pages, say)
    is replaced by a new file rather than emptied in place, so an upgrade gets them too."""
    import sqlite3

    from deckbuild.incremental import uptodate
    from deckbuild.incremental.cache_db import PAGE_BYTES

    def page_size() -> int:
        conn = sqlite3.connect(sample / CACHE_DIR / "cache.sqlite")
        try:
            return int(conn.execute("PRAGMA page_size").fetchone()[0])
        finally:
            conn.close()

    one = build(sample).path.read_bytes()
    assert page_size() == PAGE_BYTES > 4096
    old = sqlite3.connect(sample / CACHE_DIR / "cache.sqlite")  # as an older deckbuild left it
    old.execute("PRAGMA page_size = 4096")
    old.execute("VACUUM")
    old.close()
    assert page_size() == 4096
    monkeypatch.setattr(uptodate, "_code", "another-deckbuild")
    assert build(sample).path.read_bytes() == one
    assert page_size() == PAGE_BYTES
    assert not list((sample / CACHE_DIR).glob("cache.sqlite.new-*"))


# -- incremental rebuilds (issue 17): an edit re-renders only what it touches, and the
# package equals a clean build of the same sources with the same record.


def _rendered_notes(project: Path) -> int:
    """How many rendered notes the cache holds (one row per note rendered, never per reuse)."""
    import sqlite3

    conn = sqlite3.connect(project / CACHE_DIR / "cache.sqlite")
    try:
        return int(conn.execute("SELECT count(*) FROM notes").fetchone()[0])
    finally:
        conn.close()


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text("utf-8")
    assert old in text, old
    path.write_text(text.replace(old, new, 1), "utf-8")


def _rename(project: Path) -> None:
    (project / "cards" / "extra.yaml").rename(project / "cards" / "more.yaml")


def _delete_card(project: Path) -> None:
    path = project / "cards" / "extra.yaml"
    text = path.read_text("utf-8")
    start = text.index("- id: clipping-picture")
    path.write_text(text[:start].rstrip("\n") + "\n", "utf-8")


EDITS = {
    # edit -> (what it does, how many notes it renders afresh: the edited one and those showing its text)
    "qa answer": (lambda p: _edit(p / "cards/basics.yaml", "Across the batch, per feature.", "Per feature."), 1),
    # twin-question names figure-card as its duplicate: both show each other's question.
    "question shown by another note": (
        lambda p: _edit(p / "cards/basics.yaml", "Which way does a batch-norm axis run?", "Which axis?"),
        2,
    ),
    # softmax-formula inherits math-answer's difficulty (a tag of its own).
    "difficulty a cloze inherits": (
        lambda p: _edit(p / "cards/basics.yaml", "difficulty: medium\n  topics: [losses", "difficulty: hard\n  topics: [losses"),
        2,
    ),
    "formula cloze": (lambda p: _edit(p / "cards/formulas.yaml", "normaliser", "the normaliser"), 1),
    "fact cloze": (lambda p: _edit(p / "cards/formulas.yaml", "Dropout in practice.", "Dropout, in practice."), 1),
    "deleted card": (_delete_card, 0),
    "renamed file": (_rename, 0),
    "a line added above cards": (lambda p: _edit(p / "cards/basics.yaml", "- id: escaping", "# a comment\n- id: escaping"), 0),
    "deck.yaml description": (lambda p: _edit(p / "deck.yaml", "**every** feature", "every feature"), 0),
    "deck.yaml name": (lambda p: _edit(p / "deck.yaml", "name: deckbuild Sample", "name: deckbuild Sampler"), 0),
}


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_an_incremental_rebuild_equals_a_clean_build(tmp_path: Path, edit: str) -> None:
    change, renders = EDITS[edit]
    project = copy_project("sample", tmp_path / "incremental")
    first = build(project).path
    before = _rendered_notes(project)
    assert before == len(_fields(first))
    # The clean build: the same sources and record, no cache of notes, parses or Markdown
    # (the drawn diagram is kept: it is the same picture either way, and slow to draw).
    clean = tmp_path / "clean" / "sample"
    shutil.copytree(project, clean, ignore=shutil.ignore_patterns("dist", "cache.sqlite", "last-package.*"))
    change(project)
    change(clean)
    # (a new deck name is refused without the flag, E171; the flag changes nothing else)
    incremental = build(project, allow_identity_change=True)
    assert incremental.path.read_bytes() == build(clean, allow_identity_change=True).path.read_bytes()
    assert (project / "deckbuild.lock").read_bytes() == (clean / "deckbuild.lock").read_bytes()
    assert _rendered_notes(project) == before + renders  # only notes whose inputs changed were rendered again


def _keyed_cards(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The ids of the cards whose note keys the next builds compute (a file kept whole has none)."""
    from deckbuild.incremental.note_reuse import NoteReuse

    keyed: list[str] = []
    real_key = NoteReuse._key

    def key(self: NoteReuse, card: Any, *args: Any) -> Any:
        keyed.append(card.id)
        return real_key(self, card, *args)

    monkeypatch.setattr(NoteReuse, "_key", key)
    return keyed


def test_a_rebuild_takes_unchanged_card_files_notes_whole_unless_what_they_show_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A card file whose bytes and every other input of its notes are those of the last build
    keeps its notes whole: none of its cards is keyed.  Each input changed from outside the
    file makes its notes be looked up card by card again: what they show of a card of another
    file (also when that file goes back to bytes the cache knows), a card of another file saying
    it duplicates one of its cards, the source titles.  After each step the package and record
    are those of a build of the same sources and record without a cache.  So does a picture
    drawn again from an edited generator."""
    project = copy_project("sample", tmp_path / "incremental")
    basics, extra, formulas = (project / "cards" / f"{name}.yaml" for name in ("basics", "extra", "formulas"))
    build(project)
    keyed = _keyed_cards(monkeypatch)

    def rebuild(step: str) -> list[str]:
        keyed.clear()
        data = build(project, allow_identity_change=True).path.read_bytes()
        ids = sorted(set(keyed))
        clean = tmp_path / step / "sample"  # its cache holds only the drawn pictures (the same either way)
        shutil.copytree(project, clean, ignore=shutil.ignore_patterns("dist", "cache.sqlite", "last-package.*"))
        assert build(clean, allow_identity_change=True).path.read_bytes() == data, step
        assert (clean / "deckbuild.lock").read_bytes() == (project / "deckbuild.lock").read_bytes()
        return ids

    _edit(formulas, "normaliser", "the normaliser")  # shown by no other file's note
    assert rebuild("unrelated") == ["dropout-fact", "softmax-formula"]  # formulas.yaml's own cards only
    question = "Which way does a batch-norm axis run?"  # figure-card's, shown by twin-question (extra.yaml)
    _edit(basics, question, "Which axis?")
    assert "twin-question" in rebuild("shown")
    _edit(basics, "Which axis?", question)  # basics.yaml's bytes of the first build again
    assert "twin-question" in rebuild("shown again")
    assert rebuild("nothing") == []
    _edit(
        extra, "topics: [optimization::gradient-clipping]", "topics: [optimization::gradient-clipping]\n  duplicate_of: escaping"
    )
    assert "escaping" in rebuild("overlapping")  # basics.yaml's escaping now overlaps with clipping-picture
    _edit(project / "deck.yaml", "output: dist", "output: dist\nsources:\n  sample-notes: Sample Notes")
    assert "math-answer" in rebuild("titles")  # its Source field names the title now
    _edit(project / "diagrams" / "numerics.py", "c = 2.0", "c = 3.0")  # grad-clipping's clipping threshold
    assert rebuild("figure") == ["clipping-picture", "twin-question"]  # extra.yaml: clipping-picture's picture is new


def test_a_damaged_note_of_a_file_kept_whole_is_rendered_again(sample: Path) -> None:
    """A row that reads back well-formed but with fewer fields than its note type has is never
    shipped, also when every other note of its card file is taken whole."""
    import sqlite3

    out = build(sample).path
    data = out.read_bytes()
    out.unlink()
    conn = sqlite3.connect(sample / CACHE_DIR / "cache.sqlite")
    damaged = "UPDATE notes SET fields = substr(fields, 1, instr(substr(fields, 2), char(31))) WHERE card_id = 'escaping'"
    assert conn.execute(damaged).rowcount == 1
    conn.commit()
    conn.close()
    assert build(sample).path.read_bytes() == data


def test_a_corrupt_note_row_in_the_cache_is_rendered_again(sample: Path) -> None:
    import sqlite3

    out = build(sample).path
    data = out.read_bytes()
    out.unlink()
    conn = sqlite3.connect(sample / CACHE_DIR / "cache.sqlite")
    conn.execute("UPDATE notes SET fields = 'not a list of fields' WHERE rowid % 3 = 0")
    conn.execute("UPDATE notes SET fields = substr(fields, 1, instr(substr(fields, 2), char(31))) WHERE rowid % 3 = 1")
    conn.execute("UPDATE notes SET tags = 42 WHERE rowid % 3 = 2")  # TEXT affinity: '42', not a list of tags
    conn.commit()
    conn.close()
    assert build(sample).path.read_bytes() == data


def test_a_corrupt_parse_in_the_cache_is_parsed_again_and_stored_over(sample: Path) -> None:
    import sqlite3

    out = build(sample).path
    data = out.read_bytes()
    out.unlink()
    path = sample / CACHE_DIR / "cache.sqlite"
    conn = sqlite3.connect(path)
    broken = conn.execute("UPDATE parsed SET value = '{\"cards\": 7}'").rowcount
    conn.commit()
    conn.close()
    assert broken >= 2
    assert build(sample).path.read_bytes() == data
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT count(*) FROM parsed WHERE value LIKE '{\"cards\": 7}'").fetchone() == (0,)
    conn.close()


@pytest.mark.parametrize("few_keys", [0, 10**6], ids=["one scan of the notes", "keys looked up one by one"])
def test_a_rebuild_takes_every_unchanged_note_from_the_cache_by_either_lookup(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, few_keys: int
) -> None:
    """The note cache is asked for every card's key: up to FEW_KEYS keys one by one, more by
    one scan of its table.  Either way a rebuild renders only the edited note again, a corrupt
    row is rendered again rather than used, and the package is the clean build's."""
    import sqlite3

    from deckbuild.incremental import cache as cache_module
    from deckbuild.incremental.note_reuse import NoteReuse

    monkeypatch.setattr(cache_module, "FEW_KEYS", few_keys)
    project = copy_project("sample", tmp_path / "incremental")
    build(project)
    clean = tmp_path / "clean" / "sample"
    shutil.copytree(project, clean, ignore=shutil.ignore_patterns("dist", "cache.sqlite", "last-package.*"))
    for root in (project, clean):
        _edit(root / "cards/basics.yaml", "Across the batch, per feature.", "Per feature.")
    rendered: list[str] = []
    real_store = NoteReuse.store

    def store(self: NoteReuse, card: object, note: object) -> None:
        rendered.append(getattr(card, "id", ""))
        real_store(self, card, note)  # type: ignore[arg-type]

    monkeypatch.setattr(NoteReuse, "store", store)
    out = build(project).path
    data = out.read_bytes()
    assert len(rendered) == 1, rendered  # the edited note only: every other one came from the cache
    conn = sqlite3.connect(project / CACHE_DIR / "cache.sqlite")
    assert conn.execute("UPDATE notes SET tags = 42 WHERE card_id = 'escaping'").rowcount == 1
    conn.commit()
    conn.close()
    out.unlink()
    rendered.clear()
    assert build(project).path.read_bytes() == data
    assert rendered == ["escaping"]  # the corrupt row's note, rendered again
    monkeypatch.setattr(NoteReuse, "store", real_store)
    assert build(clean).path.read_bytes() == data


WARNED = """\
- id: wq
  question: Which rates?
  answer: Some (F01).
  difficulty: easy
  topics: [a::b]
- id: wf1
  fact: 'Dropout keeps {{c1::0.5}} of units.'
  context: Dropout.
  of: wq
"""
SIBLING = """\
- id: wf2
  fact: 'At test time {{c1::0.5}} of units scale.'
  of: wq
"""


def test_an_unchanged_files_checks_come_from_the_cache_and_still_report(sample: Path) -> None:
    """A rebuild checks only the edited files' cards on their own (validate.CardFacts); the
    kept facts still report their warnings, and deck-wide rules (E414, a duplicate answer in
    a sibling cloze of another file) see every file's cards."""
    from deckbuild.incremental.cache import open_cache

    (sample / "cards" / "warned.yaml").write_text(WARNED, "utf-8")
    first = [str(p) for p in check(sample)]
    build(sample)  # fills the cache, facts included
    with open_cache(sample, writable=False) as cache:
        cache.file_key("cards/warned.yaml", (sample / "cards" / "warned.yaml").read_bytes())
        kept = cache.file_facts("cards/warned.yaml", 2)
    assert kept is not None and [p.code for p in kept[0].problems] == ["E415"]
    (sample / "cards" / "zz-sibling.yaml").write_text(SIBLING, "utf-8")
    after = [str(p) for p in check(sample)]
    assert set(first) < set(after)
    assert any("E415" in p and "warned.yaml" in p for p in after)
    assert any("E414" in p and "zz-sibling.yaml" in p and "as card 'wf1'" in p for p in after)
    assert any("E416" in p and "zz-sibling.yaml" in p for p in after)
    # The same problems, in the same order, as a check with no cache at all.
    shutil.rmtree(sample / CACHE_DIR)
    assert [str(p) for p in check(sample)] == after


def test_a_note_row_round_trips_every_field() -> None:
    """The note cache's columns are written generically and read field by field (for speed):
    the two must name the same fields as RenderedNote, or a cached note would differ."""
    import dataclasses

    from deckbuild.incremental import codec
    from deckbuild.model import RenderedNote

    note = RenderedNote(
        card_id="c",
        guid="g",
        notetype="qa",
        fields=("<p>a</p>", "", "b"),
        tags=("t1", "t2"),
        due=7,
        content_hash="h",
        media=("m.png",),
        previous_ids=("old",),
        deck="Sub",
    )
    row = codec.note_row(b"k", note)
    assert row is not None
    values = codec.note_values(row)
    assert values == {f.name: getattr(note, f.name) for f in dataclasses.fields(RenderedNote) if f.name != "due"}
    empty = dataclasses.replace(note, media=(), previous_ids=(), tags=())
    row = codec.note_row(b"k", empty)
    assert row is not None and codec.note_values(row)["tags"] == ()
    assert codec.note_row(b"k", dataclasses.replace(note, tags=("a\x1fb",))) is None  # not kept: rendered again


def test_a_rebuild_updates_the_card_ordinals_to_what_a_clean_build_keeps(sample: Path) -> None:
    """A rebuild rewrites only the ordinal rows of the notes it changed; the table must end as
    a clean build leaves it (no row of a gone note, the edited note's new row)."""
    build(sample)
    before = cached_card_ords(sample)
    cards = sample / "cards" / "basics.yaml"
    cards.write_text(
        cards.read_text("utf-8").replace("Across the batch, per feature.", "Per feature, across the batch."), "utf-8"
    )
    build(sample)
    after = cached_card_ords(sample)
    assert after != before and len(after) == len(before)
    fresh = sample.parent / "fresh"
    shutil.copytree(sample, fresh, ignore=shutil.ignore_patterns("dist", CACHE_DIR))
    build(fresh)
    assert cached_card_ords(fresh) == after


def test_a_rebuild_renders_only_new_text(sample: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Notes whose inputs changed are rendered again, but each of their texts that was
    rendered before comes from the cache (looked up one by one, not loaded whole): only the
    edited text goes through Markdown."""
    from deckbuild import render

    build(sample)
    _edit(sample / "cards/basics.yaml", "Which way does a batch-norm axis run?", "Which axis?")
    seen: list[str] = []
    real = render._render

    def counting(text: str, inline: bool) -> str:
        seen.append(text)
        return real(text, inline)

    monkeypatch.setattr(render, "_render", counting)
    build(sample)
    notes = [text for text in seen if "every** feature" not in text]  # the deck's description is rendered each build
    assert notes and all("Which axis?" in text for text in notes), seen


def test_a_failed_build_leaves_the_cache_as_it_found_it(sample: Path) -> None:
    """A build that fails (an invalid card here) keeps nothing it parsed: the cache file is
    byte-identical; a project's first build that fails makes no cache at all."""
    import hashlib

    from deckbuild.errors import ProjectInvalid

    broken = sample / "cards" / "broken.yaml"
    broken.write_text("- id: broken\n  q: A question with no answer?\n", "utf-8")
    with pytest.raises(ProjectInvalid):
        build(sample)
    assert not (sample / CACHE_DIR).exists()  # nothing at all: no folder, no file

    broken.unlink()
    build(sample)
    cache = sample / CACHE_DIR / "cache.sqlite"
    before = hashlib.sha256(cache.read_bytes()).hexdigest()
    (sample / "cards" / "extra.yaml").write_text("- id: extra-card\n  q: Which one?\n  a: This one.\n", "utf-8")
    broken.write_text("- id: broken\n  q: A question with no answer?\n", "utf-8")
    with pytest.raises(ProjectInvalid):
        build(sample)  # extra.yaml parses: its entry is not kept either
    assert hashlib.sha256(cache.read_bytes()).hexdigest() == before
    assert sorted(p.name for p in cache.parent.iterdir() if p.name.startswith("cache.sqlite")) == ["cache.sqlite"]


def test_a_build_while_another_holds_the_cache_runs_without_it_and_writes_the_same_bytes(sample: Path) -> None:
    from deckbuild.incremental.cache import open_cache

    package = build(sample).path
    first = package.read_bytes()
    package.unlink()
    with open_cache(sample, writable=True):  # another deckbuild planning in the project
        run = subprocess.run(
            [sys.executable, "-m", "deckbuild.cli", "build", "-C", str(sample)], capture_output=True, text=True, check=False
        )
    assert run.returncode == 0, run.stderr
    assert next((sample / "dist").glob("*.apkg")).read_bytes() == first


def test_a_resident_plan_checks_only_the_edited_card_of_an_edited_file(sample: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """serve plans again with a Memo after each save: of an edited file, only the edited card
    is checked on its own again, and the problems are those a plan with no memo and no cache
    reports (a card moved down by a new line above it is a new place, so it is checked too)."""
    import deckbuild.validate as validate
    from deckbuild.incremental.memo import Memo
    from deckbuild.plan import plan

    cards = sample / "cards" / "warned.yaml"
    cards.write_text(WARNED, "utf-8")
    memo = Memo()
    plan(sample, "check", memo=memo)
    checked: list[str] = []
    real = validate.card_facts

    def counting(card: validate.Card) -> validate.CardFacts:
        checked.append(card.id)
        return real(card)

    monkeypatch.setattr(validate, "card_facts", counting)
    cards.write_text(WARNED.replace("Dropout keeps {{c1::0.5}} of units.", "Dropout keeps {{c1::half}} of units."), "utf-8")
    edited = plan(sample, "check", memo=memo).problems
    assert checked == ["wf1"]
    checked.clear()
    cards.write_text("# moved\n" + cards.read_text("utf-8"), "utf-8")
    moved = plan(sample, "check", memo=memo).problems
    assert sorted(checked) == ["wf1", "wq"]
    assert [(p.code, p.location.line) for p in moved if p.location.path == "cards/warned.yaml"] == [("E415", 4)]
    fresh = copy_project("sample", sample.parent / "fresh")
    shutil.copyfile(cards, fresh / "cards" / "warned.yaml")
    assert moved == plan(fresh, "check").problems
    cards.write_text(WARNED.replace("{{c1::0.5}}", "{{c1::half}}"), "utf-8")
    shutil.copyfile(cards, fresh / "cards" / "warned.yaml")
    assert edited == plan(fresh, "check").problems


def test_a_cached_card_decodes_to_itself_and_an_unplain_value_is_refused() -> None:
    """The card codec keeps every field, locations included, and never stores what JSON cannot hold."""
    from deckbuild.errors import Location
    from deckbuild.incremental.codec import decode_card, encode_card
    from deckbuild.model import Card, Figure

    card = Card(
        "c1",
        "qa",
        Location("cards/a.yaml", 3, 3),
        question="Q?",
        topics=("a", "b"),
        figure=Figure(alt="x", file="f.png"),
        lint=(("E901", "why"),),
        key_locations={"question": Location("cards/a.yaml", 4, 15)},
    )
    back = decode_card(json.loads(json.dumps(encode_card(card))))  # through JSON, as the cache keeps it
    assert back == card
    assert back.where("question") == Location("cards/a.yaml", 4, 15)
    # Every kind of value: nested tuples, a diagram with its parameters and place, flags.
    note = Card(
        "c3",
        "note",
        Location("cards/b.yaml", 7, 3),
        topics=("t",),
        related=("c1",),
        tags=("x", "y"),
        previous_ids=("old",),
        figure=Figure(alt="d", diagram="curve", params=(("k", (1, 2)), ("s", "v")), location=Location("cards/b.yaml", 9, 5)),
        missing_code=True,
        notetype="vocab",
        note_fields=(("Front", "<b>a</b>", True), ("Back", "b", False)),
        deck="Verbs",
        guid="g1",
        lint=(("E420", "kept short"), ("E421", "on purpose")),
    )
    again = decode_card(json.loads(json.dumps(encode_card(note))))
    assert again == note
    assert vars(again) == {**vars(note), "key_locations": again.key_locations}  # nothing left a list
    assert again.figure is not None and again.figure.params_dict() == {"k": (1, 2), "s": "v"}
    with pytest.raises(TypeError, match=r"Card\.topics of type list"):
        encode_card(Card("c2", "qa", Location("cards/a.yaml"), topics=["a"]))  # type: ignore[arg-type]
