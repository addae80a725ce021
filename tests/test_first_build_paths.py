"""A first build's fast paths give the bytes of the plain ones.

On a deck whose answers are bullet lists with strong, em, code and math (render.py's
subset path) and large enough for parse workers and a multi-megabyte collection (built in
a scratch file under .deckbuild-cache/ and streamed into the zip, apkg/package.py): the
package of a parallel build equals the one of a serial build with the collection built in
memory and every text rendered by Python-Markdown, and after an edit the incremental build
equals a clean build of the same sources.  No scratch file is left behind.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from deckbuild import render
from deckbuild.apkg import package
from deckbuild.commands import build
from deckbuild.layout import CACHE_DIR
from deckbuild.leftovers import ABANDONED_AFTER_S

CARDS_PER_FILE = 400
FILES = 4


def _card(n: int) -> str:
    return (
        f"- id: card-{n:05d}\n"
        f"  question: Why does step {n} use `lr_{n % 7}` when the batch is small?\n"
        "  answer: |\n"
        f"    - It rescales by \\( \\sqrt{{1 - \\beta^{{{n % 9 + 1}}}}} \\), so early steps stay small & safe.\n"
        f"    - It keeps **variance** bounded for layer {n % 12}; see *warmup* and `x<{n}`.\n"
        "    - It costs one extra buffer.\n"
        f"  details: A plain remark on case {n}, with {{braces}} and a < sign.\n"
        "  difficulty: easy\n"
        f"  topics: [paths::t{n % 5}]\n"
    )


def _project(root: Path) -> Path:
    (root / "cards").mkdir(parents=True)
    (root / "deck.yaml").write_text("name: Paths\nnamespace: paths-test\nversion: 1.0.0\n", encoding="utf-8")
    for f in range(FILES):
        cards = [_card(f * CARDS_PER_FILE + i) for i in range(CARDS_PER_FILE)]
        (root / "cards" / f"topic-{f}.yaml").write_text("\n".join(cards), encoding="utf-8")
    return root


def _clean_build(root: Path, jobs: int) -> bytes:
    for leftover in (root / CACHE_DIR, root / "dist"):
        shutil.rmtree(leftover, ignore_errors=True)
    (root / "deckbuild.lock").unlink(missing_ok=True)
    build(root, jobs=jobs)
    assert not list((root / CACHE_DIR).glob("package-*")), "scratch collection left behind"
    return (root / "dist" / "paths-1.0.0.apkg").read_bytes()


def test_fast_paths_give_the_plain_paths_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    root = _project(tmp_path / "deck")
    fast = _clean_build(root, jobs=2)
    assert len(fast) > 100_000

    # Serial, every text through Python-Markdown, the collection in memory.
    with monkeypatch.context() as plain_paths:
        plain_paths.setattr(render, "_subset_html", lambda text: None)
        plain_paths.setattr(package, "_package_via_file", lambda *args: None)
        assert _clean_build(root, jobs=1) == fast

    # An edit: the incremental build equals a clean build of the edited sources.
    _clean_build(root, jobs=2)
    edited = root / "cards" / "topic-2.yaml"
    text = edited.read_text(encoding="utf-8")
    edited.write_text(text.replace("    - It costs", "    - It *now* costs", 1), encoding="utf-8")
    build(root, jobs=2)
    incremental = (root / "dist" / "paths-1.0.0.apkg").read_bytes()
    assert incremental != fast
    assert not list((root / CACHE_DIR).glob("package-*"))
    lock = (root / "deckbuild.lock").read_bytes()
    shutil.rmtree(root / CACHE_DIR)
    (root / "dist" / "paths-1.0.0.apkg").unlink()
    build(root, jobs=1)
    assert (root / "dist" / "paths-1.0.0.apkg").read_bytes() == incremental
    assert (root / "deckbuild.lock").read_bytes() == lock


def test_subset_renders_the_answers() -> None:
    """The deck above really goes through the subset path (else the test above proves little)."""
    answer = _card(7).split("answer: |\n", 1)[1].split("  details:")[0]
    text = "\n".join(line.removeprefix("    ") for line in answer.splitlines())
    protected, _spans = render._protect(text)
    out = render._subset_html(protected)
    assert out is not None and out.startswith("<ul>\n<li>") and "<strong>variance</strong>" in out
    question = "Why does step 7 use `lr_0` when the batch is small?"
    assert (
        render._subset_html(render._protect(question)[0])
        == "<p>Why does step 7 use <code>lr_0</code> when the batch is small?</p>"
    )


def _small_package(out: Path, work_dir: Path | None) -> bytes:
    """A 50-note package written straight through package.write_package."""
    from deckbuild.apkg.notetypes import QA as qa
    from deckbuild.model import RenderedNote, StampedNote

    fields = tuple(f"<p>field {i}</p>" if i < 2 else "" for i in range(len(qa.fields)))
    notes = [
        StampedNote(RenderedNote(f"n{i}", f"guid{i}", qa.key, fields, ("t",), i, f"h{i}"), 1_700_000_000 + i) for i in range(50)
    ]
    return package.write_package(
        out,
        deck_name="D",
        deck_description="",
        namespace="ns",
        notetypes={qa.key: qa},
        notetype_mods={qa.key: 1_700_000_000},
        notes=notes,
        media=[],
        work_dir=work_dir,
    )


def test_unwritable_work_dir_builds_in_memory(tmp_path: Path) -> None:
    """No scratch file possible (no such folder): the same bytes, built in memory."""
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    out = tmp_path / "out.apkg"
    assert _small_package(out, scratch) == _small_package(out, None) == _small_package(out, tmp_path / "missing")
    assert list(scratch.iterdir()) == []


def test_a_scratch_collection_a_killed_build_left_is_removed(tmp_path: Path) -> None:
    """A build killed while filling its scratch collection leaves it in .deckbuild-cache/; the
    next build removes it once it is old enough that no running build can still own it."""
    import os
    import time

    scratch = tmp_path / "scratch"
    scratch.mkdir()
    abandoned, recent = scratch / "package-killed.anki2", scratch / "package-running.anki2"
    for path in (abandoned, recent):
        path.write_bytes(b"\0" * 4096)
    old = time.time() - ABANDONED_AFTER_S - 60
    os.utime(abandoned, (old, old))
    _small_package(tmp_path / "out.apkg", scratch)
    assert sorted(p.name for p in scratch.iterdir()) == ["package-running.anki2"]


WAITING_GENERATOR = '''"""A diagram that keeps its build waiting until the build is killed."""

from deckbuild.diagrams import style
from deckbuild.diagrams.api import diagram


@diagram("waits", time_limit=600)
def waits():
    import time

    time.sleep(600)
    return style.figure(1.0)
'''

WAITING_CARD = """
- id: waiting-picture
  question: What does the waiting diagram draw?
  answer: Nothing before its build is killed.
  difficulty: easy
  topics: [algebra::quadratics]
  diagram:
    name: waits
    alt: A diagram that never finishes.
"""


def test_a_fresh_cache_a_killed_first_build_left_is_removed(tmp_path: Path) -> None:
    """A first build killed outright (SIGKILL: no clean-up runs) leaves its fresh cache file,
    which can grow to the size of the deck's notes, in .deckbuild-cache/; a later build
    removes it once it is old enough that no running build can still own it."""
    import os
    import signal
    import subprocess
    import sys
    import time

    project = tmp_path / "deck"
    made = subprocess.run([sys.executable, "-m", "deckbuild.cli", "new", str(project)], capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    (project / "diagrams" / "waits.py").write_text(WAITING_GENERATOR, encoding="utf-8")
    cards = project / "cards" / "examples.yaml"
    original = cards.read_text(encoding="utf-8")
    cards.write_text(original + WAITING_CARD, encoding="utf-8")
    cache = project / CACHE_DIR
    killed = subprocess.Popen(
        [sys.executable, "-m", "deckbuild.cli", "build", "-C", str(project)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # its diagram workers are killed with it
    )
    try:
        deadline = time.monotonic() + 120
        while not list(cache.glob("cache.sqlite.new-*")) and time.monotonic() < deadline:
            assert killed.poll() is None, "the build ended before it could be killed"
            time.sleep(0.02)
    finally:
        os.killpg(killed.pid, signal.SIGKILL)
        killed.wait()
    left = sorted(cache.glob("cache.sqlite.new-*"))  # the file, and SQLite's journal of it
    assert f"cache.sqlite.new-{killed.pid}" in [p.name for p in left], left
    recent = cache / "cache.sqlite.new-1"  # as a build running right now would have it
    recent.write_bytes(b"")
    old = time.time() - ABANDONED_AFTER_S - 60
    for path in left:
        os.utime(path, (old, old))

    cards.write_text(original, encoding="utf-8")
    (project / "diagrams" / "waits.py").unlink()
    rebuilt = subprocess.run([sys.executable, "-m", "deckbuild.cli", "build", "-C", str(project)], capture_output=True, text=True)
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert sorted(p.name for p in cache.glob("cache.sqlite.new-*")) == ["cache.sqlite.new-1"]
    assert (cache / "cache.sqlite").is_file()
