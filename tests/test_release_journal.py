"""`deckbuild release` is one transaction: a file that cannot be replaced leaves every file of the
project byte-identical and is named with its cause; a release killed between two renames is
refused by read-only commands and rolled back by the next writing one (real processes, the
writer's documented fault hooks, a real Anki collection for `status`)."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from ankiutil import new_collection

REPO = Path(__file__).parent.parent
T0, T1 = "1700000000", "1800000000"
JOURNAL = ".deckbuild-cache/journal.json"


def deckbuild(project: Path, *args: str, epoch: str = T1, fault: str = "") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "SOURCE_DATE_EPOCH": epoch}
    env.pop("DECKBUILD_DEBUG", None)
    env.pop("DECKBUILD_FAULT", None)
    if fault:
        env["DECKBUILD_FAULT"] = fault
    return subprocess.run(
        [sys.executable, "-m", "deckbuild.cli", *args, "-C", str(project)], capture_output=True, text=True, env=env, check=False
    )


def tree(root: Path, *, cache: bool = False) -> dict[str, str]:
    """Every path of the project (folders too) → sha256 of its bytes; `cache`: .deckbuild-cache/
    included, the build cache among it (a failed command keeps nothing it learnt there)."""
    out = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith(".deckbuild-cache") and not cache:
            continue
        out[rel] = "folder" if path.is_dir() else hashlib.sha256(path.read_bytes()).hexdigest()
    return out


@pytest.fixture
def released(sample: Path) -> Path:
    """The sample deck released once (1.0.0), then a card edited: the next release is 1.0.1."""
    first = deckbuild(sample, "release", epoch=T0)
    assert first.returncode == 0, first.stderr
    cards = sample / "cards" / "basics.yaml"
    text = cards.read_text()
    assert "Across the batch, per feature." in text
    cards.write_text(text.replace("Across the batch, per feature.", "Over the batch, per feature."))
    return sample


NEXT = "dist/deckbuild-sample-1.0.1.apkg"


@pytest.mark.parametrize(
    ("target", "code"), [("CHANGELOG.md", "E166"), ("releases/1.0.1.jsonl", "E166"), ("deckbuild.lock", "E160")]
)
def test_a_folder_in_the_way_is_named_and_changes_no_file(released: Path, target: str, code: str) -> None:
    path = released / target
    if path.exists():
        path.unlink()
    (path / "kept").mkdir(parents=True)
    (path / "kept" / "mine.txt").write_text("not deckbuild's\n")
    before = tree(released, cache=True)

    done = deckbuild(released, "release")

    assert done.returncode == 1, done.stderr
    first = done.stderr.strip().splitlines()[0]
    assert first.startswith(f"{target}: {code} "), done.stderr
    assert "dist:" not in done.stderr and "check the folder is writable" not in done.stderr
    assert "Traceback" not in done.stderr
    assert tree(released, cache=True) == before
    assert not (released / JOURNAL).exists()


@pytest.mark.parametrize("target", ["releases/1.0.1.jsonl", "CHANGELOG.md", "deckbuild.lock", NEXT])
def test_a_file_that_refuses_to_be_replaced_rolls_back_the_renames_before_it(released: Path, target: str) -> None:
    """fail-rename: the rename onto `target` fails as onto an immutable file (CI is not root, so
    chattr +i is not available); the files renamed before it (for the package: all four others)
    must be back, byte for byte."""
    before = tree(released, cache=True)

    done = deckbuild(released, "release", fault=f"fail-rename:{target}")

    assert done.returncode == 1, done.stderr
    first = done.stderr.strip().splitlines()[0]
    assert first.startswith(f"{target}: E162 cannot replace {target}: Operation not permitted"), done.stderr
    assert "check the folder is writable" not in done.stderr and "Traceback" not in done.stderr
    assert tree(released, cache=True) == before
    assert not (released / JOURNAL).exists()
    again = deckbuild(released, "release")  # the same release, once the file lets itself be replaced
    assert again.returncode == 0, again.stderr
    assert "released 1.0.1" in again.stdout


@pytest.mark.parametrize("renames", [1, 2, 4])
def test_a_killed_release_is_reported_then_rolled_back_by_the_next_build(released: Path, tmp_path: Path, renames: int) -> None:
    """SIGKILL the release after `renames` of its five renames (snapshot, deck.yaml, CHANGELOG.md,
    record, package): status, check and diff refuse (E163), say how to finish and change nothing; the next build rolls
    the release back (E164) and builds exactly what an uninterrupted build of the same sources does."""
    clean = tmp_path / "clean"
    shutil.copytree(released, clean)
    assert deckbuild(clean, "build").returncode == 0
    expected = tree(clean)
    collection = tmp_path / "learner" / "collection.anki2"
    new_collection(collection.parent).close()
    original = tree(released)

    killed = deckbuild(released, "release", fault=f"kill-after-rename:{renames}")

    assert killed.returncode == -9, killed.stderr
    assert (released / JOURNAL).is_file()
    half = tree(released)
    assert half != original  # the kill did leave a half release behind
    journal = (released / JOURNAL).read_bytes()
    for command in (["status", "--collection", str(collection)], ["check"], ["diff", "1.0.0", "1.0.1"]):
        refused = deckbuild(released, *command)
        assert refused.returncode == 1, (command, refused.stdout, refused.stderr)
        line = refused.stderr.strip().splitlines()[0]
        assert line.startswith(f"{JOURNAL}: E163 a write was interrupted"), refused.stderr
        assert "CHANGELOG.md" in line and "deckbuild build" in line
        assert tree(released) == half and (released / JOURNAL).read_bytes() == journal

    rebuilt = deckbuild(released, "build")

    assert rebuilt.returncode == 0, rebuilt.stderr
    assert f"{JOURNAL}: E164 warning: an interrupted write was rolled back" in rebuilt.stderr
    assert not (released / JOURNAL).exists()
    assert tree(released) == expected
    assert not list(released.rglob("*.tmp")) and not list(released.rglob("*.old"))
    for project in (released, clean):  # and the release itself, run again, is the uninterrupted one
        assert deckbuild(project, "release").returncode == 0
    assert tree(released) == tree(clean)


def test_a_killed_release_is_rolled_back_by_the_next_release(released: Path, tmp_path: Path) -> None:
    clean = tmp_path / "clean"
    shutil.copytree(released, clean)
    assert deckbuild(clean, "release").returncode == 0

    assert deckbuild(released, "release", fault="kill-after-rename:3").returncode == -9
    again = deckbuild(released, "release")

    assert again.returncode == 0, again.stderr
    assert "E164" in again.stderr and "released 1.0.1" in again.stdout
    assert tree(released) == tree(clean)


def test_a_killed_release_is_rolled_back_by_the_next_preview(released: Path, tmp_path: Path) -> None:
    """preview writes the package too: it rolls the killed release back before it plans, and the
    project ends as an uninterrupted preview of the same sources leaves it."""
    clean = tmp_path / "clean"
    shutil.copytree(released, clean)
    assert deckbuild(clean, "preview", "--out", str(tmp_path / "clean-site")).returncode == 0

    assert deckbuild(released, "release", fault="kill-after-rename:3").returncode == -9
    assert (released / "releases" / "1.0.1.jsonl").exists()
    preview = deckbuild(released, "preview", "--out", str(tmp_path / "site"))

    assert preview.returncode == 0, preview.stderr
    assert f"{JOURNAL}: E164 warning: an interrupted write was rolled back" in preview.stderr
    assert not (released / JOURNAL).exists() and not (released / "releases" / "1.0.1.jsonl").exists()
    assert tree(released) == tree(clean)
