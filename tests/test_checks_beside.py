"""The deck-wide checks in a forked child beside the build (deckbuild/beside.py, deck_checks.py).

Real `deckbuild build` processes, rebuilding small decks with the card threshold lowered to
0 in the process (a large deck's build is what the benchmark measures; what matters here is
that the child's checks decide exactly as the build's own would).  Each process records which
process ran the checks, so every test knows the child did the work, or the build did.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from conftest import write_tree

from deckbuild import beside
from deckbuild.jobs import default_jobs

pytestmark = pytest.mark.skipif(
    sys.platform != "linux" or default_jobs() < 2, reason="the checks are forked on Linux, with two cores or more"
)

ROOT = Path(__file__).resolve().parents[1]

DECK = "name: Beside\nnamespace: beside-test\nversion: 1.0.0\ndescription: Checks beside the build.\n"

# Run as `python -c`: the threshold lowered, and every call of the checks recorded with the
# process that made it; CHILD_FAILS makes the child (not the build) fail as it starts checking.
RUNNER = """
import os, sys
import deckbuild.deck_checks as checks
checks.MIN_CARDS_BESIDE = 0
real, main = checks.deck_checks, os.getpid()
def recorded(*args, **kwargs):
    with open(os.environ["CHECKS_LOG"], "a") as log:
        log.write("build\\n" if os.getpid() == main else "child\\n")
    if os.getpid() != main and os.environ.get("CHILD_FAILS") == "exit":
        os._exit(3)
    if os.getpid() != main and os.environ.get("CHILD_FAILS") == "raise":
        raise RuntimeError("the child fails")
    return real(*args, **kwargs)
checks.deck_checks = recorded
sys.argv = ["deckbuild", *sys.argv[1:]]
from deckbuild.cli import run
run()
"""


def _card(n: int, extra: str = "") -> str:
    return (
        f"- id: card-{n}\n"
        f"  question: What does step {n} of the warm-up do to the learning rate?\n"
        f"  answer: It raises it by one more increment, the {n}th of the schedule.\n"
        "  difficulty: easy\n"
        "  topics: [schedules::warmup]\n" + extra
    )


def _project(root: Path, cards: dict[str, str]) -> Path:
    return write_tree(root, {"deck.yaml": DECK, **cards})


def _build(project: Path, *args: str, child_fails: str = "") -> tuple[subprocess.CompletedProcess[str], list[str]]:
    log = project.parent / f"{project.name}-checks.log"
    log.unlink(missing_ok=True)
    env = {
        **os.environ,
        "SOURCE_DATE_EPOCH": "1700000000",
        "PYTHONPATH": str(ROOT),
        "CHECKS_LOG": str(log),
        "CHILD_FAILS": child_fails,
    }
    proc = subprocess.run(
        [sys.executable, "-c", RUNNER, "build", "-C", str(project), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return proc, log.read_text().split() if log.exists() else []


def _outputs(project: Path) -> dict[str, bytes]:
    return {
        p.relative_to(project).as_posix(): p.read_bytes()
        for p in [*project.glob("dist/*"), project / "deckbuild.lock"]
        if p.is_file()
    }


VALID = {
    "cards/a.yaml": "\n".join(_card(n) for n in range(6)),
    # A learning-lint warning (a list of four points to recall) and a reference.
    "cards/b.yaml": _card(6, "  related: [card-1]\n")
    + "\n"
    + _card(7).replace(
        "It raises it by one more increment, the 7th of the schedule.",
        "|\n    - first point\n    - second point\n    - third point\n    - fourth point",
    ),
}


EDITED = {"cards/a.yaml": VALID["cards/a.yaml"].replace("the 3th of the schedule", "the third of the schedule")}


def _built(root: Path) -> Path:
    """A project of the VALID cards, built once: a first build, whose cards were all parsed,
    checks them itself (beside.py's child would copy the pages of its fullest heap)."""
    project = _project(root, VALID)
    first, ran = _build(project)
    assert first.returncode == 0 and ran == ["build"], first.stderr
    return project


def test_a_rebuild_checked_beside_gives_the_build_and_warnings_of_one_checked_in_it(tmp_path: Path) -> None:
    here, there = _built(tmp_path / "here"), _built(tmp_path / "there")
    write_tree(here, EDITED)
    write_tree(there, EDITED)

    alone, ran_alone = _build(here, "--jobs", "1")
    forked, ran_forked = _build(there)

    assert alone.returncode == 0 and forked.returncode == 0, alone.stderr + forked.stderr
    assert ran_alone == ["build"] and ran_forked == ["child"]  # the child checked, the build did not
    assert "warning" in alone.stderr  # the checks found something to report
    assert forked.stderr == alone.stderr
    assert forked.stdout.replace(str(there), "<project>") == alone.stdout.replace(str(here), "<project>")
    assert _outputs(there) == _outputs(here) and _outputs(here)


@pytest.mark.parametrize(
    "cards",
    [
        {"cards/dup.yaml": _card(1)},  # E108: card-1 twice
        {"cards/ref.yaml": _card(20, "  related: [card-99]\n")},  # E110: a dangling reference
        {"cards/guid.yaml": _card(21, "  guid: shared-guid\n") + "\n" + _card(22, "  guid: shared-guid\n")},  # E222
    ],
    ids=["duplicate-id", "dangling-reference", "shared-guid"],
)
def test_errors_found_beside_fail_the_build_as_before_and_write_nothing(tmp_path: Path, cards: dict[str, str]) -> None:
    here, there = _built(tmp_path / "here"), _built(tmp_path / "there")
    before = _outputs(there)
    write_tree(here, cards)
    write_tree(there, cards)

    alone, ran_alone = _build(here, "--jobs", "1")
    forked, ran_forked = _build(there)

    assert ran_alone == ["build"] and ran_forked == ["child"]
    assert alone.returncode == forked.returncode == 1
    assert forked.stderr == alone.stderr and " E" in alone.stderr, alone.stderr
    assert _outputs(there) == before


def test_the_checks_errors_come_before_a_later_stage_refusal_and_otherwise_it_stands(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    results = {}
    for name, cards in (("broken", {"cards/dup.yaml": _card(1)}), ("valid", EDITED)):
        for jobs in ("1", "default"):
            project = _built(tmp_path / f"{name}-{jobs}")
            write_tree(project, cards)
            shutil.rmtree(project / "dist")
            (project / "dist").symlink_to(outside)  # E112, raised by the stages after the checks
            results[name, jobs] = _build(project, *(["--jobs", jobs] if jobs == "1" else []))
    for name, code in (("broken", "E108"), ("valid", "E112")):
        (alone, ran_alone), (forked, ran_forked) = results[name, "1"], results[name, "default"]
        assert ran_alone == ["build"] and ran_forked == ["child"]
        assert forked.returncode == alone.returncode != 0
        assert forked.stderr == alone.stderr and code in alone.stderr, alone.stderr
    assert "E112" not in results["broken", "default"][0].stderr
    assert not any(outside.iterdir())


@pytest.mark.parametrize("how", ["exit", "raise"])
def test_a_failed_child_costs_only_time(tmp_path: Path, how: str) -> None:
    here, there = _built(tmp_path / "here"), _built(tmp_path / "there")
    write_tree(here, {"cards/dup.yaml": _card(1)})
    write_tree(there, {"cards/dup.yaml": _card(1)})

    alone, _ran = _build(here, "--jobs", "1")
    forked, ran = _build(there, child_fails=how)

    assert ran == ["child", "build"]  # the child failed, and the build checked itself
    assert forked.returncode == alone.returncode == 1
    assert forked.stderr == alone.stderr and "E108" in alone.stderr


def test_a_fork_is_refused_while_another_thread_runs() -> None:
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert beside.start(lambda: 1) is None
    finally:
        stop.set()
        other.join()


UNIT = """
import os, threading
from deckbuild import beside
started = beside.start(lambda: (os.getpid(), list(range(100_000))))
child, numbers = started.result()
assert child != os.getpid() and numbers == list(range(100_000)), child  # more than a pipe holds at once
slow = beside.start(lambda: threading.Event().wait(60))
slow.cancel()
try:
    os.waitpid(slow._pid, os.WNOHANG)
except ChildProcessError:
    print("gone")
import sys
sys.stderr.write("buffered, not flushed")  # the child leaves by os._exit: never written twice
child = beside.start(lambda: 1)
assert child.result() == 1
"""


def test_the_childs_result_comes_back_once_and_a_cancelled_child_is_gone() -> None:
    # In a process of its own: a test process may have threads of its own (pytest-xdist's).
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # stderr buffered, as by default
    proc = subprocess.run(
        [sys.executable, "-c", UNIT], env={**env, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0 and proc.stdout == "gone\n", proc.stderr
    assert proc.stderr == "buffered, not flushed"
