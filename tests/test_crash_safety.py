"""Crash safety and concurrency of `deckbuild build`, with real processes.

A build is killed with SIGKILL at several moments -- by the clock, and at the instants its
temporary files appear and its record is replaced -- and the outputs must then be either
the previous ones or the complete new ones (never a half-written file), and the next build
must succeed and give exactly the new outputs.  The record is renamed into place before
the package, so "new record, old package" is a legal state after a kill (the next build
then writes exactly the package of the interrupted one); "new package, old record" is not.
Two builds at once: the project lock (flock on .deckbuild-cache/build.lock) makes the
second exit 3 with a clear message, or they run one after the other.
"""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import REPO, copy_project
from corpus_gen import CARD

ENV = {**os.environ, "SOURCE_DATE_EPOCH": "1700000000", "PYTHONPATH": str(REPO)}
APKG = "dist/deckbuild-sample-1.0.0.apkg"
LOCK = "deckbuild.lock"
CARDS = 1500  # a build of ~1-2 s: long enough to be killed in the middle


@dataclass(frozen=True)
class Versions:
    """The project before an edit was built, and the outputs a full build of the edit gives."""

    edited: Path  # built before the edit, sources edited since: the next build changes outputs
    old: tuple[bytes, bytes]
    new: tuple[bytes, bytes]


def _build(project: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "deckbuild.cli", "build", "-q", "-C", str(project), *extra],
        env=ENV,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _start(project: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "deckbuild.cli", "build", "-q", "-C", str(project)],
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _outputs(project: Path) -> tuple[bytes, bytes]:
    return (project / APKG).read_bytes(), (project / LOCK).read_bytes()


def _temps(project: Path) -> list[Path]:
    return [*project.glob(".*.tmp"), *(project / "dist").glob(".*.tmp")]


@pytest.fixture(scope="module")
def versions(tmp_path_factory: pytest.TempPathFactory) -> Versions:
    base = tmp_path_factory.mktemp("crash")
    project = copy_project("sample", base)
    cards = "".join(CARD.format(id=f"gen-{n:05d}", n=n) for n in range(CARDS))
    (project / "cards" / "many.yaml").write_text(cards)
    assert _build(project).returncode == 0
    old = _outputs(project)
    (project / "cards" / "many.yaml").write_text(cards.replace("Answer 7.", "Answer seven."))
    expected = base / "expected"
    shutil.copytree(project, expected)
    done = _build(expected)
    assert done.returncode == 0, done.stderr
    new = _outputs(expected)
    assert new[0] != old[0] and new[1] != old[1]
    return Versions(project, old, new)


def _assert_valid_package(data: bytes, tmp: Path) -> None:
    """What Anki's importer needs first: a zip whose collection is an intact SQLite file."""
    path = tmp / "check.apkg"
    path.write_bytes(data)
    with zipfile.ZipFile(path) as zf:
        assert zf.testzip() is None
        (tmp / "collection.anki2").write_bytes(zf.read("collection.anki2"))
    conn = sqlite3.connect(tmp / "collection.anki2")
    try:
        assert conn.execute("pragma integrity_check").fetchone() == ("ok",)
        assert conn.execute("select count() from notes").fetchone()[0] > CARDS  # plus the sample's own
    finally:
        conn.close()


def _kill_when(proc: subprocess.Popen[str], ready: Callable[[], bool], limit: float = 60.0) -> None:
    """SIGKILL the build as soon as `ready()` holds (polled tightly), or when it ends."""
    deadline = time.monotonic() + limit
    while proc.poll() is None and time.monotonic() < deadline:
        if ready():
            break
    if proc.poll() is None:
        proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)


def _moments(v: Versions) -> dict[str, Callable[[Path], Callable[[], bool]]]:
    def after(seconds: float) -> Callable[[Path], Callable[[], bool]]:
        def arm(_project: Path) -> Callable[[], bool]:
            start = time.monotonic()
            return lambda: time.monotonic() - start >= seconds

        return arm

    return {
        "after-0.2s": after(0.2),
        "after-0.6s": after(0.6),
        "after-1.0s": after(1.0),
        "temp-file-appears": lambda project: lambda: bool(_temps(project)),
        "record-replaced": lambda project: lambda: (project / LOCK).read_bytes() != v.old[1],
    }


@pytest.mark.parametrize("moment", ["after-0.2s", "after-0.6s", "after-1.0s", "temp-file-appears", "record-replaced"])
def test_killed_build_leaves_previous_or_complete_outputs(versions: Versions, tmp_path: Path, moment: str) -> None:
    project = tmp_path / "project"
    shutil.copytree(versions.edited, project)
    proc = _start(project)
    _kill_when(proc, _moments(versions)[moment](project))
    apkg, lock = _outputs(project)
    assert apkg in (versions.old[0], versions.new[0]), "package is neither the previous nor the new one"
    assert lock in (versions.old[1], versions.new[1]), "record is neither the previous nor the new one"
    assert not (apkg == versions.new[0] and lock == versions.old[1]), "new package written before its record"
    _assert_valid_package(apkg, tmp_path)
    # The next build succeeds, cleans up after the killed one, and gives exactly the new outputs.
    done = _build(project)
    assert done.returncode == 0, done.stderr
    assert _outputs(project) == versions.new
    assert _temps(project) == []


def test_two_builds_at_once(versions: Versions, tmp_path: Path) -> None:
    project = tmp_path / "project"
    shutil.copytree(versions.edited, project)
    first, second = _start(project), _start(project)
    results = [(proc.wait(timeout=120), *proc.communicate()) for proc in (first, second)]
    codes = sorted(code for code, _out, _err in results)
    assert codes in ([0, 0], [0, 3]), results
    for code, out, err in results:
        assert "Traceback" not in out + err
        if code == 3:
            assert "another deckbuild is running in" in err and "wait for it to finish" in err, err
    assert _outputs(project) == versions.new
    _assert_valid_package(versions.new[0], tmp_path)


def test_lock_held_by_another_process_gives_clear_message(versions: Versions, tmp_path: Path) -> None:
    """A build that cannot take the lock touches nothing and says who holds it (exit 3)."""
    project = tmp_path / "project"
    shutil.copytree(versions.edited, project)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from pathlib import Path; from deckbuild.writer import project_lock\n"
            "with project_lock(Path(sys.argv[1])):\n    print('held', flush=True); time.sleep(60)",
            str(project),
        ],
        env=ENV,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        blocked = _build(project)
    finally:
        holder.kill()
        holder.communicate()  # reaps it and closes its pipe
    assert blocked.returncode == 3, blocked.stderr
    assert "another deckbuild is running in" in blocked.stderr
    assert "Traceback" not in blocked.stderr
    assert _outputs(project) == versions.old
    assert _build(project).returncode == 0  # the lock dies with its holder
    assert _outputs(project) == versions.new
