"""Where a build's time goes, stage by stage: the profile behind issue 17's remaining gap.

    python benchmarks/stages.py [--size 10000] [--repeat 3] [--shipped]

Generates the synthetic deck of benchmarks/run.py (or copies the shipped deck) into a temp
folder, then runs in this process, each through plan() and apply() as `deckbuild build`
does: a first build, and --repeat one-card edits (benchmarks/run.py's edit, each adding a
line to the same answer, as benchmarks/run.py's edits do).  Every stage function of plan.py is wrapped by a timer of
this process's CPU seconds, and Python's start-up and the imports an edit needs are timed
in a fresh process.  The table shows, per stage, the CPU seconds of the first build and
the median of the edits.

Only this process is timed: a first build's parse and diagram workers are not (their
wall-clock share is the first build's "waiting for workers" row).  For wall-clock ratios
against plain genanki, use benchmarks/run.py.
"""

from __future__ import annotations

import argparse
import compileall
import contextlib
import functools
import gc
import importlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import run as bench

# (module, function): the stages plan() runs, in order; whatever is not in one is "other".
STAGES = (
    ("deckbuild.incremental.uptodate", "inputs_fingerprint"),
    ("deckbuild.sources", "load_cards"),
    ("deckbuild.release.record", "load_record"),
    ("deckbuild.validate", "validate_cards"),
    ("deckbuild.notetypes.fields", "check_guids"),
    ("deckbuild.release.identity", "check_identity"),
    ("deckbuild.figures", "figures"),
    ("deckbuild.plan", "_render"),
    ("deckbuild.plan", "_stamp"),
    ("deckbuild.plan", "deck_package"),
    ("deckbuild.apply", "apply"),
)
WAITING = "waiting for workers (wall - CPU)"


class Timers:
    """CPU seconds spent in each wrapped function (not counting a wrapped callee twice)."""

    def __init__(self) -> None:
        self.spent: Counter[str] = Counter()
        self._depth = 0

    def wrap(self, module: str, name: str) -> None:
        mod = importlib.import_module(module)
        real: Callable[..., Any] = getattr(mod, name)

        @functools.wraps(real)
        def timed(*args: Any, **kwargs: Any) -> Any:
            if self._depth:
                return real(*args, **kwargs)
            self._depth += 1
            start = time.process_time()
            try:
                return real(*args, **kwargs)
            finally:
                self.spent[name] += time.process_time() - start
                self._depth -= 1

        setattr(mod, name, timed)


def _build(project: Path, timers: Timers) -> dict[str, float]:
    from deckbuild.apply import apply  # the wrapped one: imported after Timers.wrap
    from deckbuild.plan import plan

    timers.spent.clear()
    wall, cpu = time.perf_counter(), time.process_time()
    planned = plan(project, "build", force=False)
    apply(planned)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    row = dict(timers.spent)
    row["other (in plan)"] = cpu - sum(row.values())
    row[WAITING] = max(0.0, wall - cpu)
    row["total CPU"] = cpu
    return row


@contextlib.contextmanager
def _project(size: int, shipped: bool) -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="deckbuild-stages-") as tmp:
        root = Path(tmp) / "deck"
        if shipped:
            shutil.copytree(bench.REPO, root, ignore=shutil.ignore_patterns(".git", "dist", ".deckbuild-cache", "tests"))
        else:
            bench.generate(root, size, bench.diagram_names())
        yield root


def _startup() -> float:
    """CPU seconds of a fresh interpreter importing what an edit rebuild imports."""
    code = (
        "import time, resource\n"
        "import deckbuild.cli, deckbuild.plan, deckbuild.apply, deckbuild.sources, deckbuild.validate, "
        "deckbuild.incremental.cache, deckbuild.notes, deckbuild.release.identity, deckbuild.notetypes.fields, "
        "deckbuild.apkg.package, deckbuild.figures, deckbuild.diagrams\n"
        "u = resource.getrusage(resource.RUSAGE_SELF)\n"
        "print(u.ru_utime + u.ru_stime)\n"
    )
    runs = [
        float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout) for _ in range(3)
    ]
    return statistics.median(runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=10000, help="cards of the synthetic deck")
    parser.add_argument("--repeat", type=int, default=3, help="one-card edits to time (median shown)")
    parser.add_argument("--shipped", action="store_true", help="the shipped deck instead of a synthetic one")
    args = parser.parse_args()
    # As benchmarks/run.py does: the start-up row times imports, not compiling deckbuild's
    # sources (which a process under PYTHONDONTWRITEBYTECODE would do every time).
    compileall.compile_dir(bench.REPO / "deckbuild", quiet=1)
    # As `deckbuild` runs a command (cli.run): without the cycle collector, whose first sweep
    # after plan()'s stages would otherwise land in the "other" row (0.8 s at 100k cards).
    gc.disable()
    timers = Timers()
    for module, name in STAGES:
        timers.wrap(module, name)
    with _project(args.size, args.shipped) as root:
        first = _build(root, timers)
        edits = []
        for _ in range(args.repeat):
            bench.edit_one_card(root)  # a new line in one answer each time: one changed card, a file never parsed before
            edits.append(_build(root, timers))
    startup = _startup()
    label = "shipped deck" if args.shipped else f"synthetic {args.size}"
    names = [name for _m, name in STAGES] + ["other (in plan)", WAITING, "total CPU"]
    print(f"CPU seconds per stage, {label} (edit: median of {args.repeat}); Python start-up and imports: {startup:.3f}\n")
    print("| stage | first build | 1-card edit |")
    print("|---|---:|---:|")
    for name in names:
        edit = statistics.median(e.get(name, 0.0) for e in edits) if edits else 0.0
        print(f"| {name} | {first.get(name, 0.0):.3f} | {edit:.3f} |")


if __name__ == "__main__":
    main()
