"""`deckbuild build --jobs N`: diagrams drawn in worker processes give the same package.

Real processes throughout (`python -m deckbuild.cli build`), on a small project with
four diagrams, drawn by one worker (--jobs 1) or two.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import copy_project, write_tree

ROOT = Path(__file__).resolve().parents[1]

# Cheap generators (a few tenths of a second each).
PICTURES = ["grad-clipping", "warmup-cosine", "lr-batch-scaling", "loss-scaling"]


def _card(n: int, name: str, params: str = "") -> str:
    return (
        f"- id: picture-{n}\n"
        f"  question: What does picture {n} show?\n"
        "  answer: A generated diagram.\n"
        "  difficulty: easy\n"
        "  topics: [diagrams::parallel]\n"
        "  diagram:\n"
        f"    name: {name}\n"
        f"    alt: Diagram {name}.\n" + (f"    params: {params}\n" if params else "")
    )


def _build(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SOURCE_DATE_EPOCH": "1700000000", "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "deckbuild.cli", "build", "-C", str(project), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_parallel_and_serial_builds_write_the_same_package(tmp_path: Path) -> None:
    serial = copy_project("sample", tmp_path / "serial")
    write_tree(serial, {"cards/pictures.yaml": "\n".join(_card(n, name) for n, name in enumerate(PICTURES))})
    parallel = tmp_path / "parallel" / "sample"
    shutil.copytree(serial, parallel)

    one = _build(serial, "--jobs", "1")
    two = _build(parallel, "--jobs", "2")
    assert one.returncode == 0 and two.returncode == 0, one.stderr + two.stderr
    # Progress is reported in source order either way.
    assert [ln for ln in one.stderr.splitlines() if "rendering diagram" in ln] == [
        ln for ln in two.stderr.splitlines() if "rendering diagram" in ln
    ]
    (a,) = (serial / "dist").glob("*.apkg")
    (b,) = (parallel / "dist").glob("*.apkg")
    assert a.read_bytes() == b.read_bytes()
    assert (serial / "deckbuild.lock").read_bytes() == (parallel / "deckbuild.lock").read_bytes()


def test_failing_generators_are_reported_at_once_in_source_order(tmp_path: Path) -> None:
    project = copy_project("sample", tmp_path)
    cards = [
        _card(0, "label-smoothing", "{classes: 0}"),
        _card(1, "grad-clipping"),
        _card(2, "zero-memory", "{gpus: 0}"),
        _card(3, "warmup-cosine"),
    ]
    write_tree(project, {"cards/pictures.yaml": "\n".join(cards)})
    for jobs in ("1", "2"):
        result = _build(project, "--jobs", jobs)
        assert result.returncode == 1
        assert "Traceback" not in result.stderr
        lines = [ln for ln in result.stderr.splitlines() if " E131 " in ln]
        assert len(lines) == 2, result.stderr
        assert lines[0].startswith("cards/pictures.yaml:7:5: E131 card 'picture-0': diagram 'label-smoothing': ")
        assert lines[1].startswith("cards/pictures.yaml:26:5: E131 card 'picture-2': diagram 'zero-memory': ")
        assert "ZeroDivisionError" in lines[1]
        assert not (project / "dist").exists()


def test_jobs_must_be_positive(tmp_path: Path) -> None:
    result = _build(copy_project("sample", tmp_path), "--jobs", "0")
    assert result.returncode == 2
    assert "'--jobs': 0 is not in the range x>=1" in result.stderr
