"""Failure injection: a command that fails, at any stage, leaves every project file as it was.

Each test builds (or releases) once, edits a card so the next run has something to write,
breaks one thing, runs the real command line in a fresh process, and compares every file of
the project byte for byte, apart from `.deckbuild-cache/` (which may keep good parses).
The kill tests stop a real build between its renames and check the next build repairs it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import write_tree

ROOT = Path(__file__).resolve().parent.parent
T0 = "1767225600"


def _files(project: Path) -> dict[str, bytes]:
    """Every file of the project but the cache, by relative path."""
    files = {}
    for path in sorted(project.rglob("*")):
        rel = path.relative_to(project)
        if rel.parts[0] == ".deckbuild-cache" or not path.is_file():
            continue
        files[rel.as_posix()] = path.read_bytes()
    return files


def _run(project: Path, *args: str, prelude: str = "", fault: str = "") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SOURCE_DATE_EPOCH": T0}
    env.pop("DECKBUILD_DEBUG", None)
    env.pop("DECKBUILD_FAULT", None)
    if fault:
        env["DECKBUILD_FAULT"] = fault  # the writer's fault hook (deckbuild/writer.py)
    code = prelude + "from deckbuild.cli import main\nmain()\n"
    return subprocess.run(
        [sys.executable, "-c", code, *args, "-C", str(project)], capture_output=True, text=True, env=env, check=False
    )


def _card(card_id: str, answer: str) -> str:
    return f"- id: {card_id}\n  question: Question {card_id}?\n  answer: {answer}\n  difficulty: easy\n  topics: [t::s]\n"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A released project with one edit waiting: build and release both have something to write."""
    root = write_tree(
        tmp_path / "deck",
        {
            "deck.yaml": "name: Fail\nnamespace: fail\nversion: 1.0.0\noutput: dist\n",
            "cards/a.yaml": _card("c1", "One.") + _card("c2", "Two."),
        },
    )
    assert _run(root, "release").returncode == 0
    (root / "cards" / "a.yaml").write_text(_card("c1", "One, edited.") + _card("c2", "Two."))
    return root


def _assert_fails_and_changes_nothing(project: Path, command: str, code: str, prelude: str = "") -> None:
    before = _files(project)
    result = _run(project, command, prelude=prelude)
    assert result.returncode == 1, result.stderr
    assert f" {code} " in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
    after = _files(project)
    assert sorted(after) == sorted(before)
    changed = [name for name in before if after[name] != before[name]]
    assert changed == [], f"{command} failed with {code} but changed {changed}"


@pytest.mark.parametrize("command", ["build", "release"])
def test_output_naming_a_file(project: Path, command: str) -> None:
    """`output: deck.yaml` fails only when the package is written (E161): nothing may be written before."""
    deck = project / "deck.yaml"
    deck.write_text(deck.read_text().replace("output: dist", "output: deck.yaml"))
    _assert_fails_and_changes_nothing(project, command, "E161")


@pytest.mark.parametrize("command", ["build", "release"])
def test_package_path_is_a_folder(project: Path, command: str) -> None:
    """A folder where the package goes cannot be replaced: refused before any rename, as E166 at that file."""
    version = "1.0.0" if command == "build" else "1.0.1"
    target = project / "dist" / f"fail-{version}.apkg"
    if target.exists():
        target.unlink()
    target.mkdir()
    (target / "keep").write_text("mine")
    _assert_fails_and_changes_nothing(project, command, "E166")


@pytest.mark.parametrize("command", ["build", "release"])
def test_unwritable_dist(project: Path, command: str) -> None:
    """dist/ that refuses new files (root ignores permissions, so the refusal is injected at
    the one call that creates files, in the real process)."""
    prelude = (
        "import errno, tempfile\n"
        "_real = tempfile.mkstemp\n"
        "def _mkstemp(*a, dir=None, **k):\n"
        "    if dir is not None and str(dir).endswith('dist'):\n"
        "        raise PermissionError(errno.EACCES, 'Permission denied', str(dir))\n"
        "    return _real(*a, dir=dir, **k)\n"
        "tempfile.mkstemp = _mkstemp\n"
    )
    _assert_fails_and_changes_nothing(project, command, "E161", prelude)


@pytest.mark.parametrize("command", ["build", "release"])
def test_schema_change(project: Path, command: str) -> None:
    """A released note type whose fields changed (E501) stops build and release before any write."""
    prelude = (
        "import dataclasses\n"
        "from deckbuild.apkg import notetypes\n"
        "notetypes.NOTETYPES['qa'] = dataclasses.replace(notetypes.QA, fields=(*notetypes.QA.fields, 'Extra'))\n"
    )
    _assert_fails_and_changes_nothing(project, command, "E501", prelude)


@pytest.mark.parametrize("command", ["build", "release"])
def test_diagram_error(project: Path, command: str) -> None:
    with (project / "cards" / "a.yaml").open("a") as handle:
        handle.write(_card("c3", "Three.") + "  diagram: {name: no-such-diagram, alt: Nothing.}\n")
    _assert_fails_and_changes_nothing(project, command, "E280")


@pytest.mark.parametrize("renames", [1])
def test_kill_between_renames_is_repaired_by_the_next_build(project: Path, renames: int) -> None:
    """SIGKILL a real build after `renames` of its renames (1: the record but not the package);
    the next build must leave the same record and package as an uninterrupted one."""
    clean = project.parent / "clean"
    subprocess.run(["cp", "-a", str(project), str(clean)], check=True)
    assert _run(clean, "build").returncode == 0
    expected = _files(clean)

    killed = _run(project, "build", fault=f"kill-after-rename:{renames}")
    assert killed.returncode == -9, killed.stderr
    if renames == 1:
        assert (project / "deckbuild.lock").read_bytes() == expected["deckbuild.lock"]
        assert (project / "dist" / "fail-1.0.0.apkg").read_bytes() != expected["dist/fail-1.0.0.apkg"]
    again = _run(project, "build")
    assert again.returncode == 0, again.stderr
    assert "up to date" not in again.stdout
    assert _files(project) == expected


# --- import: every cards/*.yaml it would write, or none -------------------------------------

SEEDS = ("training-dynamics-43.txt", "deep-learning-120.txt")


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project that imported the first seed: importing both rewrites its card files and adds new ones."""
    root = write_tree(
        tmp_path_factory.mktemp("seeded") / "deck", {"deck.yaml": "name: Seeded\nnamespace: seeded\nversion: 1.0.0\n"}
    )
    (root / "seeds").mkdir()
    for name in (*SEEDS, "curation.yaml"):
        (root / "seeds" / name).write_bytes((ROOT / "seeds" / name).read_bytes())
    assert _run(root, "import", f"seeds/{SEEDS[0]}").returncode == 0
    return root


@pytest.fixture
def importing(seeded: Path, tmp_path: Path) -> Path:
    root = tmp_path / "deck"
    subprocess.run(["cp", "-a", str(seeded), str(root)], check=True)
    return root


def _import_fails_and_changes_nothing(project: Path, code: str, *seeds: str, prelude: str = "") -> None:
    before = _files(project)
    args = [str(project / "seeds" / name) for name in seeds or SEEDS]
    result = _run(project, "import", *args, prelude=prelude)
    assert result.returncode == 1, result.stderr
    assert f" {code} " in result.stderr and "nothing written to cards/" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
    after = _files(project)
    assert sorted(after) == sorted(before), "import left files behind"
    changed = [name for name in before if after[name] != before[name]]
    assert changed == [], f"import failed with {code} but changed {changed}"


def test_import_writes_all_card_files(importing: Path) -> None:
    """The baseline the failures below are measured against: both seeds rewrite and add several files."""
    before = _files(importing)
    result = _run(importing, "import", *(str(importing / "seeds" / name) for name in SEEDS))
    assert result.returncode == 0, result.stderr
    after = _files(importing)
    rewritten = [name for name in before if name.startswith("cards/") and after[name] != before[name]]
    added = [name for name in after if name not in before]
    assert len(rewritten) >= 2 and len(added) >= 2, (rewritten, added)


_FAIL_NTH_CARD_FILE = (
    "import errno, tempfile\n"
    "_real = tempfile.mkstemp\n"
    "_calls = []\n"
    "def _mkstemp(*a, dir=None, **k):\n"
    "    if dir is not None and str(dir).endswith('cards'):\n"
    "        _calls.append(dir)\n"
    "        if len(_calls) >= {n}:\n"
    "            raise PermissionError(errno.EACCES, 'Permission denied', str(dir))\n"
    "    return _real(*a, dir=dir, **k)\n"
    "tempfile.mkstemp = _mkstemp\n"
)


def test_import_into_unwritable_cards_folder(importing: Path) -> None:
    """cards/ refuses new files (injected at the one call that creates them: root ignores permissions)."""
    _import_fails_and_changes_nothing(importing, "E140", prelude=_FAIL_NTH_CARD_FILE.replace("{n}", "1"))


def test_import_failing_after_some_files_are_staged(importing: Path) -> None:
    """The fourth card file cannot be written: the three staged before it must not land either."""
    _import_fails_and_changes_nothing(importing, "E140", prelude=_FAIL_NTH_CARD_FILE.replace("{n}", "4"))


def test_import_with_a_bad_seed_among_good_ones(importing: Path) -> None:
    (importing / "seeds" / "bad.txt").write_text("Hello\nworld\n", encoding="utf-8")
    _import_fails_and_changes_nothing(importing, "E302", *SEEDS, "bad.txt")


def test_import_with_a_file_where_cards_folder_should_be(importing: Path) -> None:
    subprocess.run(["rm", "-r", str(importing / "cards")], check=True)
    (importing / "cards").write_text("not a folder\n")
    _import_fails_and_changes_nothing(importing, "E140")


def test_import_with_a_folder_where_a_card_file_should_be(importing: Path) -> None:
    """A folder named like a card file the import would create (or rewrite)."""
    (importing / "cards" / "activations.yaml").mkdir()
    (importing / "cards" / "activations.yaml" / "keep").write_text("mine")
    _import_fails_and_changes_nothing(importing, "E340")
