"""How a `deckbuild` process ends (cli.run, cli.end_process), with real processes.

A one-off command ends with os._exit once its exit handlers have run and its output is
flushed, leaving its objects to the system.  What the user meets must not change: every
line of output, even a long one through a pipe; the exit status; the exit handlers' work
(the diagram workers' server is stopped by one); and a thread still running is waited for.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import REPO, copy_project

ENV = {**os.environ, "PYTHONPATH": str(REPO)}

# Runs cli.run() as the `deckbuild` script does, with an exit handler and, if asked, a thread
# that is still working when the command returns.
_SCRIPT = """
import atexit, sys, threading, time
from pathlib import Path
marks = Path(sys.argv[1])
atexit.register(lambda: marks.joinpath('exit-handler').write_text('ran'))
if sys.argv[2] == 'thread':
    def work():
        time.sleep(2)  # longer than the build
        marks.joinpath('thread').write_text('done')
    threading.Thread(target=work).start()
sys.argv = ['deckbuild', *sys.argv[3:]]
from deckbuild.cli import run
run()
"""


def _run(marks: Path, thread: str, *args: str) -> subprocess.CompletedProcess[str]:
    marks.mkdir(exist_ok=True)
    return subprocess.run(
        [sys.executable, "-c", _SCRIPT, str(marks), thread, *args],
        env=ENV,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )


def _warned_project(tmp_path: Path) -> Path:
    """The sample deck with 400 cards more, each of which draws a warning (a fact without context)."""
    project = copy_project("sample", tmp_path / "deck")
    facts = "\n".join(
        f"- id: exit-fact-{i:03d}\n  fact: 'Setting {i} starts at {{{{c1::value {i}}}}}.'\n"
        "  difficulty: easy\n  topics: [exit::facts]\n"
        for i in range(400)
    )
    (project / "cards" / "exit-facts.yaml").write_text(facts, encoding="utf-8")
    return project


def test_a_build_prints_every_line_through_a_pipe_runs_exit_handlers_and_keeps_its_status(tmp_path: Path) -> None:
    project = _warned_project(tmp_path)
    built = _run(tmp_path / "built", "none", "build", "-C", str(project))
    assert built.returncode == 0, built.stderr
    warnings = [line for line in built.stderr.splitlines() if "E416" in line and "exit-fact-" in line]
    assert len(warnings) == 400  # ~60 KB of warnings, more than a pipe's buffer, none lost
    assert built.stderr.splitlines()[-1] == f"{built.stderr.count('warning:')} warning(s)"
    assert built.stdout.startswith("wrote ") and built.stdout.endswith("(407 notes changed since the last build)\n")
    assert (tmp_path / "built" / "exit-handler").read_text() == "ran"

    (project / "cards" / "exit-facts.yaml").write_text("- id: [broken\n", encoding="utf-8")
    failed = _run(tmp_path / "failed", "none", "build", "-C", str(project))
    assert failed.returncode == 1
    assert "exit-facts.yaml:2:1: E100" in failed.stderr and failed.stdout == ""
    assert failed.stderr.endswith("nothing was written\n")
    assert (tmp_path / "failed" / "exit-handler").read_text() == "ran"


def test_a_command_with_a_thread_still_running_waits_for_it(tmp_path: Path) -> None:
    project = copy_project("sample", tmp_path / "deck")
    built = _run(tmp_path / "marks", "thread", "build", "-q", "-C", str(project))
    assert built.returncode == 0, built.stderr
    assert (tmp_path / "marks" / "thread").read_text() == "done"
    assert (tmp_path / "marks" / "exit-handler").read_text() == "ran"
