"""Variants of one project (issue 16, acceptance 3) and `push` moving cards, on the real Anki backend.

Two variants with overlapping filters and the full deck share GUIDs, note types and mods, so
importing them into one collection gives every note once and keeps one history; a variant
is released on its own; `push` moves a learner's cards to the deck a note now ships in.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from ankiutil import answer_all, history, import_package, new_collection, notes_by_card_id
from conftest import copy_project
from golden import snapshot

from deckbuild.apkg.ids import card_guid
from deckbuild.commands import build, check, release
from deckbuild.release.diff import diff, load

REPO = Path(__file__).parent.parent
T0 = 1767225600  # 2026-01-01
VARIANTS = """\
variants:
  formulas:                    # the cloze cards only
    name: deckbuild Sample — Formulas
    version: 1.0.0
    include:
      kind: [formula, fact]
  medium:
    version: "0.1.0"
    include:
      difficulty: medium       # overlaps: softmax-formula inherits medium from math-answer
"""
FORMULAS = {"softmax-formula", "dropout-fact"}
MEDIUM = {"math-answer", "twin-question", "clipping-picture", "softmax-formula"}


@pytest.fixture(scope="module")
def built_sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample with two variants, built once (its diagram cache is reused by every copy)."""
    root = copy_project("sample", tmp_path_factory.mktemp("variants"))
    with (root / "deck.yaml").open("a") as handle:
        handle.write(VARIANTS)
    build(root, jobs=1)
    return root


@pytest.fixture
def project(built_sample: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    target = tmp_path / "sample"
    shutil.copytree(built_sample, target, ignore=shutil.ignore_patterns("dist", "deckbuild.lock", "build-state.json"))
    monkeypatch.setenv("SOURCE_DATE_EPOCH", str(T0))
    return target


def _package(project: Path, name: str) -> Path:
    return project / "dist" / name


def _files(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".deckbuild-cache" not in p.parts
    }


def _cli(project: Path, *args: str, epoch: int = T0) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "SOURCE_DATE_EPOCH": str(epoch)}
    return subprocess.run(
        [sys.executable, "-m", "deckbuild.cli", *args, "-C", str(project)], capture_output=True, text=True, env=env, check=False
    )


def _by_guid(apkg: Path) -> dict[str, dict[str, Any]]:
    return {note["guid"]: note for note in snapshot(apkg)["notes"]}


def _by_card_id(apkg: Path, field: str = "CardId") -> dict[str, dict[str, Any]]:
    """The package's notes (as tests/golden.py reads them) by their CardId field (or another)."""
    shot = snapshot(apkg)
    names = {mid: [f[0] for f in model["fields"]] for mid, model in shot["models"].items()}
    index = {mid: fields.index(field) for mid, fields in names.items() if field in fields}
    return {note["fields"][index[str(note["mid"])]]: note for note in shot["notes"] if str(note["mid"]) in index}


def _history_by_guid(col: Any) -> dict[str, list[tuple[int, int, int, int, int]]]:
    """Every note's cards' (ord, interval, due, reps, review log entries), by GUID."""
    out = {}
    for nid in col.find_notes(""):
        note = col.get_note(nid)
        rows = [
            (c.ord, c.ivl, c.due, c.reps, col.db.scalar("select count() from revlog where cid = ?", c.id)) for c in note.cards()
        ]
        out[note.guid] = sorted(rows)
    return out


def test_variants_share_notes_with_the_full_deck(project: Path) -> None:
    result = build(project, jobs=1)

    full = _package(project, "deckbuild-sample-1.0.0.apkg")
    formulas = _package(project, "deckbuild-sample-formulas-1.0.0.apkg")
    medium = _package(project, "deckbuild-sample-medium-0.1.0.apkg")
    assert result.path == full and sorted(p.name for p, _n in result.variants) == sorted([formulas.name, medium.name])
    full_notes = _by_guid(full)
    for apkg, ids in ((formulas, FORMULAS), (medium, MEDIUM)):
        shot = snapshot(apkg)
        # The same notes, byte for byte: GUID, note type id, mod, fields, tags.
        assert all(full_notes[n["guid"]] == n for n in shot["notes"])
        assert set(_by_card_id(apkg)) == ids
        # The note types its notes use, no other, with the full deck's ids and mods.
        used = {str(n["mid"]) for n in shot["notes"]}
        assert shot["models"] == {mid: model for mid, model in snapshot(full)["models"].items() if mid in used}
    assert [name for _id, name in snapshot(formulas)["decks"]] == ["Default", "deckbuild Sample — Formulas"]
    assert [name for _id, name in snapshot(medium)["decks"]] == ["Default", "deckbuild Sample (medium)"]
    assert list(snapshot(formulas)["media"]) == []  # only what its notes show
    assert len(snapshot(medium)["media"]) == 1


def test_two_variants_and_the_full_deck_in_one_collection(project: Path, tmp_path: Path) -> None:
    build(project, jobs=1)
    col = new_collection(tmp_path / "anki")
    try:
        log = import_package(col, _package(project, "deckbuild-sample-formulas-1.0.0.apkg"))
        assert len(log.new) == 2
        answer_all(col)  # the learner studies the formulas variant
        studied = history(col)
        # Anki's log calls a note it already has, identical, and so skips a "duplicate": it is
        # the shared note (softmax-formula), not a second copy (counted by GUID below).
        log = import_package(col, _package(project, "deckbuild-sample-medium-0.1.0.apkg"))
        assert (len(log.new), len(log.updated), len(log.duplicate), len(log.conflicting)) == (3, 0, 1, 0)
        log = import_package(col, _package(project, "deckbuild-sample-1.0.0.apkg"))
        assert (len(log.new), len(log.updated), len(log.duplicate), len(log.conflicting)) == (2, 0, 5, 0)

        guids = col.db.list("select guid from notes")
        assert len(guids) == len(set(guids)) == 7  # every note once
        names = [m.name for m in col.models.all_names_and_ids()]
        assert sorted(n for n in names if "deckbuild-sample" in n) == ["deckbuild-sample · Cloze", "deckbuild-sample · Question"]
        after = history(col)
        assert {k: after[k] for k in studied} == studied  # the reviews made via the variant are still there
        assert all(reps for k in FORMULAS for _o, _i, _d, reps in after[k])
        notes = notes_by_card_id(col)
        deck_of = {k: {col.decks.name(c.did) for c in n.cards()} for k, n in notes.items()}
        assert deck_of["softmax-formula"] == {"deckbuild Sample — Formulas"}  # where it first arrived
        assert deck_of["escaping"] == {"deckbuild Sample"}
    finally:
        col.close()


def test_rebuilds_are_byte_identical_and_a_variant_alone_matches(project: Path) -> None:
    build(project, jobs=1)
    first = _files(project / "dist")
    build(project, jobs=1)
    assert _files(project / "dist") == first
    assert build(project, force=False).plan.up_to_date
    # A variant's package is an output of the build like the deck's: a missing one is rebuilt.
    (project / "dist" / "deckbuild-sample-medium-0.1.0.apkg").unlink()
    again = build(project, force=False, jobs=1)
    assert not again.plan.up_to_date and _files(project / "dist") == first
    (project / "dist" / "deckbuild-sample-medium-0.1.0.apkg").unlink()
    only = build(project, jobs=1, variant="medium")
    assert only.path.name == "deckbuild-sample-medium-0.1.0.apkg" and only.notes == 4
    assert _files(project / "dist") == first


def test_variant_config_errors_are_located(project: Path) -> None:
    deck = project / "deck.yaml"
    deck.write_text(
        deck.read_text().split("variants:")[0]
        + "variants:\n  Bad_Key: {version: 1.0.0, include: {kind: [qa]}}\n"
        + "  a:\n    version: 1\n    include: {kind: [Cloze], colour: [red]}\n"
        + "  b:\n    nmae: x\n    include: {}\n"
    )
    lines = [p.format() for p in check(project)]
    assert lines == [
        "deck.yaml:9:3: E231 variant key 'Bad_Key': expected lower-case letters, digits and '-' (1-40)",
        "deck.yaml:11:14: E234 variant 'a': 'version': expected text; got int 1",
        "deck.yaml:12:21: E236 variant 'a': include 'kind': expected one of qa, formula, fact or a declared note type's "
        "key; got 'Cloze'",
        "deck.yaml:12:30: E235 variant 'a': unknown criterion 'colour' in 'include'; expected one of kind, difficulty, "
        "topics, tags, decks",
        "deck.yaml:14:5: E232 variant 'b': unknown key 'nmae'; expected one of name, version, description, include",
        "deck.yaml:14:5: E233 variant 'b': missing required key 'version'",
        "deck.yaml:15:14: E235 variant 'b': 'include': expected a mapping of criteria (kind, difficulty, topics, tags, "
        "decks); got an empty mapping",
    ]
    head = deck.read_text().split("variants:")[0] + "variants:\n"
    deck.write_text(head + "  some:\n    name: deckbuild Sample\n    version: 1.0.0\n    include: {kind: [qa]}\n")
    assert [p.format() for p in check(project)] == [
        "deck.yaml:9:3: E237 variant 'some': deck name 'deckbuild Sample' is also the name of the full deck; Anki matches "
        "decks by name, so learners could not tell them apart: give it a name of its own",
    ]
    deck.write_text(
        head
        + "  none:\n    version: 1.0.0\n    include: {topics: [robotics]}\n"
        + "  some:\n    version: 1.0.0\n    include: {topics: [robotics, normalization], tags: [SAMPLE, source]}\n"
        + "  typo:\n    version: 1.0.0\n    include: {kind: [formla]}\n"
    )
    assert [p.format() for p in check(project)] == [
        "deck.yaml:9:3: E240 variant 'none' matches no card; every criterion of 'include' must match (topics: robotics): "
        "widen the filter or remove the variant",
        "deck.yaml:14:23: E241 warning: variant 'some': include 'topics': 'robotics' matches no card (a typo?)",
        "deck.yaml:17:21: E236 variant 'typo': include 'kind': expected one of qa, formula, fact; got 'formla'",
    ]
    before = _files(project)
    done = _cli(project, "build")
    assert done.returncode == 1 and "Traceback" not in done.stderr and _files(project) == before


def test_release_variant_writes_only_its_files(project: Path) -> None:
    build(project, jobs=1)
    before = _files(project)

    done = _cli(project, "release", "--variant", "formulas")

    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("released variant formulas 1.0.0: 2 added, 0 changed, 0 retired\n")
    after = _files(project)
    changed = {k for k in after if before.get(k) != after[k]}
    # The package too: its description now names the release.
    assert changed == {
        "deckbuild.lock",
        "releases/formulas/1.0.0.jsonl",
        "CHANGELOG-formulas.md",
        "dist/deckbuild-sample-formulas-1.0.0.apkg",
    }
    assert not (project / "CHANGELOG.md").exists() and not list((project / "releases").glob("*.jsonl"))
    # The next release bumps the variant's version where it is written, comments kept.
    (project / "cards" / "formulas.yaml").write_text(
        (project / "cards" / "formulas.yaml").read_text().replace("Dropout in practice.", "Dropout, in practice.")
    )
    before = _files(project)
    done = _cli(project, "release", "--variant", "formulas", epoch=T0 + 86400)
    assert done.returncode == 0, done.stderr
    after = _files(project)
    changed = {k for k in after if before.get(k) != after[k]}
    assert changed == {
        "deck.yaml",
        "deckbuild.lock",
        "releases/formulas/1.0.1.jsonl",
        "CHANGELOG-formulas.md",
        "dist/deckbuild-sample-formulas-1.0.1.apkg",
    }
    assert "    version: 1.0.1\n" in (project / "deck.yaml").read_text()
    assert "  formulas:                    # the cloze cards only\n" in (project / "deck.yaml").read_text()
    assert 'version: "0.1.0"' in (project / "deck.yaml").read_text()  # the other variant's untouched
    assert (project / "CHANGELOG-formulas.md").read_text() == (
        "# Changelog — deckbuild Sample — Formulas\n\nEvery release of the deck, newest first.\n\n"
        "## 1.0.1 — 2026-01-02\n\n0 added, 1 changed, 0 retired.\n\n### Changed\n\n"
        "- `dropout-fact` — Dropout, in practice.\n\n"
        "## 1.0.0 — 2026-01-01\n\n2 added, 0 changed, 0 retired.\n\n### Added\n\n"
        "- `dropout-fact` — Dropout in practice.\n- `softmax-formula` — Softmax turns logits \\(z\\) into probabilities.\n"
    )
    diff = _cli(project, "diff", "formulas/1.0.0", "formulas/1.0.1")
    assert diff.returncode == 0 and "0 added, 1 changed, 0 retired, 0 removed, 1 unchanged" in diff.stdout
    description = _decks(project / "dist" / "deckbuild-sample-formulas-1.0.1.apkg")
    assert "Latest release 1.0.1: 0 added, 1 changed, 0 retired. See CHANGELOG-formulas.md" in description

    # Failing releases write nothing: nothing changed, an unknown variant.
    before = _files(project)
    done = _cli(project, "release", "--variant", "formulas", epoch=T0 + 2 * 86400)
    assert done.returncode == 1 and "E502 variant 'formulas': nothing changed since its release 1.0.1" in done.stderr
    done = _cli(project, "release", "--variant", "nope")
    assert done.returncode == 1 and "E238 unknown variant 'nope'; expected one of formulas, medium" in done.stderr
    assert _files(project) == before


def _decks(apkg: Path) -> str:
    import sqlite3
    import tempfile
    import zipfile

    with zipfile.ZipFile(apkg) as archive, tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "c.anki2"
        db.write_bytes(archive.read("collection.anki2"))
        conn = sqlite3.connect(db)
        try:
            return str(conn.execute("select decks from col").fetchone()[0])
        finally:
            conn.close()


def test_a_retired_note_ships_in_the_variants_it_matched(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    release(project, variant="formulas")
    release(project)
    cards = project / "cards" / "formulas.yaml"
    cards.write_text(cards.read_text().split("- id: dropout-fact")[0])
    # A variant does not retire a note on its own: the full deck's release does, first.
    before = _files(project)
    with pytest.raises(Exception, match="E242 variant 'formulas': card\\(s\\) dropout-fact left the sources"):
        release(project, variant="formulas")
    assert _files(project) == before
    monkeypatch.setenv("SOURCE_DATE_EPOCH", str(T0 + 86400))
    assert release(project).version == "2.0.0"
    done = release(project, variant="formulas")
    built = done.build
    assert done.version == "2.0.0" and done.changes.summary() == "0 added, 0 changed, 1 retired"
    assert "### Retired\n\n- `dropout-fact` — Dropout in practice." in (project / "CHANGELOG-formulas.md").read_text()
    shipped = _by_card_id(built.path)
    assert set(shipped) == FORMULAS and "retired" in shipped["dropout-fact"]["tags"]
    full = _by_card_id(project / "dist" / "deckbuild-sample-2.0.0.apkg")
    assert shipped["dropout-fact"] == full["dropout-fact"]  # retired exactly as the full deck ships it
    build(project, jobs=1)
    medium = set(_by_card_id(project / "dist" / "deckbuild-sample-medium-0.1.0.apkg"))
    assert medium == MEDIUM  # dropout-fact was easy: never in this variant


def test_push_moves_cards_to_the_new_deck_keeping_history(project: Path, tmp_path: Path) -> None:
    collection = tmp_path / "anki" / "collection.anki2"
    new_collection(collection.parent).close()
    first = _cli(project, "push", "--collection", str(collection), "--format", "json")
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["new"] == 7
    col = new_collection(collection.parent)
    try:
        answer_all(col)
        studied = history(col)
    finally:
        col.close()
    deck = project / "deck.yaml"
    deck.write_text(deck.read_text().replace("name: deckbuild Sample", "name: Sample Deck"))
    build(project, allow_identity_change=True, jobs=1)

    done = _cli(project, "push", "--collection", str(collection), "--format", "json", epoch=T0 + 86400)

    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert (report["new"], report["updated"], report["conflicting"]) == (0, 0, 0)
    assert sorted((m["id"], m["from"], m["to"]) for m in report["moved"]) == sorted(
        (k, "deckbuild Sample", "Sample Deck") for k in studied
    )
    col = new_collection(collection.parent)
    try:
        assert {col.decks.name(col.get_card(c).did) for c in col.find_cards("")} == {"Sample Deck"}
        assert history(col) == studied  # intervals, due dates, reps and review log moved with the cards
    finally:
        col.close()
    again = _cli(project, "push", "--collection", str(collection), "--format", "json", epoch=T0 + 86400)
    assert json.loads(again.stdout)["moved"] == []


def test_push_of_a_variant_moves_only_its_own_cards(project: Path, tmp_path: Path) -> None:
    collection = tmp_path / "anki" / "collection.anki2"
    new_collection(collection.parent).close()

    def push(*args: str) -> dict[str, Any]:
        done = _cli(project, "push", "--collection", str(collection), "--format", "json", *args)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)  # type: ignore[no-any-return]

    assert push("--variant", "formulas")["new"] == 2
    full = push()
    assert (full["new"], full["moved"]) == (5, [])  # the formulas stay in the variant's deck
    deck = project / "deck.yaml"
    deck.write_text(deck.read_text().replace("name: deckbuild Sample — Formulas", "name: Sample Formulas"))
    # Renaming a variant splits learners' decks on a plain import: refused without the flag (E243).
    refused = [p.format() for p in check(project)]
    assert refused[0].startswith(
        "deck.yaml:9:3: E243 variant 'formulas': deck name changed from 'deckbuild Sample — Formulas' to "
    )
    build(project, allow_identity_change=True, jobs=1)
    moved = push("--variant", "formulas")["moved"]
    assert sorted((m["id"], m["from"], m["to"]) for m in moved) == [
        ("dropout-fact", "deckbuild Sample — Formulas", "Sample Formulas"),
        ("softmax-formula", "deckbuild Sample — Formulas", "Sample Formulas"),
    ]
    assert push()["moved"] == []  # the full deck's push leaves them in the variant's deck
    status = _cli(project, "status", "--collection", str(collection), "--variant", "formulas", "--format", "json")
    assert status.returncode == 0, status.stderr
    assert (json.loads(status.stdout)["version"], json.loads(status.stdout)["missing"]) == ("1.0.0", [])
    col = new_collection(collection.parent)
    try:
        decks = {k: {col.decks.name(c.did) for c in n.cards()} for k, n in notes_by_card_id(col).items()}
    finally:
        col.close()
    assert decks["softmax-formula"] == decks["dropout-fact"] == {"Sample Formulas"}
    assert decks["escaping"] == {"deckbuild Sample"}


def test_subdecks_declared_note_types_and_a_moved_note(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Filters by subdeck and declared note type; a note moved to another subdeck is listed and pushed."""
    project = copy_project("declared", tmp_path)
    with (project / "deck.yaml").open("a") as handle:
        handle.write("variants:\n  verbs:\n    version: 1.0.0\n    include: {decks: [Verbs]}\n")
        handle.write("  n5:\n    version: 1.0.0\n    include: {kind: [vocab], tags: [jlpt::n5]}\n")
    monkeypatch.setenv("SOURCE_DATE_EPOCH", str(T0))
    release(project)
    build(project, jobs=1)
    verbs = project / "dist" / "japanese-verbs-verbs-1.0.0.apkg"
    shot = snapshot(verbs)
    assert set(_by_card_id(verbs, "Word")) == {"食べる", "飲む", "見る"}  # Verbs and Verbs::Irregular
    assert set(_by_card_id(project / "dist" / "japanese-verbs-n5-1.0.0.apkg", "Word")) == {"食べる"}
    assert sorted(shot["media"]) == ["miru.png", "taberu.mp3"]  # named by the declared fields' HTML
    assert sorted(name for _id, name in shot["decks"]) == [
        "Default",
        "Japanese Verbs (verbs)",
        "Japanese Verbs (verbs)::Verbs",
        "Japanese Verbs (verbs)::Verbs::Irregular",
    ]
    full = _by_guid(project / "dist" / "japanese-verbs-1.0.0.apkg")
    assert all(full[n["guid"]] == n for n in shot["notes"])

    collection = tmp_path / "anki" / "collection.anki2"
    new_collection(collection.parent).close()
    assert _cli(project, "push", "--collection", str(collection)).returncode == 0
    col = new_collection(collection.parent)
    try:
        answer_all(col)
        studied = _history_by_guid(col)
        assert all(reps for rows in studied.values() for _o, _i, _d, reps, _log in rows)
    finally:
        col.close()
    cards = project / "cards" / "verbs.yaml"
    cards.write_text(cards.read_text().replace("    deck: Verbs::Irregular\n", ""))
    monkeypatch.setenv("SOURCE_DATE_EPOCH", str(T0 + 86400))
    second = release(project)

    assert (second.version, second.changes.summary()) == ("1.0.1", "0 added, 0 changed, 1 moved, 0 retired")
    changelog = (project / "CHANGELOG.md").read_text()
    assert "### Moved\n\n- Moved to Japanese Verbs::Verbs: `nomu` — 飲む\n\nA plain import does not move" in changelog
    report = diff(load("1.0.0", project), load("1.0.1", project))
    assert "notes: 0 added, 0 changed, 1 moved, 0 retired, 0 removed, 4 unchanged\n  ↦ nomu — 飲む (moved to Verbs:" in report
    packages = [load(str(project / "dist" / f"japanese-verbs-{v}.apkg"), project) for v in ("1.0.0", "1.0.1")]
    assert "1 moved, 0 retired, 0 removed, 4 unchanged" in diff(*packages)
    assert "0 added, 0 changed, 0 retired, 0 removed, 5 unchanged" in diff(load("1.0.0", project), packages[0])
    done = _cli(project, "push", "--collection", str(collection), "--format", "json", epoch=T0 + 86400)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    nomu = card_guid("deckbuild-declared-sample", "nomu", ())  # a declared note has no CardId field: its GUID
    assert report["moved"] == [
        {"id": nomu, "from": "Japanese Verbs::Verbs::Irregular", "to": "Japanese Verbs::Verbs", "cards": 1}
    ]
    col = new_collection(collection.parent)
    try:
        note = col.get_note(col.find_notes("Word:飲む")[0])
        assert {col.decks.name(c.did) for c in note.cards()} == {"Japanese Verbs::Verbs"}
        assert _history_by_guid(col) == studied
    finally:
        col.close()
