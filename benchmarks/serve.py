"""Measure `deckbuild serve`'s edit loop: a saved card file until the served page holds the edit.

    python benchmarks/serve.py [--sizes 10000] [--saves 3] [--shipped DIR] [--quick]

For the shipped deck (copied, never written) and each synthetic size (benchmarks/run.py's
generator), one `deckbuild serve` process is started and left to finish its first build.
Then, `--saves` times, one card's answer is changed to a new word and the clock runs from
the file's write until GET /cards/<id>.html answers with a page that holds that word: what
an author waits for between saving and seeing the card.  The first serve (start until the
index answers) and the serve process tree's memory (PSS of it and its children, sampled
after the last save) are shown beside the median save.

Timings depend on the machine and its load: nothing here is asserted by the test suite,
which runs `--quick` only as a smoke test (tests/test_benchmark.py).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from run import REPO, _tree_pss_kb, generate  # noqa: E402  (benchmarks/ is not a package)

POLL = 0.02  # issue 27's protocol: the card's served page, every 20 ms until it shows the edit
SOURCES = ("deck.yaml", "cards", "media", "notetypes", "diagrams", "deckbuild.lock", "releases", "variants")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        return exc.code, ""
    except OSError:
        return 0, ""


def _wait(what: str, ready: object, timeout: float) -> float:
    """Seconds until `ready()` is true (polled every POLL seconds); raise after `timeout`."""
    started = time.perf_counter()
    while time.perf_counter() - started < timeout:
        if ready():  # type: ignore[operator]
            return time.perf_counter() - started
        time.sleep(POLL)
    raise RuntimeError(f"timed out waiting for {what}")


def _editable_card(project: Path) -> tuple[Path, str]:
    """A question card's file and id, whose one-line or block answer can take a marker word."""
    for path in sorted((project / "cards").glob("*.yaml")):
        text = path.read_text(encoding="utf-8")
        found = re.search(r"(?m)^- id: ([a-z0-9-]+)\n(?:  (?!answer:).*\n)*?  answer: ", text)
        if found:
            return path, found.group(1)
    raise RuntimeError(f"no question card with an answer in {project}/cards")


def _mark(path: Path, card_id: str, word: str) -> None:
    """Put `word` first in the answer of card `card_id` (replacing the previous marker)."""
    text = path.read_text(encoding="utf-8")
    start = text.index(f"- id: {card_id}\n")
    head, tail = text[:start], text[start:]
    tail = re.sub(r"zqmark\d+ ", "", tail, count=1)
    tail = re.sub(
        r"(?m)^(  answer: )(\|\n    (?:- )?|['\"]?)",
        lambda m: m.group(1) + m.group(2) + f"{word} ",
        tail,
        count=1,
    )
    path.write_text(head + tail, encoding="utf-8")


def measure(label: str, project: Path, saves: int) -> dict[str, object]:
    port = _free_port()
    base = f"http://127.0.0.1:{port}/"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "deckbuild.cli", "serve", "-C", str(project), "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait("the first serve", lambda: _get(base)[0] == 200 or proc.poll() is not None, 1800)
        if proc.poll() is not None:
            raise RuntimeError(f"serve exited with {proc.returncode} on {label}")
        first = time.perf_counter() - started
        path, card_id = _editable_card(project)
        page = f"{base}cards/{card_id}.html"
        times = []
        for n in range(saves):
            word = f"zqmark{n}"
            time.sleep(0.5)  # the watcher's debounce window of the previous save is over
            _mark(path, card_id, word)
            times.append(_wait(f"save {n} on {label}", lambda w=word: w in _get(page)[1], 600))  # type: ignore[misc]
        memory_mb = _tree_pss_kb(proc.pid) / 1024
        broken, fixed = _broken_save_and_fix(project, path, card_id, base, page, label)
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    cards = sum(1 for p in (project / "cards").glob("*.yaml") for line in p.open(encoding="utf-8") if line.startswith("- id:"))
    return {
        "label": label,
        "cards": cards,
        "first": first,
        "saves": times,
        "memory_mb": memory_mb,
        "broken": broken,
        "fixed": fixed,
    }


BREAK = "- id: [unclosed\n"
"""Appended to the edited card file: a YAML syntax error (E100) at its last line."""


def _problems(base: str) -> list[str]:
    status, body = _get(base + "__deckbuild/events?since=-1")  # answers at once: any seq differs from -1
    return list(json.loads(body)["problems"]) if status == 200 else []


def _broken_save_and_fix(project: Path, path: Path, card_id: str, base: str, page: str, label: str) -> tuple[float, float]:
    """Seconds from a save that breaks the deck until the overlay's problems (what the open page's
    reload script shows) hold it, and from the fix until the card's page holds the fixed text.

    The overlay's problems must be the lines `deckbuild check` prints for the broken sources
    (before its count line), errors first; a mismatch ends the benchmark.
    """
    where = f"{path.relative_to(project).as_posix()}:"
    good = path.read_text(encoding="utf-8")
    time.sleep(0.5)
    path.write_text(good + BREAK, encoding="utf-8")
    broken = _wait(
        f"the broken save's overlay on {label}", lambda: any(p.startswith(where) and " E100 " in p for p in _problems(base)), 600
    )
    checked = subprocess.run(
        [sys.executable, "-m", "deckbuild.cli", "check", "-C", str(project)],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        check=False,
    )
    shown = _problems(base)
    reported = checked.stderr.rstrip("\n").rsplit("\n", 1)[0]  # without the count line
    errors = [re.match(r".*?: E\d{3} warning: ", line) is None for line in shown]
    if (
        checked.returncode == 0
        or sorted("\n".join(shown).split("\n")) != sorted(reported.split("\n"))
        or errors != sorted(errors, reverse=True)
    ):
        raise RuntimeError(f"on {label}, the overlay's problems are not those deckbuild check reports, errors first")
    time.sleep(0.5)
    path.write_text(good, encoding="utf-8")
    _mark(path, card_id, "zqfixed")
    fixed = _wait(f"the fix on {label}", lambda: "zqfixed" in _get(page)[1] and not _problems(base), 600)
    return broken, fixed


def table(rows: list[dict[str, object]]) -> str:
    lines = [
        "| deck | cards | first serve (s) | save → page, median (s) | saves (s) | serve's memory (MB) |"
        " broken save → overlay (s) | fix → page (s) |",
        "|---|---:|---:|---:|---|---:|---:|---:|",
    ]
    for row in rows:
        saves = row["saves"]
        assert isinstance(saves, list)
        lines.append(
            f"| {row['label']} | {row['cards']} | {row['first']:.1f} | {statistics.median(saves):.2f} |"
            f" {', '.join(f'{s:.2f}' for s in saves)} | {row['memory_mb']:.0f} | {row['broken']:.2f} | {row['fixed']:.2f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000", help="comma-separated card counts of the synthetic decks ('' for none)")
    parser.add_argument("--saves", type=int, default=3, help="saves measured per deck (the median is shown)")
    parser.add_argument("--shipped", type=Path, default=REPO, help="the shipped deck project (copied, never written)")
    parser.add_argument("--quick", action="store_true", help="a smoke test: the shipped deck and 300 cards, one save each")
    args = parser.parse_args()
    sizes = [300] if args.quick else [int(s) for s in args.sizes.split(",") if s]
    saves = 1 if args.quick else args.saves
    rows = []
    with tempfile.TemporaryDirectory(prefix="deckbuild-serve-bench-") as tmp:
        work = Path(tmp)
        shipped = work / "shipped"
        shipped.mkdir()
        for name in SOURCES:  # what a build reads; no outputs, no cache
            if (args.shipped / name).is_dir():
                shutil.copytree(args.shipped / name, shipped / name)
            elif (args.shipped / name).is_file():
                shutil.copy2(args.shipped / name, shipped / name)
        rows.append(measure("shipped deck", shipped, saves))
        for size in sizes:
            rows.append(measure(f"synthetic {size}", generate(work / f"synthetic-{size}", size, []), saves))
    print(table(rows))


if __name__ == "__main__":
    main()
