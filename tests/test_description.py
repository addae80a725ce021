"""deck.yaml's `description_html`: the package's deck description exactly as written (adopted decks)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from conftest import write_tree

CARD = "- id: one\n  question: Q?\n  answer: A.\n  difficulty: easy\n  topics: [a::b]\n"


def _check_or_build(project: Path, command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "deckbuild.cli", command], cwd=project, capture_output=True, text=True)


def _description(package: Path) -> str:
    with zipfile.ZipFile(package) as archive, tempfile.TemporaryDirectory() as tmp:
        archive.extract("collection.anki2", tmp)
        db = sqlite3.connect(Path(tmp) / "collection.anki2")
        try:
            (decks,) = db.execute("select decks from col").fetchone()
        finally:
            db.close()
    return next(str(d["desc"]) for d in json.loads(decks).values() if d["name"] == "D")


def _project(root: Path, config: str) -> Path:
    return write_tree(root, {"deck.yaml": "name: D\nnamespace: d\nversion: 1.2.3\n" + config, "cards/main.yaml": CARD})


def test_description_html_ships_as_written_without_the_version_line(tmp_path: Path) -> None:
    html = '<div>Maps &amp; <a href="https://example.org/credits">credits</a></div>\n<p>two\nlines </p>'
    project = _project(tmp_path / "p", f"description_html: {json.dumps(html)}\n")
    assert _check_or_build(project, "build").returncode == 0
    assert _description(next((project / "dist").glob("*.apkg"))) == html


def test_markdown_description_keeps_its_version_line(tmp_path: Path) -> None:
    project = _project(tmp_path / "p", "description: Some **words**.\n")
    assert _check_or_build(project, "build").returncode == 0
    assert _description(next((project / "dist").glob("*.apkg"))) == "<p>Some <strong>words</strong>.</p><p>Version 1.2.3</p>"


def test_both_descriptions_are_refused(tmp_path: Path) -> None:
    project = _project(tmp_path / "p", "description: Markdown.\ndescription_html: <p>HTML</p>\n")
    result = _check_or_build(project, "check")
    assert result.returncode == 1
    assert "deck.yaml:5:19: E290 give 'description' (Markdown) or 'description_html' (HTML as written), not both" in result.stderr


def test_script_in_the_description_is_removed_and_named(tmp_path: Path) -> None:
    project = _project(tmp_path / "p", 'description_html: "<p>Hi</p><script>alert(1)</script>"\n')
    result = _check_or_build(project, "check")
    assert result.returncode == 0
    assert "deck.yaml:4:19: E291 warning: 'description_html' lost <script> to sanitizing" in result.stderr
    assert _check_or_build(project, "build").returncode == 0
    assert _description(next((project / "dist").glob("*.apkg"))) == "<p>Hi</p>"
