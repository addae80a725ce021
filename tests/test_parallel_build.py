"""`deckbuild build --jobs N`: diagrams drawn and card files parsed in worker processes
give the same package, and the same errors in the same order.

Real processes throughout (`python -m deckbuild.cli build`), on small projects with four
diagrams, drawn by one worker (--jobs 1) or two, or enough card text for the parse
workers (incremental/parallel.py).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import copy_project, write_tree

from deckbuild.incremental import parallel
from deckbuild.sources import card_files, load_cards

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
        lines = [ln for ln in result.stderr.splitlines() if " E283 " in ln]
        assert len(lines) == 2, result.stderr
        assert lines[0].startswith("cards/pictures.yaml:7:5: E283 card 'picture-0': generator 'label-smoothing' raised ")
        assert lines[1].startswith("cards/pictures.yaml:26:5: E283 card 'picture-2': generator 'zero-memory' raised ")
        assert "ZeroDivisionError" in lines[1]
        assert not (project / "dist").exists()


def test_jobs_must_be_positive(tmp_path: Path) -> None:
    result = _build(copy_project("sample", tmp_path), "--jobs", "0")
    assert result.returncode == 2
    assert "'--jobs': 0 is not in the range x>=1" in result.stderr


def _text_cards(file: int, count: int, broken: bool = False) -> str:
    """`count` question and cloze cards with Markdown, math and clozes; `broken`: two errors."""
    out = []
    for n in range(count):
        card_id = f"f{file}-q{n}"
        out.append(
            f"- id: {card_id}\n"
            f"  question: Why does trick {n} of file {file} help `step_{n}`?\n"
            "  answer: |\n"
            f"    - It rescales by \\( \\sqrt{{1 - \\beta^{{{n}}}}} \\), so **early** steps stay small.\n"
            f"    - See *warmup* and `lr={n}e-4`.\n"
            f"  difficulty: {'easy' if n % 2 else 'hard'}\n"
            "  topics: [optimization::tricks]\n" + (f"  related: [f{file}-q{n - 1}]\n" if n else "")
        )
        out.append(
            f"- id: {card_id}-fact\n  fact: 'Setting {n} is {{{{c1::\\( \\eta = {n} \\)}}}}.'\n  context: A setting.\n  of: {card_id}\n"
        )
    if broken:
        out.append(f"- id: f{file}-bad\n  question: Where is the answer?\n  difficulty: easy\n")
        out.append(f"- id: f{file}-q0\n  question: Duplicate?\n  answer: Yes.\n  difficulty: sometimes\n")
    return "\n".join(out)


def _text_project(tmp_path: Path, broken: bool = False) -> Path:
    project = copy_project("sample", tmp_path)
    files = {f"cards/text-{f}.yaml": _text_cards(f, 120, broken and f in (0, 2)) for f in range(3)}
    write_tree(project, files)
    return project


def test_card_files_parsed_in_workers_give_the_same_cards_and_package(tmp_path: Path) -> None:
    project = _text_project(tmp_path / "serial")
    jobs = [(path, path.relative_to(project).as_posix(), path.read_bytes()) for path in card_files(project)]
    assert parallel.worth_it(jobs, 2) == (2, False)  # the project is big enough for the workers
    assert load_cards(project, jobs=2) == load_cards(project, jobs=1)
    copy = tmp_path / "parallel" / "sample"
    shutil.copytree(project, copy)
    one = _build(project, "--jobs", "1")
    two = _build(copy, "--jobs", "2")
    assert one.returncode == 0 and two.returncode == 0, one.stderr + two.stderr
    (a,) = (project / "dist").glob("*.apkg")
    (b,) = (copy / "dist").glob("*.apkg")
    assert a.read_bytes() == b.read_bytes()
    assert (project / "deckbuild.lock").read_bytes() == (copy / "deckbuild.lock").read_bytes()


def test_a_parse_in_workers_counts_the_files_and_an_edit_parses_silently(tmp_path: Path) -> None:
    """A first build whose card files the workers parse (a large deck's: seconds to minutes)
    says how far it is, file by file, in the order of the files; --quiet says nothing; an
    edit, which parses one file, prints no count."""
    project = _text_project(tmp_path / "counted")
    files = len(card_files(project))
    quiet = tmp_path / "quiet" / "sample"
    shutil.copytree(project, quiet)
    first = _build(project, "--jobs", "2")
    assert first.returncode == 0, first.stderr
    counted = [line for line in first.stderr.splitlines() if line.endswith("parsed card files")]
    assert counted == [f"  [{n}/{files}] parsed card files" for n in range(1, files + 1)], first.stderr
    silent = _build(quiet, "--jobs", "2", "--quiet")
    assert silent.returncode == 0 and "parsed card files" not in silent.stderr, silent.stderr
    edited = project / "cards" / "text-1.yaml"
    edited.write_text(edited.read_text(encoding="utf-8").replace("trick 5 of", "trick five of"), encoding="utf-8")
    write_tree(project, {"cards/text-new.yaml": _text_cards(9, 2, False)})  # a file of its own, parsed whole
    again = _build(project, "--jobs", "2")
    assert again.returncode == 0 and "(7 notes changed" in again.stdout, again.stdout + again.stderr  # 3 edited, 4 new
    assert "parsed card files" not in again.stderr, again.stderr


def test_errors_of_files_parsed_in_workers_are_reported_at_once_in_source_order(tmp_path: Path) -> None:
    project = _text_project(tmp_path, broken=True)
    one = _build(project, "--jobs", "1")
    two = _build(project, "--jobs", "2")
    assert one.returncode == two.returncode == 1 and "Traceback" not in two.stderr
    counts = [line for line in two.stderr.splitlines(keepends=True) if line.endswith("] parsed card files\n")]
    assert len(counts) == len(card_files(project))  # the workers' progress, then what the serial build says
    assert one.stderr == "".join(line for line in two.stderr.splitlines(keepends=True) if line not in counts)
    errors = [line for line in two.stderr.splitlines() if ": E" in line and "warning" not in line]
    assert {line.split(":")[0] for line in errors} == {"cards/text-0.yaml", "cards/text-2.yaml"}, two.stderr
    places = [(line.split(":")[0], int(line.split(":")[1])) for line in errors]
    assert places == sorted(places) and len(errors) >= 6
    assert not (project / "dist").exists()


_PROBE = (
    "(__import__('os').getppid(), 'matplotlib' in __import__('sys').modules,"
    " __import__('deckbuild.diagrams.pool', fromlist=['kernels_fixed']).kernels_fixed()"
    " if __import__('platform').machine().lower() in ('x86_64', 'amd64') else True)"
)


def test_diagram_workers_start_with_matplotlib_loaded_and_numpy_kernels_fixed() -> None:
    """The workers are forked from a server that fixed numpy's kernels before importing
    matplotlib (diagrams/_worker.py); the building process itself imports neither."""
    code = (
        "import os, sys\n"
        "from concurrent.futures import ProcessPoolExecutor\n"
        "from deckbuild.diagrams import pool as drawing_pool\n"
        "drawing_pool.start_workers()\n"
        "context = drawing_pool.worker_context()\n"
        "with ProcessPoolExecutor(2, mp_context=context, initializer=drawing_pool.start_worker) as pool:\n"
        f"    parent, loaded, fixed = pool.submit(eval, {_PROBE!r}).result()\n"
        "print(context.get_start_method(), parent != os.getpid(), loaded, fixed,"
        " 'matplotlib' in sys.modules or 'numpy' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120, check=True)
    if "forkserver" not in __import__("multiprocessing").get_all_start_methods():
        assert out.stdout.split()[0] == "spawn"
        return
    assert out.stdout.split() == ["forkserver", "True", "True", "True", "False"], out.stdout + out.stderr


_EARLY = (
    "import sys\n"
    "from multiprocessing import forkserver\n"
    "from pathlib import Path\n"
    "from deckbuild.figures import start_early\n"
    "start_early(Path(sys.argv[1]))\n"
    "print(forkserver._forkserver._forkserver_pid is not None)\n"
)


def _starts_early(project: Path) -> bool:
    out = subprocess.run(
        [sys.executable, "-c", _EARLY, str(project)], cwd=ROOT, capture_output=True, text=True, timeout=120, check=True
    )
    return out.stdout.strip() == "True"


def test_a_first_build_starts_the_diagram_workers_before_parsing(tmp_path: Path) -> None:
    """Only a first build of a deck whose cards name a diagram starts the workers' imports early."""
    if "forkserver" not in __import__("multiprocessing").get_all_start_methods():
        return
    project = copy_project("sample", tmp_path / "pictures")
    write_tree(project, {"cards/pictures.yaml": _card(0, "grad-clipping")})
    os.mkfifo(project / "cards" / "a-pipe.yaml")  # never opened (it would block)
    assert _starts_early(project)
    (project / "cards" / "a-pipe.yaml").unlink()
    assert _build(project).returncode == 0
    assert not _starts_early(project)  # a rebuild: its diagrams are drawn already
    shutil.rmtree(project / ".deckbuild-cache" / "diagrams")
    assert not _starts_early(project)  # nor after any successful build (its state is there)
    plain = copy_project("phone", tmp_path / "plain")
    assert not any("diagram:" in p.read_text("utf-8") for p in (plain / "cards").glob("*.yaml"))
    assert not _starts_early(plain)  # no card names a diagram


_PLAN_TWICE = (
    "import os, sys\n"
    "from multiprocessing import forkserver\n"
    "from pathlib import Path\n"
    "from deckbuild.figures import start_early\n"
    "from deckbuild.incremental.memo import Memo\n"
    "from deckbuild.plan import plan\n"
    "root, memo = Path(sys.argv[1]), Memo() if sys.argv[2] == 'serve' else None\n"
    "server = forkserver._forkserver\n"
    "start_early(root)\n"
    "started = server._forkserver_pid\n"
    "first = plan(root, 'build', memo=memo)\n"
    "running = server._forkserver_pid is not None\n"
    "alive = os.path.exists(f'/proc/{started}') and started == server._forkserver_pid\n"
    "(root / 'cards' / 'more.yaml').write_text(sys.argv[3], 'utf-8')\n"
    "second = plan(root, 'build', memo=memo)\n"
    "print(started is not None, running, alive, server._forkserver_pid is not None,"
    " len(second.figures) - len(first.figures))\n"
)


def _plan_twice(project: Path, who: str) -> list[str]:
    more = _card(1, "warmup-cosine").replace("picture-1", "picture-more")
    out = subprocess.run(
        [sys.executable, "-c", _PLAN_TWICE, str(project), who, more],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


def test_a_build_ends_the_drawing_server_once_drawn_and_serve_keeps_it(tmp_path: Path) -> None:
    """Idle after the figures, the fork server still holds matplotlib (about 60 MB) through the
    packaging, a large first build's peak: a one-off build ends it (and a later drawing in the
    same process starts another); serve, which draws again after a save, keeps it."""
    if "forkserver" not in __import__("multiprocessing").get_all_start_methods():
        return
    build = copy_project("sample", tmp_path / "build")
    write_tree(build, {"cards/pictures.yaml": _card(0, "grad-clipping")})
    serve = copy_project("sample", tmp_path / "serve")
    write_tree(serve, {"cards/pictures.yaml": _card(0, "grad-clipping")})
    # started early, gone after the plan, and after the second plan too, which drew its new diagram
    assert _plan_twice(build, "build") == ["True", "False", "False", "False", "1"]
    # serve: the same server, still running after each plan
    assert _plan_twice(serve, "serve") == ["True", "True", "True", "True", "1"]


def test_workers_that_cannot_start_leave_the_parse_to_this_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A machine that refuses new processes (fork's EAGAIN) gets the cards a serial parse gives, not an error."""
    from concurrent.futures import ProcessPoolExecutor

    project = _text_project(tmp_path)
    serial = load_cards(project, jobs=1)

    def refused(*args: object, **kwargs: object) -> None:
        raise OSError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(ProcessPoolExecutor, "submit", refused)
    assert load_cards(project, jobs=2) == serial


def test_worker_beside_the_cache_reads_only_for_a_large_edit_of_a_large_deck(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rebuild's edited file goes to a worker only when it is large and this process has many
    cached files to read meanwhile, and only where workers are forked; --jobs 1 keeps
    everything in this process."""
    big = tmp_path / "big.yaml"
    big.write_bytes(b"x" * parallel.BESIDE_PARSE_BYTES)
    small = tmp_path / "small.yaml"
    small.write_bytes(b"x" * (parallel.BESIDE_PARSE_BYTES - 1))
    edited, tiny = [(big, "cards/big.yaml", None)], [(small, "cards/small.yaml", None)]
    enough = parallel.BESIDE_CACHED_BYTES
    monkeypatch.setattr(parallel.sys, "platform", "linux")  # workers are forked
    assert parallel.worth_it(edited, 2, enough) == (1, True)
    assert parallel.worth_it(edited, 2, enough - 1) == (0, False)  # too little to read meanwhile
    assert parallel.worth_it(tiny, 2, enough) == (0, False)  # too little to parse
    assert parallel.worth_it(edited, 1, enough) == (0, False)  # --jobs 1
    assert parallel.worth_it(edited * 3, 2, enough) == (2, False)  # files enough for the workers on their own
    monkeypatch.setattr(parallel.sys, "platform", "darwin")  # workers are spawned: each imports deckbuild again
    assert parallel.worth_it(edited, 2, enough) == (0, False)
    assert parallel.worth_it(edited * 3, 2, enough) == (2, False)


@pytest.mark.skipif(sys.platform != "linux", reason="a worker beside the cache reads is forked: Linux only")
def test_a_large_edited_file_parsed_beside_the_cache_reads_gives_a_clean_builds_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The edited file's cards, problems, facts and parse come from a worker (which renders no
    Markdown: the note cache holds the unedited cards' notes), while this process reads the
    other files from the cache; the package and record are those of a build of the same
    sources and record without a cache, parsed in this process."""
    from deckbuild.apply import apply
    from deckbuild.incremental.memo import Memo
    from deckbuild.plan import plan

    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    project = _text_project(tmp_path / "beside")
    apply(plan(project, "build", jobs=2))
    text = project / "cards" / "text-1.yaml"
    # A comment added above the cards as well: the file is parsed whole (see splice.py).
    text.write_text("# Edited.\n" + text.read_text().replace("help `step_7`?", "help `step_7` at all?", 1))
    cached = sum(len(path.read_bytes()) for path in card_files(project) if path != text)
    monkeypatch.setattr(parallel, "BESIDE_PARSE_BYTES", len(text.read_bytes()))
    monkeypatch.setattr(parallel, "BESIDE_CACHED_BYTES", cached)
    asked: list[tuple[list[str], int, bool, bool]] = []
    parsing = parallel.parsing

    def spy(jobs: list[parallel.Job], workers: int, keep: bool, render: bool, load: parallel.Load) -> object:
        asked.append(([display for _path, display, _raw in jobs], workers, keep, render))
        return parsing(jobs, workers, keep, render, load)

    monkeypatch.setattr(parallel, "parsing", spy)
    apply(plan(project, "build", jobs=2))
    assert asked == [(["cards/text-1.yaml"], 1, True, False)]

    # The same sources and the record this rebuild wrote, built without a cache in this process.
    clean = tmp_path / "clean" / "sample"
    shutil.copytree(project, clean, ignore=shutil.ignore_patterns(".deckbuild-cache", "dist"))
    apply(plan(clean, "build", jobs=1))
    assert len(asked) == 1
    (a,) = (project / "dist").glob("*.apkg")
    (b,) = (clean / "dist").glob("*.apkg")
    assert a.read_bytes() == b.read_bytes()
    assert (project / "deckbuild.lock").read_bytes() == (clean / "deckbuild.lock").read_bytes()

    # serve keeps the cache's values in memory: nothing to read back meanwhile, so no worker.
    text.write_text(text.read_text().replace("help `step_8`?", "help `step_8` at all?", 1))
    served = plan(project, "build", jobs=2, memo=Memo(), package=False)
    assert served.cache is not None
    served.cache.drop()
    assert len(asked) == 1
