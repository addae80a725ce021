"""`deckbuild new`: the project it writes checks, builds and imports; it never writes into a non-empty folder; its CI steps run."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml
from ankiutil import import_package, new_collection, notes_by_card_id, visible_text


def deckbuild(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "deckbuild.cli", *args], cwd=cwd, capture_output=True, text=True, check=False)


def tree(root: Path) -> dict[str, str]:
    """Every file below root with its content hash (folders as 'dir')."""
    out = {}
    for path in sorted(root.rglob("*")):
        out[path.relative_to(root).as_posix()] = "dir" if path.is_dir() else hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def ids_in(apkg: Path) -> tuple[set[str], set[int], set[int]]:
    """(note GUIDs, note-type ids, deck ids other than Default) of a package."""
    with zipfile.ZipFile(apkg) as archive:
        data = archive.read("collection.anki2")
    db_path = apkg.with_suffix(".anki2")
    db_path.write_bytes(data)
    db = sqlite3.connect(db_path)
    try:
        guids = {row[0] for row in db.execute("select guid from notes")}
        models, decks = db.execute("select models, decks from col").fetchone()
    finally:
        db.close()
    return guids, {int(k) for k in json.loads(models)}, {int(k) for k in json.loads(decks)} - {1}


@pytest.fixture(scope="module")
def new_deck(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("new") / "my-deck"
    result = deckbuild("new", str(root), "--name", "My Deck")
    assert result.returncode == 0, result.stderr
    assert "next: cd" in result.stdout
    return root


def test_new_project_checks_builds_and_imports_into_anki(new_deck: Path, tmp_path: Path) -> None:
    project = tmp_path / "p"
    shutil.copytree(new_deck, project)
    check = deckbuild("check", "-C", str(project))
    assert check.returncode == 0, check.stderr
    assert "0 error(s), 0 warning(s)" in check.stderr
    build = deckbuild("build", "-C", str(project))
    assert build.returncode == 0, build.stderr
    (apkg,) = (project / "dist").glob("*.apkg")

    col = new_collection(tmp_path / "anki")
    try:
        log = import_package(col, apkg)
        assert len(log.new) == 4
        notes = notes_by_card_id(col)
        assert set(notes) == {
            "what-is-a-parabola",
            "formula-quadratic-roots",
            "fact-discriminant-sign",
            "where-a-parabola-crosses-zero",
        }
        # The formula is a real cloze: two deletions, two cards, the gap on the front.
        formula = notes["formula-quadratic-roots"]
        assert formula.note_type()["type"] == 1
        cards = sorted(formula.cards(), key=lambda c: c.ord)
        assert [c.ord for c in cards] == [0, 1]
        front = cards[1].question()
        assert "[...]" in visible_text(front) and "2a" not in visible_text(front)
        assert "2a" in visible_text(cards[1].answer())
        # The image is in the package and in Anki's media folder, and the card shows it.
        question = notes["what-is-a-parabola"]
        (card,) = question.cards()
        answer_html = card.answer()
        assert "<img" in answer_html and "parabola" in answer_html
        media_dir = Path(col.media.dir())
        (stored,) = [p for p in media_dir.iterdir() if "parabola" in p.name]
        assert stored.read_bytes() == (project / "media" / "parabola.png").read_bytes()
        assert stored.name in answer_html
        # The example generator's picture, named by its bytes, in Anki and on its card.
        (drawn,) = notes["where-a-parabola-crosses-zero"].cards()
        (picture,) = [p for p in media_dir.iterdir() if p.name.startswith("quadratic-")]
        assert re.fullmatch(r"quadratic-[0-9a-f]{12}\.png", picture.name)
        assert hashlib.sha256(picture.read_bytes()).hexdigest()[:12] == picture.name[len("quadratic-") : -len(".png")]
        assert picture.name in drawn.answer()
    finally:
        col.close()


def test_new_refuses_a_non_empty_folder_and_writes_nothing(tmp_path: Path) -> None:
    target = tmp_path / "existing"
    target.mkdir()
    (target / "notes.txt").write_text("mine\n")
    before = tree(tmp_path)
    result = deckbuild("new", str(target))
    assert result.returncode != 0
    assert "E180" in result.stderr and "Traceback" not in result.stderr
    assert tree(tmp_path) == before  # no staging folder left beside it either

    a_file = tmp_path / "file"
    a_file.write_text("x")
    before = tree(tmp_path)
    result = deckbuild("new", str(a_file))
    assert result.returncode != 0 and "E180" in result.stderr
    assert tree(tmp_path) == before


def test_new_fills_an_empty_folder(tmp_path: Path) -> None:
    target = tmp_path / "empty"
    target.mkdir()
    result = deckbuild("new", str(target), "--name", "Empty Folder Deck")
    assert result.returncode == 0, result.stderr
    assert "name: Empty Folder Deck" in (target / "deck.yaml").read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty"]


def test_same_name_gives_decks_with_nothing_in_common(new_deck: Path, tmp_path: Path) -> None:
    other = tmp_path / "my-deck"
    assert deckbuild("new", str(other), "--name", "My Deck").returncode == 0
    first = tmp_path / "first"
    shutil.copytree(new_deck, first)
    packages = []
    for project in (first, other):
        assert deckbuild("build", "-C", str(project)).returncode == 0
        (apkg,) = (project / "dist").glob("*.apkg")
        packages.append(ids_in(apkg))
    (guids_a, models_a, decks_a), (guids_b, models_b, decks_b) = packages
    assert len(guids_a) == len(guids_b) == 4
    assert not guids_a & guids_b
    assert not models_a & models_b
    assert not decks_a & decks_b


def _workflow_steps(project: Path) -> list[dict[str, str]]:
    workflow = yaml.safe_load((project / ".github/workflows/release.yml").read_text())
    assert workflow[True if True in workflow else "on"]["push"]["tags"] == ["v*"]  # PyYAML reads `on:` as True
    (job,) = workflow["jobs"].values()
    return [step for step in job["steps"] if "run" in step]


def _run_steps(project: Path, tag: str) -> list[tuple[str, int, str]]:
    """Run the workflow's shell steps as GitHub does (bash -e), apart from the install and the upload."""
    env = {**os.environ, "GITHUB_REF_NAME": tag, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    results = []
    for step in _workflow_steps(project):
        if step["id"] in ("install", "upload"):
            continue
        proc = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        results.append((step["id"], proc.returncode, proc.stderr))
        if proc.returncode:
            break
    return results


def test_workflow_steps_run_locally(new_deck: Path, tmp_path: Path) -> None:
    steps = _workflow_steps(new_deck)
    assert [s["id"] for s in steps] == ["install", "tag", "check", "build", "upload"]
    assert steps[0]["run"] == "pip install -r requirements.txt"
    requirements = (new_deck / "requirements.txt").read_text().splitlines()
    pins = [line for line in requirements if line and not line.startswith("#")]
    # The tests run an editable install, which no CI runner can reach: the line is left to edit.
    assert any(line.startswith("# deckbuild @ git+<repository URL>@<commit>") for line in requirements)
    assert not any(line.lower().startswith("deckbuild") for line in pins)
    assert all("==" in line for line in pins)
    assert any(line.lower().startswith(("genanki==", "pyyaml==", "markdown==")) for line in pins)
    assert "dist/*.apkg" in steps[-1]["run"]

    project = tmp_path / "p"
    shutil.copytree(new_deck, project)
    good = _run_steps(project, "v0.1.0")
    assert [(name, code) for name, code, _ in good] == [("tag", 0), ("check", 0), ("build", 0)], good
    assert list((project / "dist").glob("*-0.1.0.apkg"))

    wrong = _run_steps(project, "v0.2.0")
    assert wrong[0][:2] == ("tag", 1)
    assert "does not match deck.yaml's version '0.1.0'" in wrong[0][2]
    assert len(wrong) == 1  # nothing after the failed check ran
