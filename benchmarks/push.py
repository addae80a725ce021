"""Measure `deckbuild push` against a plain Anki import of the same package (issue 25).

    python benchmarks/push.py [--repeat 5] [--edits 5] [--shipped DIR] [--quick]

The shipped deck (the repo's own project, or --shipped DIR) is copied to a temp folder,
built, and pushed into a fresh collection: that is the learner who has the deck.  Then
`--edits` notes' answers are changed in the sources and the package is rebuilt, a day later
(so its changed notes are newer, as a release's are).  Each repetition copies the learner's
collection twice and, back to back, times in fresh processes:

- plain import: the official backend's File → Import of the new package with Anki's
  defaults (update notes and note types "if newer"), the way a learner without deckbuild
  updates; Python's start-up and `import anki` count, as in the push;
- push:         `deckbuild push --collection …` (its build, the plan, Anki's backup, the
  media, the one transaction of note changes, the record).

The ratio is taken pair by pair and the median shown.  Both runs are checked to have
updated exactly the edited notes.  `--quick` (tests/test_benchmark_push.py) runs one pair.
No timing is asserted anywhere: the numbers depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

import run as bench

EDIT_EPOCH = str(int(bench.EPOCH) + 86400)

IMPORT = """
import sys
from anki.collection import Collection, ImportAnkiPackageOptions, ImportAnkiPackageRequest
col = Collection(sys.argv[1])
log = col.import_anki_package(ImportAnkiPackageRequest(package_path=sys.argv[2], options=ImportAnkiPackageOptions())).log
col.close()
print(len(log.updated), len(log.new), len(log.conflicting))
"""

NEW_COLLECTION = """
import sys
from anki.collection import Collection
Collection(sys.argv[1]).close()
"""


def edit_notes(root: Path, count: int) -> list[str]:
    """Change `count` answers, one per card file in turn (then the next answer of each); returns their ids."""
    files = sorted((root / "cards").glob("*.y*ml"))
    texts = {path: path.read_text(encoding="utf-8") for path in files}
    edited: list[str] = []
    rank = 0
    while len(edited) < count:
        progressed = False
        for path in files:
            if len(edited) == count:
                break
            cards = list(re.finditer(r"(?m)^- id: (\S+)\n(?:(?!- id:).*\n)*?(  answer: )(['\"|]?)", texts[path]))
            if rank < len(cards):
                match = cards[rank]
                cut = match.end(3)
                insert = "\n    Edited for the benchmark. " if match.group(3) == "|" else "Edited for the benchmark. "
                texts[path] = texts[path][:cut] + insert + texts[path][cut:]
                edited.append(match.group(1))
                progressed = True
        if not progressed:
            sys.exit(f"the deck has fewer than {count} answers to edit")
        rank += 1
    for path, text in texts.items():
        path.write_text(text, encoding="utf-8")
    return edited


def _copy_collection(base: Path, dest: Path) -> Path:
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(base, dest)
    return dest / "collection.anki2"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5, help="pairs of plain import and push (the median is shown)")
    parser.add_argument("--edits", type=int, default=5, help="notes changed in the sources")
    parser.add_argument("--shipped", type=Path, default=bench.REPO, help="the deck project (copied, never written)")
    parser.add_argument("--quick", action="store_true", help="a smoke test: one pair")
    args = parser.parse_args()
    repeat = 1 if args.quick else max(1, args.repeat)
    bench.adopt_orphans()
    load_before = os.getloadavg()[0]
    imports: list[bench.Run] = []
    pushes: list[bench.Run] = []
    ratios: list[float] = []
    cpu_ratios: list[float] = []
    with tempfile.TemporaryDirectory(prefix="deckbuild-push-bench-") as tmp:
        work = Path(tmp)
        shipped = args.shipped.resolve()
        keep = {"deck.yaml", "cards", "media", "diagrams", "deckbuild.lock", "releases"}
        deck = work / "deck"
        shutil.copytree(
            shipped, deck, ignore=lambda folder, names: [] if Path(folder) != shipped else [n for n in names if n not in keep]
        )
        print("[push] the learner's collection: the deck pushed into a fresh one ...", file=sys.stderr, flush=True)
        base = work / "learner"
        base.mkdir()
        collection = base / "collection.anki2"
        made = bench.run([sys.executable, "-c", NEW_COLLECTION, str(collection)])
        first = bench.deckbuild("push", deck, "--collection", str(collection))
        if not (made.ok and first.ok):
            sys.exit(f"setting up the learner's collection failed:\n{made.output}{first.output}")
        edited = edit_notes(deck, args.edits)
        built = bench.run([sys.executable, "-m", "deckbuild.cli", "build", "-C", str(deck)], epoch=EDIT_EPOCH)
        if not built.ok:
            sys.exit(f"the edited deck does not build:\n{built.output}")
        package = next((deck / "dist").glob("*.apkg"))
        for i in range(repeat):
            print(f"[push] plain import, then push ({i + 1}/{repeat}) ...", file=sys.stderr, flush=True)
            plain = _copy_collection(base, work / "plain")
            imported = bench.run([sys.executable, "-c", IMPORT, str(plain), str(package)])
            counts = imported.output.split()
            if not imported.ok or counts[:1] != [str(len(edited))]:
                sys.exit(f"the plain import did not update the {len(edited)} edited notes:\n{imported.output}")
            imports.append(imported)
            target = _copy_collection(base, work / "pushed")
            pushed = bench.run(
                [sys.executable, "-m", "deckbuild.cli", "push", "-C", str(deck), "--collection", str(target), "--format", "json"],
                epoch=EDIT_EPOCH,
            )
            report = json.loads(pushed.output[pushed.output.find("{") :]) if pushed.ok else {}
            if report.get("updated") != len(edited):
                sys.exit(f"the push did not update the {len(edited)} edited notes:\n{pushed.output}")
            pushes.append(pushed)
            ratios.append(pushed.seconds / imported.seconds)
            cpu_ratios.append(pushed.cpu / imported.cpu)
        cards = sum(1 for p in (deck / "cards").glob("*.y*ml") for line in p.open(encoding="utf-8") if line.startswith("- id:"))

    def median(runs: list[bench.Run]) -> bench.Run:
        return sorted(runs, key=lambda r: r.seconds)[(len(runs) - 1) // 2]

    imp, psh = median(imports), median(pushes)
    print(f"Machine: {bench.machine()}; load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after\n")
    print(
        "| deck | cards | changed notes | plain import s | CPU/wall | push s | CPU/wall | peak MB (tree)"
        " | push / plain import | CPU: push / plain import |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    print(
        f"| shipped deck | {cards} | {len(edited)} | {imp.seconds:.2f} | {imp.cpu / imp.seconds:.2f} | {psh.seconds:.2f}"
        f" | {psh.cpu / psh.seconds:.2f} | {psh.peak_mb:.0f} | {statistics.median(ratios):.2f}× | {statistics.median(cpu_ratios):.2f}× |"
    )
    print(
        f"\nWall seconds, each a fresh process, median of {repeat}; the ratios are medians of pairs run back to back"
        " (CPU: user + system seconds of the process tree, which a busy machine distorts less than wall time). The"
        " package is current, so push takes it without building; it includes Anki's backup of the collection."
    )


if __name__ == "__main__":
    main()
