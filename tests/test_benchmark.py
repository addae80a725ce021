"""benchmarks/run.py --quick runs end to end and prints its tables (a smoke test).

No timing is asserted, ever: the numbers depend on the machine and its load.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_quick_benchmark_prints_both_tables_with_identical_cold_builds() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "run.py"), "--quick", "--shipped", str(ROOT / "tests/projects/sample")],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    first = lines[lines.index("") + 1 :]  # after the machine line: the main table, up to a blank line
    first = first[: first.index("")]
    rows = {line.split("|")[1].strip(): [cell.strip() for cell in line.split("|")[2:-1]] for line in first[2:]}
    shipped, synthetic = rows["shipped deck"], rows["synthetic 300"]
    assert shipped[0] == "7" and synthetic[0] == "300"  # cards
    for cells in (shipped, synthetic):
        assert cells[6].endswith("×") and cells[9].endswith("×")  # first build / genanki, edit / genanki
        assert all(cell not in ("", "–") for cell in cells), cells
    # The second table (the shipped deck's cold builds, every core against --jobs 1): same bytes.
    cold = [line for line in lines if line.startswith("| shipped deck |")]
    assert len(cold) == 2 and cold[1].rstrip(" |").endswith("yes"), cold


_ORPHAN = """
import subprocess, sys
# Leave a child behind that keeps the CPU busy after this process has exited, as the
# diagram workers' fork server does, and let it say how much CPU it used.
subprocess.Popen([sys.executable, "-c", '''
import sys, time
start = time.process_time()
while time.process_time() - start < 0.3:
    pass
open(sys.argv[1], "w").write(repr(time.process_time()))
''', sys.argv[1]])
"""

_MEASURE = """
import sys
sys.path.insert(0, sys.argv[1])
import run
run.adopt_orphans()
result = run.run([sys.executable, "-c", sys.argv[2], sys.argv[3]])
print(result.cpu)
"""


def test_cpu_counts_the_processes_a_build_leaves_behind(tmp_path: Path) -> None:
    if not sys.platform.startswith("linux"):
        return
    report = tmp_path / "orphan-cpu"
    proc = subprocess.run(
        [sys.executable, "-c", _MEASURE, str(ROOT / "benchmarks"), _ORPHAN, str(report)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert float(proc.stdout) >= float(report.read_text())  # the orphan finished, was waited for, and counted


def test_quick_serve_benchmark_times_a_save_and_a_broken_save_until_the_page_or_overlay_holds_it() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "serve.py"), "--quick", "--shipped", str(ROOT / "tests/projects/sample")],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = [line.split("|")[1:-1] for line in proc.stdout.splitlines() if line.startswith("| ") and "---" not in line]
    assert [cells[0].strip() for cells in rows[1:]] == ["shipped deck", "synthetic 300"], proc.stdout
    for cells in rows[1:]:
        assert float(cells[3]) > 0 and float(cells[5]) > 0, cells  # a save was seen on the page; memory sampled
        assert float(cells[6]) > 0 and float(cells[7]) > 0, cells  # the broken save's overlay (as check says it), then its fix
