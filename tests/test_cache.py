"""Caches and the up-to-date check never change what a build produces (issue 9).

No timings here: speed is measured by benchmarks/run.py, outside the test suite.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import REPO, copy_project

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


def test_no_op_build_imports_no_heavy_module(sample: Path) -> None:
    build(sample)
    probe = (
        "import sys\n"
        "from deckbuild.cli import main\n"
        f"try:\n    main(['build', '-C', {str(sample)!r}])\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in ('yaml', 'markdown', 'genanki', 'sqlite3') if m in sys.modules))\n"
    )
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO, check=True)
    assert proc.stdout.startswith("up to date:"), proc.stdout + proc.stderr
    assert proc.stdout.strip().endswith("[]"), proc.stdout


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
