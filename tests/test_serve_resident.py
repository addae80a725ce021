"""`deckbuild serve`'s resident edit loop: after every kind of save, the site and the package a
serve process leaves are the ones a fresh `deckbuild preview` and `deckbuild build` write."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from conftest import copy_project, write_tree
from images import png
from previewsite import index_entries
from test_serve import DEADLINE, _edit, serving

QA_CARDS = """\
- id: plain-answer
  question: What does a resident loop keep?
  answer: The last plan.
  difficulty: easy
  topics: [serve::loop]
"""


def _events(base: str, since: int) -> dict[str, object]:
    with urllib.request.urlopen(f"{base}__deckbuild/events?since={since}", timeout=60) as response:
        data: dict[str, object] = json.loads(response.read())
    return data


def _settled(base: str, after: dict[str, object], broken: bool = False) -> dict[str, object]:
    """The serve state once the save made after `after` is published (its package written, for a good one)."""
    end = time.monotonic() + DEADLINE
    seen = after
    while time.monotonic() < end:
        seen = _events(base, int(str(seen["seq"])))
        if broken and seen["problems"]:
            return seen
        published = not seen["problems"] and int(str(seen["version"])) > int(str(after["version"]))
        if not broken and published and not seen["packaging"]:
            return seen
    raise AssertionError(f"timed out waiting for the save to be published (last state {seen})")


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _sources(project: Path, dest: Path) -> Path:
    """A copy of what a build reads: no dist/, no cache."""
    shutil.copytree(project, dest, ignore=shutil.ignore_patterns("dist", ".deckbuild-cache"))
    return dest


def _site_as_fresh(project: Path, out: Path, work: Path) -> Path:
    """The site in `out` equals what a preview of a copy of the sources (no cache) writes; the copy."""
    from deckbuild.preview.site import write_preview

    fresh = _sources(project, work / "fresh")
    write_preview(fresh, work / "site")
    served, previewed = _tree(out), _tree(work / "site")
    assert sorted(served) == sorted(previewed)
    assert [name for name in served if served[name] != previewed[name]] == []
    return fresh


def _same_as_fresh(project: Path, work: Path) -> None:
    """The served site and package equal what a preview of a copy of the sources writes, with no cache."""
    fresh = _site_as_fresh(project, project / "dist" / "preview", work)
    packages = {p.name: p.read_bytes() for p in (project / "dist").glob("*.apkg")}  # the deck's and its variants'
    assert packages and packages == {p.name: p.read_bytes() for p in (fresh / "dist").glob("*.apkg")}
    shutil.rmtree(work)


def _deckbuild(*args: str) -> None:
    done = subprocess.run([sys.executable, "-m", "deckbuild.cli", *args], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_after_every_kind_of_save_the_site_and_package_equal_a_fresh_preview_and_build(tmp_path: Path) -> None:
    project = copy_project("declared", tmp_path)
    write_tree(project, {"cards/plain.yaml": QA_CARDS})
    verbs, clozes = project / "cards" / "verbs.yaml", project / "cards" / "clozes.yaml"
    with serving(project) as (proc, base, _port):
        state = _settled(base, {"seq": -1, "version": 0})
        _same_as_fresh(project, tmp_path / "step")
        # an answer edit
        _edit(project / "cards" / "plain.yaml", "The last plan.", "The last plan, and the pages.")
        state = _settled(base, state)
        _same_as_fresh(project, tmp_path / "step")
        # a card added
        (project / "cards" / "plain.yaml").write_text(
            (project / "cards" / "plain.yaml").read_text(encoding="utf-8")
            + "- id: second-answer\n  question: And what does it render?\n  answer: Only what changed.\n"
            "  difficulty: medium\n  topics: [serve::loop]\n",
            encoding="utf-8",
        )
        state = _settled(base, state)
        _same_as_fresh(project, tmp_path / "step")
        # a card deleted
        _edit(clozes, "- id: silent-word\n  notetype: absent\n  fields:\n    Word: 静か\n", "")
        state = _settled(base, state)
        _same_as_fresh(project, tmp_path / "step")
        # an id renamed, the old one kept in previous_ids
        _edit(verbs, "  - id: nomu\n", "  - id: nomu-verb\n    previous_ids: [nomu]\n")
        state = _settled(base, state)
        _same_as_fresh(project, tmp_path / "step")
        # a media file replaced
        (project / "media" / "miru.png").write_bytes(png(shade=200, width=3, height=3))
        state = _settled(base, state)
        _same_as_fresh(project, tmp_path / "step")
        # deck.yaml edited
        _edit(project / "deck.yaml", "A sample project", "A sample deck project")
        state = _settled(base, state)
        _same_as_fresh(project, tmp_path / "step")
        # a note type's template edited
        _edit(project / "notetypes" / "vocab" / "back.html", '<div class="meaning">', '<div class="meaning" lang="en">')
        state = _settled(base, state)
        _same_as_fresh(project, tmp_path / "step")
        # a broken save, then its fix
        _edit(verbs, "      Meaning: to eat\n", "      Meaning: [to eat\n")
        state = _settled(base, state, broken=True)
        _edit(verbs, "      Meaning: [to eat\n", "      Meaning: to eat, to have a meal\n")
        state = _settled(base, state)
        _same_as_fresh(project, tmp_path / "step")
        time.sleep(1.0)  # no save left unseen: the last state is still the one settled on
        assert _events(base, -1)["seq"] == state["seq"]
        assert b"to have a meal" in urllib.request.urlopen(base + "cards/taberu.c1.html", timeout=30).read()
        proc.send_signal(signal.SIGINT)
        output = proc.communicate(timeout=30)[0]
    assert proc.returncode == 0, output
    # the note edits updated the site; deck.yaml and the template redrew it; a failed save did neither
    rebuilt = [line.rsplit(" ", 1)[-1] for line in output.splitlines() if line.startswith("rebuilt in")]
    assert rebuilt == ["redrawn", *["updated"] * 5, "redrawn", "redrawn", "updated"], output
    fresh = _sources(project, tmp_path / "fresh")
    _deckbuild("preview", "-C", str(fresh), "--out", str(tmp_path / "site"))
    served, previewed = _tree(project / "dist" / "preview"), _tree(tmp_path / "site")
    assert sorted(served) == sorted(previewed)
    assert [name for name in served if served[name] != previewed[name]] == []
    built = _sources(project, tmp_path / "built")
    _deckbuild("build", "-C", str(built))
    (package,) = (project / "dist").glob("*.apkg")
    assert (built / "dist" / package.name).read_bytes() == package.read_bytes()


def test_the_redraw_set_is_a_function_of_the_changeset() -> None:
    from deckbuild.changeset import Changeset, NoteChange
    from deckbuild.preview.redraw import Redraw, redraw

    assert redraw(Changeset()) == Redraw()
    edited = Changeset(
        notes=(
            NoteChange("answer", "changed", ("Back",), media=("chart.png",)),
            NoteChange("fresh", "added"),
            NoteChange("new-name", "renamed", previous="old-name"),
            NoteChange("gone-soon", "retired"),
        ),
        leaving=("deleted",),
        moved=(("moved", "", "Verbs"),),
        media_added=("new.png",),
        media_replaced=("chart.png",),
        media_dropped=("old.png",),
    )
    assert redraw(edited) == Redraw(
        notes=("answer", "fresh", "gone-soon", "moved", "new-name"),
        gone=("deleted", "old-name"),
        media=("chart.png", "new.png"),
        media_gone=("old.png",),
    )
    assert redraw(Changeset(notetypes=("vocab",), notes=(NoteChange("answer", "changed"),))) == Redraw(full=True)
    assert redraw(edited, config_changed=True) == Redraw(full=True)


def _index_rows_made(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The keys of the views whose index entries are made from now on, in order."""
    from deckbuild.preview import site

    made: list[str] = []
    real = site.index_row

    def counted(view: site.CardView) -> str:
        made.append(view.key)
        return real(view)

    monkeypatch.setattr(site, "index_row", counted)
    return made


def test_a_save_makes_the_index_entries_of_its_own_cards_only(tmp_path: Path, monkeypatch: object) -> None:
    """The index of every card is written again on each save, but only the saved cards' entries are made anew."""
    import pytest

    from deckbuild.preview import site
    from deckbuild.preview.resident import Resident

    assert isinstance(monkeypatch, pytest.MonkeyPatch)
    project = copy_project("sample", tmp_path)
    made = _index_rows_made(monkeypatch)
    resident = Resident(project, tmp_path / "site")
    try:
        resident.redraw_site()
        assert len(made) == len(resident.views) > 2
        made.clear()
        _edit(project / "cards" / "basics.yaml", "What does softmax compute?", "What does the softmax function compute?")
        drawn = resident.redraw_site()
        # the edited card and the clozes `of` it (they show its question): their entries, no other
        assert "math-answer" in drawn.saved and sorted(made) == sorted(drawn.saved) and len(made) < len(resident.views) - 2
        index = (tmp_path / "site" / "index.html").read_text(encoding="utf-8")
        assert index == site.index_page(resident.shown.config.name, resident.views)  # type: ignore[union-attr]
        assert "the softmax function compute" in index_entries(tmp_path / "site")
    finally:
        resident.close()


def test_a_card_added_first_moves_every_entry_to_another_index_file_but_makes_only_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A card added before the others shifts every later entry into the next file of index/: those
    files are written again, from the entries made before (only the new card's is made), and the
    site is still the one a preview writes."""
    from deckbuild.preview import site
    from deckbuild.preview.resident import Resident

    monkeypatch.setattr(site, "INDEX_CHUNK", 3)
    monkeypatch.setattr("deckbuild.preview.resident.INDEX_CHUNK", 3)
    made = _index_rows_made(monkeypatch)
    project = copy_project("sample", tmp_path)
    out = project / "dist" / "preview"
    resident = Resident(project, out)
    try:
        resident.redraw_site()
        made.clear()
        basics = project / "cards" / "basics.yaml"
        new = "- id: added-first\n  question: Which card comes first now?\n  answer: This one.\n"
        basics.write_text(new + "  difficulty: easy\n  topics: [foundations::text]\n\n" + basics.read_text("utf-8"), "utf-8")
        drawn = resident.redraw_site()
        assert made == ["added-first"]
        assert len([name for name in drawn.written if name.startswith("index/")]) == (len(resident.views) + 2) // 3
    finally:
        resident.close()
    _site_as_fresh(project, out, tmp_path)


def test_a_package_abandoned_for_a_newer_save_writes_nothing_and_stays_owed(tmp_path: Path) -> None:
    """A save abandons the package the last save is still making: dist/ keeps the last complete
    package, and the pages shown still get theirs (the next save's, or these if it fails)."""
    import threading

    import pytest

    from deckbuild.errors import DeckbuildError
    from deckbuild.preview.live_state import State
    from deckbuild.preview.packer import package_pages
    from deckbuild.preview.resident import Resident

    project = copy_project("sample", tmp_path)
    resident = Resident(project, project / "dist" / "preview")
    try:
        resident.redraw_site()
        resident.write_package()
        (package,) = (project / "dist").glob("*.apkg")
        before = package.read_bytes()
        _edit(project / "cards" / "basics.yaml", "What does softmax compute?", "What does the softmax function compute?")
        resident.redraw_site()
        state, said = State(), []
        newer = threading.Event()
        newer.set()  # a newer save: the package stops at its first checkpoint
        package_pages(resident, state, said.append, newer)
        assert package.read_bytes() == before and state.package is None and said == []
        assert resident.pending is not None  # still owed
        _edit(project / "cards" / "basics.yaml", "  difficulty: medium\n", "  difficulty: [medium\n")
        with pytest.raises(DeckbuildError):  # a broken save: the pages shown stay the last good ones
            resident.redraw_site()
        package_pages(resident, state, said.append, threading.Event())
        assert state.package == package and resident.pending is None and said == []
        _edit(project / "cards" / "basics.yaml", "  difficulty: [medium\n", "  difficulty: medium\n")
        _same_as_fresh(project, tmp_path / "work")
    finally:
        resident.close()


def test_a_manifest_left_behind_by_a_killed_serve_still_gives_the_next_preview_the_right_site(tmp_path: Path) -> None:
    """A save that only rewrites files leaves the manifest to the package; one that adds or drops
    a file saves it at once: a serve killed between the two leaves nothing the next preview misses."""
    from deckbuild.preview.resident import Resident
    from deckbuild.preview.site import write_preview

    project = copy_project("sample", tmp_path)
    out = project / "dist" / "preview"
    basics = project / "cards" / "basics.yaml"
    resident = Resident(project, out)
    try:
        resident.redraw_site()
        assert not resident.manifest_owed
        _edit(basics, "a probability for each class.", "a probability for every class.")
        assert resident.redraw_site().saved == ("math-answer",)
        assert resident.manifest_owed  # only files rewritten: the manifest waits for the package
        write_tree(project, {"cards/plain.yaml": QA_CARDS})
        resident.redraw_site()
        assert not resident.manifest_owed  # a page added: saved at once
        _edit(basics, "a probability for every class.", "one probability per class.")
        resident.redraw_site()
        assert resident.manifest_owed
        resident.manifest_owed = False  # killed before the package: the manifest stays as it was
    finally:
        resident.close()
    (project / "cards" / "plain.yaml").unlink()  # its page must go, though the manifest's last save listed it
    write_preview(project, out, incremental=True)
    fresh = _sources(project, tmp_path / "fresh")
    write_preview(fresh, tmp_path / "site")
    served, previewed = _tree(out), _tree(tmp_path / "site")
    assert sorted(served) == sorted(previewed)
    assert [name for name in served if served[name] != previewed[name]] == []


def test_a_save_rewrites_only_the_index_file_holding_its_entries(tmp_path: Path, monkeypatch: object) -> None:
    """The index's entries are files of INDEX_CHUNK; an answer edit rewrites its card's page and its
    entries' file (and index.html, unchanged here), and the site is still the one a preview writes."""
    import pytest

    from deckbuild.preview import site
    from deckbuild.preview.resident import Resident

    assert isinstance(monkeypatch, pytest.MonkeyPatch)
    monkeypatch.setattr(site, "INDEX_CHUNK", 3)
    monkeypatch.setattr("deckbuild.preview.resident.INDEX_CHUNK", 3)
    project = copy_project("sample", tmp_path)
    out = project / "dist" / "preview"
    resident = Resident(project, out)
    try:
        resident.redraw_site()
        files = sorted(p.name for p in (out / "index").iterdir())
        assert len(files) == (len(resident.views) + 2) // 3 > 2
        _edit(project / "cards" / "basics.yaml", "a probability for each class.", "a probability for every class.")
        drawn = resident.redraw_site()
        place = resident.keys.index("math-answer") // 3
        assert sorted(drawn.written) == ["cards/math-answer.html", f"index/{place:04d}.js"]
        assert "a probability for every class." in (out / "index" / f"{place:04d}.js").read_text(encoding="utf-8")
    finally:
        resident.close()
    _site_as_fresh(project, out, tmp_path)


def test_the_cards_kept_between_saves_share_their_note_types_css_and_script(tmp_path: Path) -> None:
    """Each rendered side starts with its note type's whole CSS (12 KB in the shipped deck's) and
    ends with its formula-fitting script (2.5 KB, more than the card's own part): each kept once
    per distinct block, not once per side, and given back whole to the page."""
    from deckbuild.preview.resident import Resident

    project = copy_project("sample", tmp_path)
    resident = Resident(project, tmp_path / "site")
    try:
        resident.redraw_site()
        views = resident.views
        styles = {id(v.front_style) for v in views} | {id(v.back_style) for v in views}
        assert len(styles) <= len({v.front_style for v in views} | {v.back_style for v in views}) < 3
        scripts = {id(v.front_script) for v in views} | {id(v.back_script) for v in views}
        assert len(scripts) == len({v.front_script for v in views} | {v.back_script for v in views}) == 1
        col = resident.col
        assert col is not None
        anki = {}  # (GUID, ord) -> the sides as the backend renders them
        for card in map(col.get_card, col.find_cards("")):
            anki[(card.note().guid, card.ord)] = (card.question(), card.answer())
        for view in views:
            assert view.front_script.startswith("<script>") and "fit every formula" in view.front_script
            assert "<script>" not in view.front_body and "<script>" not in view.back_body
            ord_ = int(view.key.rsplit(".c", 1)[1]) - 1 if ".c" in view.key else 0
            assert (view.front, view.back) == anki[(resident.by_card[view.card_id].guid, ord_)]
            page = (tmp_path / "site" / "cards" / f"{view.key}.html").read_text(encoding="utf-8")
            assert view.front.startswith("<style>") and view.front in page and view.back in page
    finally:
        resident.close()


CROSS_A = """\
- id: base-question
  question: What does a resident loop keep between saves?
  answer: The last plan.
  difficulty: easy
  topics: [serve::loop]
  source: notes#q1
- id: other-question
  question: What does a save rewrite?
  answer: Only the changed pages.
  difficulty: medium
  topics: [serve::pages]
"""
CROSS_B = """\
- id: pointer
  question: Which card does this one point at?
  answer: The base question.
  difficulty: hard
  topics: [serve::links]
  related: [base-question]
- id: base-cloze
  fact: 'A resident loop keeps {{c1::the last plan}}.'
  context: Between saves.
  of: base-question
- id: overlapped
  question: What does serve write after the pages?
  answer: The package.
  difficulty: easy
  topics: [serve::package]
"""


def test_a_card_file_kept_whole_between_saves_follows_the_cards_its_notes_show(tmp_path: Path, monkeypatch: object) -> None:
    """serve keeps a card file's notes whole (NoteReuse.kept_runs) only while every card they show
    something of is unchanged: a question its related card and its cloze show, the difficulty a
    cloze inherits, a card of another file saying it duplicates one, positions moved by cards added
    before.  After each save the site and the package are a fresh preview's and build's; an edit
    that no card of the other file shows leaves that file's cards unlooked-up."""
    import pytest

    from deckbuild.commands import build
    from deckbuild.incremental.note_reuse import NoteReuse
    from deckbuild.preview import site
    from deckbuild.preview.resident import Resident

    assert isinstance(monkeypatch, pytest.MonkeyPatch)
    project = copy_project("sample", tmp_path)
    for path in (project / "cards").glob("*.yaml"):
        path.unlink()
    write_tree(project, {"cards/a.yaml": CROSS_A, "cards/b.yaml": CROSS_B})
    asked: list[str] = []
    real = NoteReuse.lookup

    def lookup(self: NoteReuse, card: object, *args: object) -> object:
        asked.append(getattr(card, "id", ""))
        return real(self, card, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(NoteReuse, "lookup", lookup)
    a = project / "cards" / "a.yaml"
    out = tmp_path / "served"
    resident = Resident(project, out)

    def same_as_fresh(step: str) -> list[str]:
        """The save's cards looked up one by one; the site and package checked against fresh ones."""
        asked.clear()
        resident.redraw_site()
        looked_up = list(asked)
        served_package = resident.write_package().read_bytes()
        fresh = _sources(project, tmp_path / step)
        site.write_preview(fresh, tmp_path / f"{step}-site")
        served, previewed = _tree(out), _tree(tmp_path / f"{step}-site")
        assert sorted(served) == sorted(previewed), step
        assert [name for name in served if served[name] != previewed[name]] == [], step
        assert build(fresh).path.read_bytes() == served_package, step
        return looked_up

    try:
        same_as_fresh("first")
        _edit(a, "What does a resident loop keep between saves?", "What does serve keep in memory?")
        same_as_fresh("question")  # shown by `pointer` (related) and `base-cloze` (of)
        _edit(a, "  difficulty: easy\n  topics: [serve::loop]", "  difficulty: medium\n  topics: [serve::loop]")
        same_as_fresh("difficulty")  # inherited by `base-cloze`
        _edit(a, "  topics: [serve::pages]\n", "  topics: [serve::pages]\n  duplicate_of: overlapped\n")
        same_as_fresh("duplicate")  # `overlapped` now lists the card that duplicates it
        _edit(a, "  duplicate_of: overlapped\n", "")
        same_as_fresh("no-duplicate")
        a.write_text(
            "- id: first-now\n  question: Which card comes first?\n  answer: This one.\n  difficulty: easy\n"
            "  topics: [serve::order]\n" + a.read_text(encoding="utf-8"),
            encoding="utf-8",
        )
        assert same_as_fresh("moved") == ["first-now", "base-question", "other-question"]  # b.yaml moved, kept
        _edit(a, "Only the changed pages.", "Only the pages that changed.")
        assert same_as_fresh("unrelated") == ["first-now", "base-question", "other-question"]
    finally:
        resident.close()


ROWS_IN = ["schema", "notes copied", "notes copied", "cards copied", "cards copied"]
"""What a package of the test deck does up to its indexes (two runs of its rows copied around the edit)."""

MOMENTS = {
    # when the newer save comes -> what the package did before it stopped
    "as the last package's rows are copied": ["schema", "notes copy stopped"],
    "as the indexes are made": ROWS_IN,
    "in memory (no scratch file in the cache folder), as its rows go in": ["schema"],
    "as the collection is zipped": [*ROWS_IN, "zipping collection.anki2"],
    "as a variant's package is made (after the deck's)": [*ROWS_IN, "zipping collection.anki2", "zipping media", "schema"],
}


@pytest.mark.parametrize("moment", list(MOMENTS))
def test_a_newer_save_stops_the_package_within_its_longest_steps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, moment: str
) -> None:
    """The copy of the unchanged notes' rows and each index are one SQLite statement, and the
    zip of the collection one loop, each a tenth of a second or more at 100,000 notes: a newer
    save stops the package within them instead of waiting for them to end.  Nothing of it is
    written, it is not started again some other way, and the next package is the one a fresh
    build writes."""
    import threading

    import genanki
    from test_row_copy import _deck

    from deckbuild.apkg import package as apkg_package
    from deckbuild.apkg import row_copy, zipwrite
    from deckbuild.preview.live_state import State
    from deckbuild.preview.packer import package_pages
    from deckbuild.preview.resident import Resident

    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    monkeypatch.setattr(apkg_package, "PROGRESS_STEPS", 10)  # a test deck's statements are short
    project = _deck(tmp_path / "deck")
    if "variant" in moment:
        with (project / "deck.yaml").open("a", encoding="utf-8") as deck:
            deck.write("variants:\n  facts:\n    version: 1.0.0\n    include:\n      kind: [fact]\n")
    resident = Resident(project, project / "dist" / "preview")
    try:
        resident.redraw_site()
        package = resident.write_package()

        def packages() -> dict[str, bytes]:
            return {p.name: p.read_bytes() for p in (project / "dist").glob("*.apkg")}

        before = packages()
        assert len(before) == (2 if "variant" in moment else 1)
        _edit(project / "cards" / "part-1.yaml", "by 105 units.", "by 105 units, roughly.")  # copied runs on both sides
        resident.redraw_site()

        newer = threading.Event()
        seen: list[str] = []
        copy_notes, copy_cards, member = row_copy.copy_notes, row_copy.copy_cards, zipwrite.Deflater.member
        write_to_db = genanki.Package.write_to_db

        def notes_copied(cursor: object, run: row_copy.Run, next_id: int) -> int:
            if moment.endswith("copied"):
                newer.set()  # the newer save comes as the copy starts
            try:
                cards = copy_notes(cursor, run, next_id)  # type: ignore[arg-type]
            except row_copy.CopyFailed:
                seen.append("notes copy stopped")
                raise
            seen.append("notes copied")
            return cards

        def cards_copied(cursor: object, run: row_copy.Run, next_id: int, cards: int) -> None:
            copy_cards(cursor, run, next_id, cards)  # type: ignore[arg-type]
            seen.append("cards copied")
            if moment.endswith("made") and seen.count("cards copied") == 2:
                newer.set()  # the last rows are in: the indexes come next

        def zipping(self: zipwrite.Deflater, name: str, chunks: object) -> zipwrite.Member:
            if name == "collection.anki2" and moment.endswith("zipped"):
                newer.set()
            seen.append(f"zipping {name}")
            return member(self, name, chunks)  # type: ignore[arg-type]

        def schema(self: genanki.Package, *args: object) -> None:
            seen.append("schema")
            write_to_db(self, *args)
            if moment.startswith("in memory") or ("variant" in moment and seen.count("schema") == 2):
                newer.set()

        monkeypatch.setattr(row_copy, "copy_notes", notes_copied)
        monkeypatch.setattr(row_copy, "copy_cards", cards_copied)
        monkeypatch.setattr(zipwrite.Deflater, "member", zipping)
        monkeypatch.setattr(genanki.Package, "write_to_db", schema)
        if moment.startswith("in memory"):  # as a read-only or full disk gives
            monkeypatch.setattr(apkg_package, "_package_via_file", lambda *args: None)
        state, said = State(), []
        package_pages(resident, state, said.append, newer)
        assert seen == MOMENTS[moment]
        assert packages() == before and state.package is None and said == []
        assert resident.pending is not None  # still owed
        assert not list((project / ".deckbuild-cache").glob("package-*.anki2"))  # no scratch collection left

        seen.clear()
        package_pages(resident, state, said.append, threading.Event())
        assert ("notes copied" in seen) != moment.startswith("in memory")  # the next package copies the rows again
        assert state.package == package and resident.pending is None and said == []
        _same_as_fresh(project, tmp_path / "work")
    finally:
        resident.close()
