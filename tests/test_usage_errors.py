"""Every error a command raises about what it was given is printed as exactly one line, by a real process.

A located error (`place: CODE message`) used to be printed twice: once as the problem, and
again after `error:`.  Each case below is one such code, met the way a user meets it.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import REPO, copy_project, write_tree

DECK = "name: Usage\nnamespace: usage\nversion: 1.0.0\n"
CARD = "- id: one\n  question: One?\n  answer: Yes.\n  difficulty: easy\n  topics: [foundations::text]\n"


def _project(root: Path) -> Path:
    return write_tree(root / "deck", {"deck.yaml": DECK, "cards/a.yaml": CARD})


def _locked_collection(root: Path) -> Path:
    """An SQLite file held in SQLite's exclusive lock by this test process, as Anki holds its collection."""
    path = root / "collection.anki2"
    conn = sqlite3.connect(path)
    conn.execute("create table col (ver int)")
    conn.commit()
    conn.execute("pragma locking_mode=exclusive")
    conn.execute("begin exclusive")
    _held.append(conn)
    return path


_held: list[sqlite3.Connection] = []


def _lock_garbled(root: Path) -> None:
    (_project(root) / "deckbuild.lock").write_text("<<<<<<< HEAD\n{\n=======\n", encoding="utf-8")


def _output_is_a_file(root: Path) -> None:
    project = _project(root)
    (project / "deck.yaml").write_text(DECK + "output: dist\n", encoding="utf-8")
    (project / "dist").write_text("a file where the output folder goes\n", encoding="utf-8")


def _output_links_out(root: Path) -> None:
    project = _project(root)
    (root / "elsewhere").mkdir()
    (project / "deck.yaml").write_text(DECK + "output: dist\n", encoding="utf-8")
    (project / "dist").symlink_to(root / "elsewhere")


def _not_empty(root: Path) -> None:
    write_tree(root, {"taken/file.txt": "x"})


def _released(root: Path) -> None:
    assert _deckbuild(_project(root), "release").returncode == 0


def _schema_changed(root: Path) -> None:
    project = copy_project("declared", root)
    project.rename(root / "deck")
    assert _deckbuild(root / "deck", "release").returncode == 0
    notetype = root / "deck" / "notetypes" / "absent" / "notetype.yaml"
    notetype.write_text(notetype.read_text("utf-8").replace("[Word, Audio]", "[Word, Audio, Extra]"), "utf-8")


def _empty_seed(root: Path) -> None:
    (_project(root) / "seed.txt").write_bytes(b"")


def _cards_is_a_file(root: Path) -> None:
    project = _project(root)
    shutil.copy(REPO / "seeds" / "training-dynamics-43.txt", project / "seed.txt")
    (project / "cards" / "a.yaml").unlink()
    (project / "cards").rmdir()
    (project / "cards").write_text("not a folder\n", encoding="utf-8")


def _snapshot_lost(root: Path) -> None:
    _released(root)
    for snapshot in (root / "deck" / "releases").glob("*.jsonl"):
        snapshot.unlink()


Setup = Callable[[Path], object]

# (code, what to prepare in tmp_path, the command line, run in): "deck" is the project folder.
CASES: list[tuple[str, Setup, list[str], str]] = [
    ("E600", _project, ["push", "--collection", "c.anki2", "--profile", "p"], "deck"),
    ("E601", _project, ["status", "--collection", "{locked}"], "deck"),
    ("E602", _project, ["push", "--collection", "deck.yaml"], "deck"),
    ("E603", _project, ["push", "--profile", "nobody", "--base", "."], "deck"),
    ("E180", _not_empty, ["new", "taken"], "."),
    ("E181", lambda root: None, ["new", "fresh", "--name", 'a "quoted" name'], "."),
    ("E161", _output_is_a_file, ["build", "-q"], "deck"),
    ("E112", _output_links_out, ["build", "-q"], "deck"),
    ("E160", _lock_garbled, ["build", "-q"], "deck"),
    ("E238", _project, ["build", "--variant", "nosuch"], "deck"),
    ("E250", lambda root: None, ["adopt", "nosuch.apkg", "fresh"], "."),
    ("E258", _not_empty, ["adopt", "nosuch.apkg", "taken"], "."),
    ("E502", _released, ["release"], "deck"),
    ("E503", _snapshot_lost, ["build", "-q"], "deck"),
    ("E504", _project, ["diff", "nosuch.apkg", "other.apkg"], "deck"),
    ("E501", _schema_changed, ["build", "-q"], "deck"),
    ("E301", _empty_seed, ["import", "seed.txt"], "deck"),
    ("E140", _cards_is_a_file, ["import", "seed.txt"], "deck"),
]
IMPORT_CODES = {"E301", "E140"}  # `import` says `error: ...` and then that nothing was written


def _deckbuild(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1"}
    env.pop("DECKBUILD_DEBUG", None)
    return subprocess.run(
        [sys.executable, "-m", "deckbuild.cli", *args], cwd=cwd, capture_output=True, text=True, timeout=120, env=env
    )


@pytest.mark.parametrize(("code", "setup", "argv", "where"), CASES, ids=[c[0] for c in CASES])
def test_a_usage_error_is_one_line(tmp_path: Path, code: str, setup: Setup, argv: list[str], where: str) -> None:
    setup(tmp_path)
    if "{locked}" in argv:
        argv = [str(_locked_collection(tmp_path)) if a == "{locked}" else a for a in argv]
    try:
        result = _deckbuild(tmp_path / where, *argv)
    finally:
        while _held:
            _held.pop().close()
    lines = result.stderr.splitlines()
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert [line for line in lines if f" {code} " in line] == lines[:1], result.stderr
    if code in IMPORT_CODES:
        assert lines[0].startswith("error: ") and lines[1:] == ["nothing written to cards/"], lines
    else:  # `place: CODE message`, as docs/errors.md shows every problem
        assert len(lines) == 1 and not lines[0].startswith("error:"), lines


def test_every_code_is_the_one_its_case_names() -> None:
    """The table covers each code once, so a new usage error gets a case of its own."""
    codes = [case[0] for case in CASES]
    assert len(codes) == len(set(codes))
