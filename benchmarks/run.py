"""Measure deckbuild against plain genanki on the shipped deck and synthetic decks (issue 17).

    python benchmarks/run.py [--sizes 10000,100000] [--repeat 3] [--quick] [--shipped DIR]

For each synthetic size it generates a project in the source format (docs/format.md) in a
temp dir -- 70% question/answer cards with Markdown bullets, 30% cloze formula/fact cards
with `{{c1::...}}` deletions in LaTeX, and 3 generated diagrams -- and copies the shipped
deck (the repo's own project, or --shipped DIR) there too, so nothing is written into a
checkout.  Every measurement is a fresh process (`python -m deckbuild.cli ...`: Python
start-up and imports count, as they do for an author):

- first build: no record, no cache, default --jobs (every core); its CPU/wall ratio says
  how many cores it kept busy;
- genanki:     the same notes (count, fields, tags) written with plain genanki, defaults
               only, run in the same pass as the builds it is compared with;
- 1-card edit: `deckbuild build` after changing one card's answer;
- no-op:       `deckbuild build` again with nothing changed;
- warm:        `deckbuild build` after deleting the .apkg (caches kept);
- check:       `deckbuild check`;
- for the shipped deck, a cold build with default jobs against one with --jobs 1, in
  pairs, with the two packages compared byte for byte.

Fast measurements are repeated (--repeat) and the table shows medians; every ratio is
taken pair by pair within one pass (the edit right after a genanki write, the cold build
right after a --jobs 1 one) and the median of those ratios is shown, so a machine whose
speed drifts still compares like with like.  Peak memory is that of the whole process
tree, workers included: the sum of the proportional set sizes (PSS: a page shared by a
forked worker counts once) of the process and its descendants, sampled every 10 ms for the
first second and every 100 ms after.
CPU is user + system seconds of the process and every descendant, the ones it leaves
behind included (the diagram workers' fork server: this process adopts and waits for them).

deckbuild's bytecode is compiled first (into its __pycache__ folders, as an installed
deckbuild has it), so no run spends its time compiling deckbuild's sources.

`--quick` (the test suite's smoke test: tests/test_benchmark.py) measures one small
synthetic deck without diagrams, once each.  Not part of CI's pass/fail: timings depend
on the machine, and the suite asserts none.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import platform
import re
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CARDS_PER_FILE = 500
EPOCH = "1700000000"


# ---------------------------------------------------------------- synthetic projects


def _qa(card_id: str, n: int, topic: str, related: str | None) -> str:
    lines = [
        f"- id: {card_id}",
        f"  question: Why does technique {n} help `step_{n % 97}` converge when the batch is small?",
        "  answer: |",
        f"    - In case {n} it rescales the update by \\( \\sqrt{{1 - \\beta_2^{{{n % 50 + 1}}}}} \\), so early steps stay small.",
        f"    - It keeps **variance** bounded for layer {n % 12}; see *warmup* and `lr={n % 9}e-4`.",
        "    - It costs one extra buffer per parameter.",
    ]
    if n % 3 == 0:
        lines += [
            "  details: |",
            f"    A longer explanation of case {n}: the optimizer state is noisy at first, so the",
            "    effective learning rate is reduced until the moments settle.",
        ]
    lines += [
        f"  difficulty: {('easy', 'medium', 'hard')[n % 3]}",
        f"  topics: [{topic}]",
        f"  source: bench-notes#q{n}",
    ]
    if related:
        lines.append(f"  related: [{related}]")
    return "\n".join(lines)


def _cloze(card_id: str, n: int, of: str) -> str:
    if n % 2:
        text = (
            f"  formula: 'L_{{{n}}} = {{{{c1::\\frac{{1}}{{N}} \\sum_{{i=1}}^{{N}} \\ell(x_i, y_i)}}}}"
            f" + {{{{c2::\\lambda \\lVert w \\rVert_2^2::regulariser}}}}'"
        )
        context = f"  context: Regularised empirical risk, variant {n}"
    else:
        text = f"  fact: 'A good starting value for setting {n} is {{{{c1::\\( \\eta = 3 \\times 10^{{-4}} \\)}}}}.'"
        context = ""
    lines = [f"- id: {card_id}", text]
    if context:
        lines.append(context)
    lines.append(f"  of: {of}")
    return "\n".join(lines)


def diagram_names() -> list[str]:
    """Three of the shipped deck's generators (in the repository's diagrams/), or none if this checkout has none."""
    try:
        from deckbuild.diagrams.registry import project_registry
    except ImportError:
        return []
    return sorted(project_registry(REPO).diagrams)[:3]


def generate(root: Path, count: int, diagrams: list[str]) -> Path:
    """Write a deck project with `count` cards, CARDS_PER_FILE per topic file.

    Every Markdown text is unique (it names its card's number), as in a real deck, so the
    in-build memo of renderings gets no help a real deck would not get.
    """
    (root / "cards").mkdir(parents=True)
    if diagrams:  # the generators they come from: the repository's own files
        shutil.copytree(REPO / "diagrams", root / "diagrams", ignore=shutil.ignore_patterns("__pycache__"))
    (root / "deck.yaml").write_text(
        f"name: Bench {count}\nnamespace: bench-{count}\nversion: 1.0.0\ndescription: Synthetic deck of {count} cards.\n",
        encoding="utf-8",
    )
    files = max(1, (count + CARDS_PER_FILE - 1) // CARDS_PER_FILE)
    made = 0
    for f in range(files):
        chunk: list[str] = []
        last_qa: str | None = None
        topic = f"topic-{f % 40}::sub-{f % 7}"
        for i in range(min(CARDS_PER_FILE, count - made)):
            n = made + i
            # 7 of every 10 are question cards; the first card of a file always is (cloze cards need an `of`).
            if last_qa is None or n % 10 < 7:
                card_id = f"t{f:04d}-q{n:06d}"
                chunk.append(_qa(card_id, n, topic, last_qa if n % 5 == 0 else None))
                if f == 0 and i < len(diagrams):
                    chunk[-1] += f"\n  diagram:\n    name: {diagrams[i]}\n    alt: Generated diagram {diagrams[i]}."
                last_qa = card_id
            else:
                chunk.append(_cloze(f"t{f:04d}-c{n:06d}", n, last_qa))
        made += len(chunk)
        (root / "cards" / f"topic-{f:04d}.yaml").write_text("\n\n".join(chunk) + "\n", encoding="utf-8")
    return root


def edit_one_card(root: Path) -> None:
    """Change one answer in the middle file, as an author fixing a typo would."""
    files = sorted((root / "cards").glob("*.yaml"))
    path = files[len(files) // 2]
    text = path.read_text(encoding="utf-8")
    marker = "  answer: |\n"
    if marker in text:
        text = text.replace(marker, marker + "    - An edited first point.\n", 1)
    else:  # shipped decks write answers on one line, plain or quoted: the edit goes inside the quotes
        text = re.sub(r"(?m)^(  answer: )(['\"]?)", lambda m: m.group(1) + m.group(2) + "Edited. ", text, count=1)
    path.write_text(text, encoding="utf-8")


# ---------------------------------------------------------------- measuring


@dataclass
class Run:
    seconds: float
    cpu: float  # user + system seconds of the process and the descendants it waited for
    peak_mb: float  # the whole tree's peak (sampled PSS sum)
    ok: bool
    output: str = ""


def _children(pid: int) -> list[int]:
    kids: list[int] = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as handle:
                kids += [int(k) for k in handle.read().split()]
    except OSError:
        pass
    return kids


def _pss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as handle:
            for line in handle:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def _tree_pss_kb(root: int) -> int:
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        total += _pss_kb(pid)
        todo += _children(pid)
    return total


def adopt_orphans() -> None:
    """Make the processes a measured build leaves behind (its diagram workers' fork server,
    multiprocessing's resource tracker) this process's children when the build exits, so
    that _reap_orphans can wait for them and their CPU counts (Linux; elsewhere a no-op)."""
    if sys.platform != "linux":
        return
    import ctypes

    pr_set_child_subreaper = 36
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_child_subreaper, 1, 0, 0, 0)


def _reap_orphans(patience: float = 10.0) -> None:
    """Wait for the children adopted since the last run (they exit once the build has)."""
    deadline = time.monotonic() + patience
    while time.monotonic() < deadline:
        try:
            pid, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return  # none left
        if pid == 0:
            time.sleep(0.005)


def run(args: list[str], cwd: Path | None = None, epoch: str = EPOCH) -> Run:
    """Run one fresh process: wall time, CPU of its whole tree, peak memory of its whole tree."""
    env = {**os.environ, "SOURCE_DATE_EPOCH": epoch, "PYTHONPATH": str(REPO)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.Popen(args, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    peak = [0]
    done = threading.Event()

    def sample() -> None:
        # Every 10 ms for the first second (short runs), then every 100 ms: reading a large
        # process's smaps costs milliseconds of CPU, which the measured build would lose.
        began = time.perf_counter()
        while not done.is_set():
            peak[0] = max(peak[0], _tree_pss_kb(proc.pid))
            done.wait(0.01 if time.perf_counter() - began < 1 else 0.1)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    assert proc.stdout is not None
    output = proc.stdout.read().decode(errors="replace")
    proc.wait()
    seconds = time.perf_counter() - start
    done.set()
    sampler.join()
    _reap_orphans()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if peak[0] == 0:  # no /proc (not Linux): the largest single process instead
        peak[0] = after.ru_maxrss
    return Run(seconds, cpu, peak[0] / 1024, proc.returncode == 0, output)


class BuildFailed(Exception):
    pass


def deckbuild(command: str, project: Path, *args: str) -> Run:
    result = run([sys.executable, "-m", "deckbuild.cli", command, "-C", str(project), *args])
    if not result.ok and command == "build":
        raise BuildFailed(f"deckbuild build failed in {project}:\n{result.output[-2000:]}")
    return result


def export_notes(apkg: Path, dest: Path) -> Path:
    """The notes deckbuild wrote (note type, fields, tags) as JSON for the genanki baseline."""
    with zipfile.ZipFile(apkg) as zf:
        db_bytes = zf.read("collection.anki2")
    db_file = dest.with_suffix(".anki2")
    db_file.write_bytes(db_bytes)
    conn = sqlite3.connect(db_file)
    models = json.loads(conn.execute("SELECT models FROM col").fetchone()[0])
    kinds = {int(mid): ("cloze" if m["type"] == 1 else "qa") for mid, m in models.items()}
    field_names = {kind: [f["name"] for f in m["flds"]] for mid, m in models.items() for kind in [kinds[int(mid)]]}
    notes = [
        (kinds[mid], flds.split("\x1f"), tags.split())
        for mid, flds, tags in conn.execute("SELECT mid, flds, tags FROM notes ORDER BY id")
    ]
    conn.close()
    db_file.unlink()
    dest.write_text(
        json.dumps({"fields": field_names["qa"], "cloze_fields": field_names["cloze"], "notes": notes}), encoding="utf-8"
    )
    return dest


@dataclass
class Row:
    label: str
    cards: int
    runs: dict[str, list[Run]] = field(default_factory=dict)
    ratios: dict[str, list[float]] = field(default_factory=dict)
    identical: bool | None = None  # shipped: default jobs and --jobs 1 wrote the same bytes

    def add(self, key: str, result: Run) -> Run:
        self.runs.setdefault(key, []).append(result)
        return result

    def ratio(self, key: str, value: float) -> None:
        self.ratios.setdefault(key, []).append(value)


def _count_cards(project: Path) -> int:
    return sum(1 for p in (project / "cards").glob("*.y*ml") for line in p.open(encoding="utf-8") if line.startswith("- id:"))


def _fresh(project: Path, work: Path, name: str) -> Path:
    """A copy of a project as an author's checkout has it: no outputs, no cache."""
    copy = work / name
    if copy.exists():
        shutil.rmtree(copy)
    shutil.copytree(project, copy, ignore=shutil.ignore_patterns("dist", ".deckbuild-cache"))
    return copy


def measure(label: str, source: Path, work: Path, repeat: int, *, jobs_pairs: bool) -> Row:
    """Every measurement of one deck; `source` is never written."""
    row = Row(label, _count_cards(source))
    say: Callable[[str], None] = lambda what: print(f"[{label}] {what} ...", file=sys.stderr, flush=True)  # noqa: E731
    if jobs_pairs:  # cold builds with every core against --jobs 1, in pairs
        for i in range(repeat):
            say(f"cold build, --jobs 1 then default ({i + 1}/{repeat})")
            one = _fresh(source, work, "cold-1")
            serial = row.add("cold1", deckbuild("build", one, "--jobs", "1"))
            many = _fresh(source, work, "cold-n")
            parallel = row.add("build", deckbuild("build", many))
            row.ratio("jobs", serial.seconds / parallel.seconds)
            same = next((one / "dist").glob("*.apkg")).read_bytes() == next((many / "dist").glob("*.apkg")).read_bytes()
            row.identical = same if row.identical is None else row.identical and same
        project = many
    else:
        say("first build")
        project = _fresh(source, work, "cold-n")
        row.add("build", deckbuild("build", project))
    apkg = next((project / "dist").glob("*.apkg"))
    notes = export_notes(apkg, work / f"{label.replace(' ', '-')}-notes.json")
    genanki_args = [sys.executable, str(REPO / "benchmarks" / "genanki_baseline.py"), str(notes), str(work / "base.apkg")]
    for i in range(repeat):
        say(f"plain genanki, 1-card edit, no-op ({i + 1}/{repeat})")
        base = row.add("genanki", run(genanki_args))
        if not base.ok:
            sys.exit(f"baseline failed:\n{base.output}")
        edit_one_card(project)
        edit = row.add("edit", deckbuild("build", project))
        row.ratio("edit", edit.seconds / base.seconds)
        row.add("noop", deckbuild("build", project))
    if not jobs_pairs:  # the first build against the genanki write just measured
        row.ratio("build", row.runs["build"][0].seconds / statistics.median(r.seconds for r in row.runs["genanki"]))
    else:
        builds = [r.seconds for r in row.runs["build"]]
        row.ratio("build", statistics.median(builds) / statistics.median(r.seconds for r in row.runs["genanki"]))
    say("warm rebuild, check")
    apkg.unlink()
    row.add("warm", deckbuild("build", project))
    row.add("check", deckbuild("check", project))
    return row


# ---------------------------------------------------------------- report


def machine() -> str:
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
        mem_kb = next(int(x.split()[1]) for x in Path("/proc/meminfo").read_text().splitlines() if x.startswith("MemTotal"))
        ram = f"{mem_kb / 1024 / 1024:.1f} GB RAM"
    except (OSError, StopIteration):
        ram = "RAM unknown"
    return f"{os.cpu_count()} cores ({cpu}), {ram}, Python {platform.python_version()}, {platform.system()} {platform.release()}"


def _median(row: Row, key: str) -> Run | None:
    runs = row.runs.get(key)
    if not runs:
        return None
    ordered = sorted(runs, key=lambda r: r.seconds)
    return ordered[(len(ordered) - 1) // 2]  # the median run (the lower one of an even count)


def table(rows: list[Row]) -> str:
    def secs(row: Row, key: str) -> str:
        r = _median(row, key)
        return f"{r.seconds:.2f}" if r else "–"

    def busy(row: Row, key: str) -> str:
        r = _median(row, key)
        return f"{r.cpu / r.seconds:.2f}" if r and r.seconds else "–"

    def mb(row: Row, key: str) -> str:
        r = max(row.runs.get(key, []), key=lambda r: r.peak_mb, default=None)
        return f"{r.peak_mb:.0f}" if r else "–"

    def ratio(row: Row, key: str) -> str:
        values = row.ratios.get(key)
        return f"{statistics.median(values):.2f}×" if values else "–"

    out = [
        "| deck | cards | first build s | CPU/wall | peak MB (tree) | plain genanki s | genanki peak MB "
        "| first build / genanki | 1-card edit s | CPU/wall | edit / genanki | no-op s | warm rebuild s | check s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        out.append(
            f"| {row.label} | {row.cards} | {secs(row, 'build')} | {busy(row, 'build')} | {mb(row, 'build')} "
            f"| {secs(row, 'genanki')} | {mb(row, 'genanki')} | {ratio(row, 'build')} | {secs(row, 'edit')} "
            f"| {busy(row, 'edit')} | {ratio(row, 'edit')} | {secs(row, 'noop')} | {secs(row, 'warm')} | {secs(row, 'check')} |"
        )
    cold = [row for row in rows if "cold1" in row.runs]
    if cold:
        out += [
            "",
            "| deck | cold build, every core s | CPU/wall | peak MB (tree) | cold build, --jobs 1 s | CPU/wall "
            "| peak MB | --jobs 1 / every core | same bytes |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---|",
        ]
        for row in cold:
            same = "yes" if row.identical else "**no**"
            out.append(
                f"| {row.label} | {secs(row, 'build')} | {busy(row, 'build')} | {mb(row, 'build')} | {secs(row, 'cold1')} "
                f"| {busy(row, 'cold1')} | {mb(row, 'cold1')} | {ratio(row, 'jobs')} | {same} |"
            )
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000", help="comma-separated card counts of the synthetic decks")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each fast measurement and cold pair (medians shown)")
    parser.add_argument("--quick", action="store_true", help="a smoke test: 300 cards without diagrams, one run each")
    parser.add_argument("--shipped", type=Path, default=REPO, help="the shipped deck project (copied, never written)")
    args = parser.parse_args()
    sizes = [300] if args.quick else [int(x) for x in args.sizes.split(",") if x.strip()]
    repeat = 1 if args.quick else max(1, args.repeat)
    diagrams = [] if args.quick else diagram_names()
    adopt_orphans()
    # deckbuild's bytecode, as an installed deckbuild has it (pip compiles at install, and
    # Python caches it on first import unless PYTHONDONTWRITEBYTECODE is set, as in some
    # sandboxes): a measured run must not spend its time compiling deckbuild's sources.
    compileall.compile_dir(REPO / "deckbuild", quiet=1)
    load_before = os.getloadavg()[0]
    notes = []
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="deckbuild-bench-") as tmp:
        work = Path(tmp)
        shipped = args.shipped.resolve()
        if (shipped / "cards").is_dir() and any((shipped / "cards").glob("*.y*ml")):
            copy = work / "shipped"
            keep = {"deck.yaml", "cards", "media", "diagrams", "deckbuild.lock", "releases"}
            shutil.copytree(
                shipped, copy, ignore=lambda folder, names: [] if Path(folder) != shipped else [n for n in names if n not in keep]
            )
            try:
                rows.append(measure("shipped deck", copy, work / "shipped-runs", repeat, jobs_pairs=True))
            except BuildFailed as exc:  # e.g. its cards use a feature this checkout lacks
                notes.append(f"the shipped deck in {shipped} does not build with this checkout: {exc}")
        else:
            notes.append(f"{shipped} has no cards/: the shipped-deck row is left out (pass --shipped DIR).")
        for size in sizes:
            project = generate(work / f"bench-{size}", size, diagrams)
            rows.append(measure(f"synthetic {size}", project, work / f"runs-{size}", repeat, jobs_pairs=False))
    print(f"Machine: {machine()}; load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after\n")
    print(table(rows))
    print(
        f"\nWall seconds, each a fresh process, median of {repeat}; CPU/wall = CPU seconds of the whole process tree over"
        " wall seconds (2.0 = two cores busy); ratios are medians of pairs measured back to back. First build = no"
        " record, no cache, every core; warm rebuild = the .apkg deleted, caches kept. Peak MB (tree) = the sampled"
        " peak of the summed PSS of the process and its workers (every 10 ms for 1 s, then every 100 ms)."
    )
    for note in notes:
        print(f"\nNote: {note}")


if __name__ == "__main__":
    main()
