"""The hostile-input corpus: every case gives its documented code and location, or its
documented safe result; never a traceback; no output or outside file touched on error.

Cases live in tests/corpus/ (expected outcomes in tests/corpus/cases.yaml; the big and the
symlinked ones are written by tests/corpus_gen.py).  Each case is a copy of the sample
project that was already built once, so a previous dist/*.apkg and deckbuild.lock exist,
plus a folder "outside" beside it standing for the rest of the disk.  `deckbuild check`
and `deckbuild build` run as real processes (python -m deckbuild.cli); the cases run
concurrently in one session fixture because each process start costs ~0.3 s.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import zipfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import REPO, copy_project
from corpus_gen import GENERATORS
from htmlcheck import active_html

CORPUS = Path(__file__).parent / "corpus"
CASES: dict[str, dict[str, Any]] = yaml.safe_load((CORPUS / "cases.yaml").read_text("utf-8"))
ENV = {**os.environ, "SOURCE_DATE_EPOCH": "1700000000", "PYTHONPATH": str(REPO)}
SECRET_CARD = "- id: secret-card\n  question: Secret?\n  answer: Secret.\n  difficulty: easy\n  topics: [a::b]\n"


@dataclass
class Run:
    """One case after its commands ran: outputs, and file snapshots before and after."""

    root: Path
    project: Path
    results: dict[str, subprocess.CompletedProcess[str]]
    before: dict[str, str]
    after: dict[str, str]


def snapshot(root: Path) -> dict[str, str]:
    """Every path under root -> a digest of its bytes (or its link target); caches ignored."""
    out: dict[str, str] = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".deckbuild-cache"]
        for name in dirs + files:
            path = Path(folder, name)
            rel = path.relative_to(root).as_posix()
            if path.is_symlink():
                out[rel] = "link:" + os.readlink(path)
            elif path.is_file():
                out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
            else:
                out[rel] = "dir"
    return out


def _cli(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "deckbuild.cli", *args],
        cwd=project,
        env=ENV,
        capture_output=True,
        text=True,
        errors="replace",
        timeout=300,
        check=False,
    )


# Error cases whose `build` also runs as a real process (one per stage that can fail);
# the others are built in-process (CliRunner) to keep the corpus under ~30 s.
BUILT_BY_PROCESS = {
    "yaml-syntax",
    "non-utf8",
    "key-twice",
    "duplicate-id-across-files",
    "media-dotdot",
    "media-fake-png",
    "media-svg-script",
    "billion-laughs",
    "card-1mb",
}


def _built_by_process(name: str) -> bool:
    spec = CASES[name]
    return "ok" in spec or spec.get("error_on") == "build" or name in BUILT_BY_PROCESS


def _run_case(name: str, baseline: Path, base: Path) -> Run:
    spec = CASES[name]
    root = base / name
    outside = root / "outside"
    outside.mkdir(parents=True)
    (outside / "secret.png").write_bytes(b"\x89PNG\r\n\x1a\nsecret outside the project")
    (outside / "secret.yaml").write_text(SECRET_CARD)
    project = root / "project"
    shutil.copytree(baseline, project, symlinks=True)
    if spec.get("generated"):
        GENERATORS[name](project, outside)
    else:
        shutil.copytree(CORPUS / name, project, dirs_exist_ok=True)
    before = snapshot(root)
    if "command" in spec:
        commands = [spec["command"].split()]
    elif _built_by_process(name):
        commands = [["check"], ["build"]]
    else:
        commands = [["check"]]  # build runs in-process in the test: it fails at the same stage as check
    results = {cmd[0]: _cli(project, *cmd) for cmd in commands}
    return Run(root, project, results, before, snapshot(root))


@pytest.fixture(scope="session")
def corpus_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    """Run every case once, concurrently (each in its own folder)."""
    base = tmp_path_factory.mktemp("corpus")
    baseline = copy_project("sample", base / "baseline")
    built = _cli(baseline, "build")
    assert built.returncode == 0, built.stderr
    with ThreadPoolExecutor(max_workers=max(4, 2 * (os.cpu_count() or 1))) as pool:
        futures = {name: pool.submit(_run_case, name, baseline, base / "cases") for name in CASES}
        return {name: future.result() for name, future in futures.items()}


def _params() -> list[Any]:
    return [pytest.param(name, id=name) for name in CASES]


def _reported(stderr: str, code: str, location: str) -> bool:
    """A line `[error: ]location[:line[:col]]: CODE ...` (a location may stop at the file or line)."""
    pattern = re.compile(rf"^(error: )?{re.escape(location)}(:\d+)*: {code} ", re.MULTILINE)
    return bool(pattern.search(stderr))


def _package_fields(run: Run, tmp: Path) -> dict[str, str]:
    """The built package opened as Anki would: zip, SQLite integrity, note fields by CardId."""
    [apkg] = (run.project / "dist").glob("*.apkg")
    with zipfile.ZipFile(apkg) as zf:
        assert zf.testzip() is None
        db = tmp / "collection.anki2"
        db.write_bytes(zf.read("collection.anki2"))
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("pragma integrity_check").fetchone() == ("ok",)
        rows = conn.execute("select flds from notes").fetchall()
        # every note belongs to a note type the package defines (a dangling mid breaks import)
        mids = {mid for (mid,) in conn.execute("select distinct mid from notes")}
        models = json.loads(conn.execute("select models from col").fetchone()[0])
        assert mids <= {int(key) for key in models}, (mids, sorted(models))
    finally:
        conn.close()
    from deckbuild.apkg.notetypes import QA

    card_id_index = list(QA.fields).index("CardId")  # both note types keep CardId at one index
    return {flds.split("\x1f")[card_id_index]: flds for (flds,) in rows}


@pytest.mark.parametrize("name", _params())
def test_corpus_case(name: str, corpus_runs: dict[str, Run], tmp_path: Path) -> None:
    spec = CASES[name]
    run = corpus_runs[name]
    if "build" not in run.results and "command" not in spec:
        from click.testing import CliRunner

        from deckbuild.cli import main

        built = CliRunner().invoke(main, ["build", "-C", str(run.project)])
        assert built.exception is None or isinstance(built.exception, SystemExit), built.exception
        run.results["build"] = subprocess.CompletedProcess(["build"], built.exit_code, built.stdout, built.stderr)
        run.after = snapshot(run.root)
    for command, result in run.results.items():
        assert "Traceback" not in result.stderr + result.stdout, (command, result.stderr)
        assert "internal error" not in result.stderr, (command, result.stderr)
    if "error" in spec:
        for command, result in run.results.items():
            if command == "check" and spec.get("error_on") == "build":
                assert result.returncode == 0, result.stderr
                continue
            assert result.returncode == spec.get("exit_status", 1), (command, result.returncode, result.stderr)
            for expected in spec["error"]:
                assert _reported(result.stderr, expected["code"], expected["location"]), (command, expected, result.stderr)
        changed = sorted(k for k in run.before.keys() | run.after.keys() if run.before.get(k) != run.after.get(k))
        assert changed == [], f"files changed by a failed run: {changed}"
        return
    for command, result in run.results.items():
        assert result.returncode == 0, (command, result.stderr)
    changed = {k for k in run.before.keys() | run.after.keys() if run.before.get(k) != run.after.get(k)}
    allowed = {"project/deckbuild.lock", *(k for k in changed if re.fullmatch(r"project/dist/[^/]+\.apkg", k))}
    assert changed <= allowed, f"unexpected files changed: {sorted(changed - allowed)}"
    fields = _package_fields(run, tmp_path)
    all_fields = "\n".join(fields.values())
    if "generated_notes" in spec:  # the sample's own notes come on top (their number varies by branch)
        assert sum(1 for card_id in fields if card_id.startswith("gen-")) == spec["generated_notes"]
    for card_id in spec.get("notes", []):
        assert any(card_id in flds for flds in fields.values()), card_id
    hostile = "\n".join(flds for flds in fields.values() if any(cid in flds for cid in spec.get("notes", [])))
    for text in spec.get("fields_exclude", []):
        assert text not in hostile, text
    for text in spec.get("fields_include", []):
        assert text in hostile, (text, hostile)
    assert active_html(all_fields.replace("\x1f", "\n")) == []


def test_every_case_folder_has_an_expected_outcome() -> None:
    folders = {p.name for p in CORPUS.iterdir() if p.is_dir()}
    committed = {name for name, spec in CASES.items() if not spec.get("generated")}
    assert folders == committed
    assert {name for name, spec in CASES.items() if spec.get("generated")} == set(GENERATORS)
    for name, spec in CASES.items():
        assert ("error" in spec) != ("ok" in spec), name
