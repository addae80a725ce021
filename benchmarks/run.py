"""Measure where deckbuild's time goes on synthetic decks of 1k-100k cards (issue 9).

    python benchmarks/run.py [--sizes 1000,10000,100000] [--quick] [--shipped DIR]

For each size it generates a project in the source format (docs/format.md) in a temp dir
-- 70% question/answer cards with Markdown bullets, 30% cloze formula/fact cards with
`{{c1::...}}` deletions in LaTeX, and 3 generated diagrams when deckbuild.diagrams exists --
then runs every measurement as a fresh `python -m deckbuild.cli ...` process (so Python
start-up and imports count, as they do for an author) and reads that process's own peak
RSS from os.wait4:

- build:     a first build (no record, no cache)
- baseline:  the same notes (count, fields, tags) written with plain genanki, defaults only
- no-op:     `deckbuild build` again with nothing changed
- 1 edit:    `deckbuild build` after changing one card's answer
- warm:      `deckbuild build` after deleting the .apkg (caches kept, e.g. after a clean)
- check:     `deckbuild check` on the edited project

The shipped deck (the repo's own project, or --shipped DIR) is copied to the temp dir
first, so the benchmark never writes into a checkout.  It prints a Markdown table.  Not
part of the test suite or CI's pass/fail: timings depend on the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CARDS_PER_FILE = 500
EPOCH = "1700000000"
REPEAT = 3  # the fast measurements (no-op, one edit) are repeated; the table shows the best


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
    """Three registered diagram generators, or none if this checkout has no diagrams yet."""
    try:
        from deckbuild import diagrams  # type: ignore[attr-defined]
    except ImportError:
        return []
    return sorted(diagrams.REGISTRY)[:3]


def generate(root: Path, count: int, diagrams: list[str]) -> Path:
    """Write a deck project with `count` cards, CARDS_PER_FILE per topic file.

    Every Markdown text is unique (it names its card's number), as in a real deck, so the
    in-build memo of renderings gets no help a real deck would not get.
    """
    (root / "cards").mkdir(parents=True)
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
    else:  # shipped decks may write answers on one line
        text = text.replace("  answer: ", "  answer: Edited. ", 1)
    path.write_text(text, encoding="utf-8")


# ---------------------------------------------------------------- measuring


@dataclass
class Run:
    seconds: float
    peak_mb: float
    ok: bool
    output: str = ""
    cpu: float = 0.0  # user + system seconds of the process: what wall time is on an idle machine


def run(args: list[str], cwd: Path | None = None) -> Run:
    """Run one fresh process; its wall time and its own peak RSS (not the max over all children)."""
    env = {**os.environ, "SOURCE_DATE_EPOCH": EPOCH, "PYTHONPATH": str(REPO)}
    start = time.perf_counter()
    proc = subprocess.Popen(args, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert proc.stdout is not None
    output = proc.stdout.read().decode(errors="replace")
    _pid, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    return Run(seconds, usage.ru_maxrss / 1024, proc.returncode == 0, output, usage.ru_utime + usage.ru_stime)


def best(runs: list[Run]) -> Run:
    """The fastest of repeated runs: the least disturbed by other load on the machine."""
    return min(runs, key=lambda r: r.seconds)


class BuildFailed(Exception):
    pass


def deckbuild(command: str, project: Path) -> Run:
    result = run([sys.executable, "-m", "deckbuild.cli", command, "-C", str(project)])
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
    runs: dict[str, Run] = field(default_factory=dict)


def measure(label: str, project: Path, work: Path, *, baseline: bool = True) -> Row:
    cards = sum(1 for p in (project / "cards").glob("*.y*ml") for line in p.open(encoding="utf-8") if line.startswith("- id:"))
    row = Row(label, cards)
    print(f"[{label}] build ...", file=sys.stderr, flush=True)
    row.runs["build"] = deckbuild("build", project)
    apkg = next((project / "dist").glob("*.apkg"))
    if baseline:
        print(f"[{label}] plain genanki baseline ...", file=sys.stderr, flush=True)
        notes = export_notes(apkg, work / f"{project.name}-notes.json")
        row.runs["baseline"] = run(
            [
                sys.executable,
                str(REPO / "benchmarks" / "genanki_baseline.py"),
                str(notes),
                str(work / f"{project.name}-base.apkg"),
            ]
        )
        if not row.runs["baseline"].ok:
            sys.exit(f"baseline failed:\n{row.runs['baseline'].output}")
    print(f"[{label}] no-op rebuild, one-card edit, warm rebuild, check ...", file=sys.stderr, flush=True)
    row.runs["noop"] = best([deckbuild("build", project) for _ in range(REPEAT)])
    edits = []
    for _ in range(REPEAT):
        edit_one_card(project)
        edits.append(deckbuild("build", project))
    row.runs["edit"] = best(edits)
    apkg.unlink()
    row.runs["warm"] = deckbuild("build", project)
    row.runs["check"] = deckbuild("check", project)
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


def table(rows: list[Row]) -> str:
    def s(row: Row, key: str) -> str:
        r = row.runs.get(key)
        return f"{r.seconds:.2f} ({r.cpu:.2f})" if r else "–"

    def mb(row: Row, key: str) -> str:
        r = row.runs.get(key)
        return f"{r.peak_mb:.0f}" if r else "–"

    out = [
        "| deck | cards | build s | build peak MB | plain genanki s | genanki peak MB | build / genanki "
        "| no-op rebuild s | 1-card edit s | warm rebuild s | check s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        base = row.runs.get("baseline")
        ratio = f"{row.runs['build'].seconds / base.seconds:.2f}×" if base else "–"
        out.append(
            f"| {row.label} | {row.cards} | {s(row, 'build')} | {mb(row, 'build')} | {s(row, 'baseline')} | {mb(row, 'baseline')} "
            f"| {ratio} | {s(row, 'noop')} | {s(row, 'edit')} | {s(row, 'warm')} | {s(row, 'check')} |"
        )
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000", help="comma-separated card counts")
    parser.add_argument("--quick", action="store_true", help="only 1000 cards and the shipped deck")
    parser.add_argument("--shipped", type=Path, default=REPO, help="the shipped deck project (copied, never written)")
    args = parser.parse_args()
    sizes = [1000] if args.quick else [int(x) for x in args.sizes.split(",") if x.strip()]
    diagrams = diagram_names()
    load_before = os.getloadavg()[0]
    notes = []
    if not diagrams:
        notes.append("deckbuild.diagrams is not in this checkout: the synthetic decks have no diagrams.")
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="deckbuild-bench-") as tmp:
        work = Path(tmp)
        shipped = args.shipped.resolve()
        if (shipped / "cards").is_dir() and any((shipped / "cards").glob("*.y*ml")):
            copy = work / "shipped"
            shutil.copytree(shipped, copy, ignore=shutil.ignore_patterns("dist", ".deckbuild-cache", ".git", "*.apkg"))
            for extra in [
                p for p in copy.iterdir() if p.name not in {"deck.yaml", "cards", "media", "deckbuild.lock", "releases"}
            ]:
                shutil.rmtree(extra) if extra.is_dir() else extra.unlink()
            try:
                rows.append(measure("shipped deck", copy, work))
            except BuildFailed as exc:  # e.g. its cards use a feature this checkout lacks
                notes.append(f"the shipped deck in {shipped} does not build with this checkout: {exc}")
        else:
            notes.append(f"{shipped} has no cards/: the shipped-deck row is left out (pass --shipped DIR).")
        for size in sizes:
            project = generate(work / f"bench-{size}", size, diagrams)
            rows.append(measure(f"synthetic {size}", project, work))
    print(f"Machine: {machine()}; load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after\n")
    print(table(rows))
    print(
        f"\nTimes are wall seconds (CPU seconds of that process in parentheses), each a fresh process;"
        f" no-op and 1-card edit are the best of {REPEAT}. Build = first build, no cache; warm rebuild = the"
        " .apkg deleted, caches kept."
    )
    for note in notes:
        print(f"\nNote: {note}")


if __name__ == "__main__":
    main()
