"""Three releases through the official Anki backend: versions, changelog, diff, retirement."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from ankiutil import answer_all, history, import_package, notes_by_card_id
from click.testing import CliRunner
from conftest import write_tree

from deckbuild.cli import main
from deckbuild.commands import build, release

DAY = 86400
T0 = 1767225600  # 2026-01-01


def _card(card_id: str, question: str, answer: str) -> str:
    return f"- id: {card_id}\n  question: {question}\n  answer: {answer}\n  difficulty: easy\n  topics: [t::s]\n"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    cards = "".join(_card(f"c{i}", f"Question {i}?", f"Answer {i}.") for i in range(1, 6))
    return write_tree(
        tmp_path / "deck",
        {"deck.yaml": "name: Rel\nnamespace: rel\nversion: 1.0.0 # bumped by deckbuild release\n", "cards/a.yaml": cards},
    )


def _edit(project: Path, old: str, new: str) -> None:
    path = project / "cards" / "a.yaml"
    path.write_text(path.read_text().replace(old, new))


def test_three_releases(project: Path, collection, monkeypatch, tmp_path: Path) -> None:
    # 1.0.0: the first release takes deck.yaml's version.
    monkeypatch.setenv("SOURCE_DATE_EPOCH", str(T0))
    r1 = release(project)
    assert r1.version == "1.0.0" and r1.changes.summary() == "5 added, 0 changed, 0 retired"
    v1 = tmp_path / "v1.apkg"
    shutil.copy(r1.build.path, v1)
    import_package(collection, v1)
    answer_all(collection)
    # The learner fixes a typo in c5 in Anki; c5 never changes in the sources.
    note = notes_by_card_id(collection)["c5"]
    note["Answer"] = "Answer 5 (my note)."
    collection.update_note(note)
    before = history(collection)

    # 1.1.0: two cards added, three edited -> minor.
    _edit(project, "Answer 1.", "Answer 1, edited.")
    _edit(project, "Answer 2.", "Answer 2, edited.")
    _edit(project, "Answer 3.", "Answer 3, edited.")
    with (project / "cards" / "a.yaml").open("a") as handle:
        handle.write(_card("c6", "Question 6?", "Answer 6.") + _card("c7", "Question 7?", "Answer 7."))
    monkeypatch.setenv("SOURCE_DATE_EPOCH", str(T0 + 10 * DAY))
    r2 = release(project)
    assert r2.version == "1.1.0"
    assert "version: 1.1.0 # bumped by deckbuild release" in (project / "deck.yaml").read_text()
    log = import_package(collection, r2.build.path)
    assert sorted(n.fields[9] for n in log.new) == ["c6", "c7"]
    assert sorted(n.fields[9] for n in log.updated) == ["c1", "c2", "c3"]
    notes = notes_by_card_id(collection)
    assert notes["c5"]["Answer"] == "Answer 5 (my note)."  # the learner's edit survives
    after = history(collection)
    assert {k: v for k, v in after.items() if k in before} == before

    # Importing 1.0.0 again over 1.1.0 changes nothing.
    again = import_package(collection, v1)
    assert not again.new and not again.updated
    assert notes_by_card_id(collection)["c1"]["Answer"] == "<p>Answer 1, edited.</p>"

    # 2.0.0: one card retired (removed from the sources) -> major.
    path = project / "cards" / "a.yaml"
    path.write_text(path.read_text().replace(_card("c4", "Question 4?", "Answer 4."), ""))
    monkeypatch.setenv("SOURCE_DATE_EPOCH", str(T0 + 20 * DAY))
    r3 = release(project)
    assert r3.version == "2.0.0" and r3.changes.summary() == "0 added, 0 changed, 1 retired"
    mods = {k: n.mod for k, n in notes_by_card_id(collection).items()}
    log = import_package(collection, r3.build.path)
    assert [n.fields[9] for n in log.updated] == ["c4"] and not log.new
    notes = notes_by_card_id(collection)
    assert "retired" in notes["c4"].tags
    assert "Retired in version 2.0.0" in notes["c4"]["Notice"]
    # Its front says it retired (no releases/retired.yaml: the default reason, no replacement named).
    assert "Retired card." in notes["c4"]["Question"] and "no longer part of the deck" in notes["c4"]["Question"]
    assert {k: n.mod for k, n in notes.items() if k != "c4"} == {k: m for k, m in mods.items() if k != "c4"}
    assert {k: v for k, v in history(collection).items() if k in before} == before
    deck = collection.decks.by_name("Rel")
    assert "Version 2.0.0" in deck["desc"] and "Latest release 2.0.0: 0 added, 0 changed, 1 retired" in deck["desc"]

    # A rebuild of the recorded release on another day gives the same bytes.
    data = r3.build.path.read_bytes()
    r3.build.path.unlink()
    monkeypatch.setenv("SOURCE_DATE_EPOCH", str(T0 + 99 * DAY))
    assert build(project).path.read_bytes() == data

    assert (project / "CHANGELOG.md").read_text() == CHANGELOG
    runner = CliRunner()
    out = runner.invoke(main, ["diff", "-C", str(project), "1.0.0", "1.1.0"])
    assert out.exit_code == 0, out.output
    assert out.stdout == DIFF_1_TO_11
    out = runner.invoke(main, ["diff", "-C", str(project), str(v1), str(r3.build.path)])
    assert out.exit_code == 0, out.output
    assert out.stdout == DIFF_APKG_1_TO_2


CHANGELOG = """\
# Changelog — Rel

Every release of the deck, newest first.

## 2.0.0 — 2026-01-21

0 added, 0 changed, 1 retired.

### Retired

- `c4` — Question 4?

Retired cards keep their review history but are no longer maintained. In Anki, search `tag:retired` to find them, then suspend or delete them.

## 1.1.0 — 2026-01-11

2 added, 3 changed, 0 retired.

### Added

- `c6` — Question 6?
- `c7` — Question 7?

### Changed

- `c1` — Question 1?
- `c2` — Question 2?
- `c3` — Question 3?

## 1.0.0 — 2026-01-01

5 added, 0 changed, 0 retired.

### Added

- `c1` — Question 1?
- `c2` — Question 2?
- `c3` — Question 3?
- `c4` — Question 4?
- `c5` — Question 5?
"""

DIFF_1_TO_11 = """\
release 1.0.0 -> release 1.1.0
notes: 2 added, 3 changed, 0 retired, 0 removed, 2 unchanged
  + c6 — Question 6?
  + c7 — Question 7?
  ~ c1 — Question 1? (Answer)
  ~ c2 — Question 2? (Answer)
  ~ c3 — Question 3? (Answer)
note types: unchanged
media: 0 added, 0 removed
"""

DIFF_APKG_1_TO_2 = """\
v1.apkg -> rel-2.0.0.apkg
notes: 2 added, 3 changed, 1 retired, 0 removed, 1 unchanged
  + c6 — Question 6?
  + c7 — Question 7?
  ~ c1 — Question 1? (Answer)
  ~ c2 — Question 2? (Answer)
  ~ c3 — Question 3? (Answer)
  x c4 — Question 4? (retired)
note types: unchanged
media: 0 added, 0 removed
"""


def test_nothing_to_release_and_schema_guard(project: Path, monkeypatch) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", str(T0))
    release(project)
    result = CliRunner().invoke(main, ["release", "-C", str(project)])
    assert result.exit_code == 1
    assert "deck.yaml: E502 nothing changed since release 1.0.0" in result.stderr
    import dataclasses

    from deckbuild.apkg import notetypes

    changed_qa = dataclasses.replace(notetypes.QA, fields=(*notetypes.QA.fields, "Extra"))
    monkeypatch.setitem(notetypes.NOTETYPES, "qa", changed_qa)
    result = CliRunner().invoke(main, ["build", "-C", str(project)])
    assert result.exit_code == 1
    assert "E501 note type 'qa' changed its fields or templates since release 1.0.0" in result.stderr
    result = CliRunner().invoke(main, ["release", "-C", str(project), "--bump", "minor", "--allow-schema-change"])
    assert result.exit_code == 1 and "E501" in result.stderr


def test_explicit_bump_overrides(project: Path, monkeypatch) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", str(T0))
    release(project)
    _edit(project, "Answer 1.", "Answer one.")
    assert release(project, bump="major").version == "2.0.0"


def test_a_release_keeps_the_unreleased_section_on_top_of_the_repos_changelog(tmp_path: Path) -> None:
    """CHANGELOG.md's `## Unreleased` (notes about deckbuild itself) stays first; the release goes below it."""
    from conftest import REPO

    from deckbuild.release.versioning import UNRELEASED, changelog_with

    shutil.copy(REPO / "CHANGELOG.md", tmp_path / "CHANGELOG.md")
    before = (tmp_path / "CHANGELOG.md").read_text("utf-8")
    latest = next(line for line in before.splitlines() if line.startswith("## ") and line[3].isdigit())
    assert UNRELEASED in before and "E270" in before.split(f"\n{latest}")[0]
    after = changelog_with(tmp_path, "## 9.0.0 — 2027-01-01\n\n1 added, 0 changed, 0 retired.\n", "Deep").decode()
    headings = [line for line in after.splitlines() if line.startswith("## ")]
    assert headings[:3] == ["## Unreleased", "## 9.0.0 — 2027-01-01", latest]
    assert after.replace("## 9.0.0 — 2027-01-01\n\n1 added, 0 changed, 0 retired.\n\n", "") == before
