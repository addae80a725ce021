"""benchmarks/stages.py (the per-stage CPU profile of a first build and of one-card edits)
runs end to end on a small deck and accounts for every stage.  No timing is asserted."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_stage_profile_runs_and_lists_every_stage() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "stages.py"), "--size", "300", "--repeat", "2"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = {line.split("|")[1].strip(): line.split("|")[2:4] for line in proc.stdout.splitlines() if line.startswith("| ")}
    for stage in ("load_cards", "validate_cards", "_render", "_stamp", "deck_package", "apply", "total CPU"):
        assert stage in rows, proc.stdout
        assert all(float(cell) >= 0 for cell in rows[stage]), rows[stage]
    assert float(rows["_render"][0]) > 0 and float(rows["deck_package"][1]) > 0  # the stages ran, and were timed
