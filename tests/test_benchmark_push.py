"""benchmarks/push.py --quick runs end to end: a push and a plain import of the same package,
both updating exactly the edited notes, and prints its table (a smoke test).

No timing is asserted, ever: the numbers depend on the machine and its load.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_quick_push_benchmark_prints_its_row() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "push.py"), "--quick", "--shipped", str(ROOT / "tests/projects/sample")],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:] + proc.stdout[-3000:]
    (row,) = [line for line in proc.stdout.splitlines() if line.startswith("| shipped deck |")]
    cells = [cell.strip() for cell in row.split("|")[2:-1]]
    assert cells[:2] == ["7", "5"]  # cards, changed notes
    assert cells[-1].endswith("×") and all(cell not in ("", "–") for cell in cells), cells
