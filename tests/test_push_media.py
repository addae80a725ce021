"""`deckbuild push` delivers every media file its notes name, repairs what is missing, refuses a
damaged collection, and `status` / `push --dry-run` write nothing; real Anki backend (issue 25)."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import sqlite3
import struct
import subprocess
import sys
import time
import zlib
from pathlib import Path
from typing import Any

import pytest
from ankiutil import new_collection, notes_by_card_id

from deckbuild.collection.push import NoteUpdate, apply_push, media_folder, plan_push, read_record

REPO = Path(__file__).parent.parent
RELEASE_2 = str(int(time.time()) + 86400)


def deckbuild(project: Path, *args: str, epoch: str = "1700000000") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "SOURCE_DATE_EPOCH": epoch}
    return subprocess.run(
        [sys.executable, "-m", "deckbuild.cli", *args, "-C", str(project)], capture_output=True, text=True, env=env, check=False
    )


def run_json(project: Path, *args: str, epoch: str = "1700000000") -> dict[str, Any]:
    done = deckbuild(project, *args, "--format", "json", epoch=epoch)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def png(width: int, height: int, rgb: tuple[int, int, int]) -> bytes:
    """A valid PNG of one colour (what an author's edited image would be)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    rows = b"".join(b"\x00" + bytes(rgb) * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def named_files(note: Any) -> list[str]:
    return sorted({name for value in note.values() for name in re.findall(r'src="([^"]+)"', value)})


@pytest.fixture
def pushed(sample: Path, tmp_path: Path) -> Path:
    """A collection the sample deck's first release was pushed into."""
    path = tmp_path / "anki" / "collection.anki2"
    new_collection(path.parent).close()
    first = run_json(sample, "push", "--collection", str(path))
    assert first["new"] == 7 and first["media"]
    return path


def test_an_edited_image_and_a_changed_diagram_reach_the_collection(sample: Path, pushed: Path) -> None:
    new_bytes = png(24, 12, (200, 40, 40))
    assert (sample / "media" / "axes.png").read_bytes() != new_bytes
    (sample / "media" / "axes.png").write_bytes(new_bytes)
    from deckbuild.diagrams.registry import project_registry

    other = next(name for name in sorted(project_registry(sample).diagrams) if name != "grad-clipping")
    cards = sample / "cards" / "extra.yaml"
    cards.write_text(cards.read_text().replace("name: grad-clipping", f"name: {other}"))

    report = run_json(sample, "push", "--collection", str(pushed), epoch=RELEASE_2)

    col = new_collection(pushed.parent)
    try:
        check = col.media.check()
        assert list(check.missing) == [] and list(check.missing_media_notes) == []
        notes = notes_by_card_id(col)
        (image,) = named_files(notes["figure-card"])
        (diagram,) = named_files(notes["clipping-picture"])
        assert (media_folder(pushed) / image).read_bytes() == new_bytes
        assert (media_folder(pushed) / diagram).read_bytes().startswith(b"\x89PNG")
        assert other.split("-")[0] in diagram
        assert sorted(report["media"]) == sorted([image, diagram]) and report["updated"] == 2
        assert named_files(notes["twin-question"]) == []  # the duplicate names no file of its own
    finally:
        col.close()


def test_push_delivers_a_file_an_unchanged_note_names_and_status_reports_it(sample: Path, pushed: Path) -> None:
    col = new_collection(pushed.parent)
    try:
        (lost,) = named_files(notes_by_card_id(col)["clipping-picture"])
    finally:
        col.close()
    (media_folder(pushed) / lost).unlink()  # as an earlier push left it

    status = run_json(sample, "status", "--collection", str(pushed))
    assert status["missing_media"] == [lost] and status["edited"] == []
    dry = run_json(sample, "push", "--collection", str(pushed), "--dry-run")
    assert dry["media"] == [lost] and not (media_folder(pushed) / lost).exists()
    report = run_json(sample, "push", "--collection", str(pushed))

    assert report["media"] == [lost] and report["updated"] == 0 and report["unchanged"] == 7
    col = new_collection(pushed.parent)
    try:
        assert list(col.media.check().missing) == []
        assert (media_folder(pushed) / lost).read_bytes().startswith(b"\x89PNG")
    finally:
        col.close()
    assert run_json(sample, "status", "--collection", str(pushed))["missing_media"] == []


def test_a_failed_note_transaction_removes_the_media_the_push_added(sample: Path, pushed: Path) -> None:
    from deckbuild.commands import build

    col = new_collection(pushed.parent)
    try:
        (lost,) = named_files(notes_by_card_id(col)["figure-card"])
        notes_before = col.db.all("select id, mod, flds, tags from notes order by id")
    finally:
        col.close()
    (media_folder(pushed) / lost).unlink()
    package = build(sample).path
    planned = plan_push(pushed, package, namespace="deckbuild-sample", version="1.0.1", released={})
    assert planned.media == (lost,)
    # A plan whose note change the backend refuses (a note that is not there), so the transaction fails.
    broken = dataclasses.replace(planned, updates=(NoteUpdate(1, "ghost", {0: "x"}, (), ()),))

    with pytest.raises(Exception, match="No such note"):
        apply_push(broken, "1.0.1")

    assert not (media_folder(pushed) / lost).exists()
    col = new_collection(pushed.parent)
    try:
        assert col.db.all("select id, mod, flds, tags from notes order by id") == notes_before
        assert read_record(col, "deckbuild-sample")["version"] == "1.0.0"  # type: ignore[index]
    finally:
        col.close()


def _corrupt_cards_page(path: Path) -> None:
    """Overwrite the first page of the `cards` table, as a disk or copy fault would (col and notes intact)."""
    conn = sqlite3.connect(path)
    conn.create_collation("unicase", lambda a, b: (a.casefold() > b.casefold()) - (a.casefold() < b.casefold()))
    page_size = conn.execute("pragma page_size").fetchone()[0]
    (root,) = conn.execute("select rootpage from sqlite_master where type = 'table' and name = 'cards'").fetchone()
    conn.close()
    with path.open("r+b") as handle:
        handle.seek((root - 1) * page_size)
        handle.write(bytes((i * 37) % 251 for i in range(page_size)))


def test_a_damaged_collection_is_refused_before_any_backup(sample: Path, pushed: Path) -> None:
    _corrupt_cards_page(pushed)
    before = pushed.read_bytes()
    backups = sorted((pushed.parent / "backups").iterdir())  # the first push's

    for command in ("push", "status"):
        done = deckbuild(sample, command, "--collection", str(pushed))
        assert done.returncode == 1, (command, done.stderr)
        assert "E604" in done.stderr and "damaged" in done.stderr and "Traceback" not in done.stderr
        assert "internal error" not in done.stderr
        assert str(pushed) in done.stderr.splitlines()[0]
    assert pushed.read_bytes() == before and sorted((pushed.parent / "backups").iterdir()) == backups


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _untouched(root: Path) -> dict[str, tuple[str, int]]:
    """Every path under root, folders too → its digest and modification time: a file rewritten
    with the same bytes, or a folder that gained and lost a temp file, shows too."""
    return {rel: (digest, (root / rel).stat().st_mtime_ns) for rel, digest in _tree_digest(root).items()}


def test_status_and_dry_run_write_no_file_of_the_project(sample: Path, pushed: Path) -> None:
    """On a built project (the push built it), current and then stale: dist/, deckbuild.lock
    and the cache untouched."""
    current = _untouched(sample)
    assert any(rel.startswith("dist/") and rel.endswith(".apkg") for rel in current)
    assert run_json(sample, "status", "--collection", str(pushed))["edited"] == []
    assert run_json(sample, "push", "--collection", str(pushed), "--dry-run")["updated"] == 0
    assert _untouched(sample) == current
    cards = sample / "cards" / "basics.yaml"
    cards.write_text(cards.read_text().replace("Across the batch, per feature.", "Over the batch, per feature."))
    before = _untouched(sample)
    collection_before = _files(pushed.parent)

    status = run_json(sample, "status", "--collection", str(pushed))
    dry = run_json(sample, "push", "--collection", str(pushed), "--dry-run", epoch=RELEASE_2)

    assert _untouched(sample) == before  # dist/, deckbuild.lock, the cache: byte for byte, not even rewritten
    assert _files(pushed.parent) == collection_before
    assert status["edited"] == [] and dry["updated"] == 1 and dry["backup"] is None
    text = deckbuild(sample, "push", "--collection", str(pushed), "--dry-run", epoch=RELEASE_2)
    assert "would update 1" in text.stdout and "a backup would be made in" in text.stdout
    assert "is in the backup" not in text.stdout and _untouched(sample) == before


def _tree_digest(root: Path) -> dict[str, str]:
    """Every path under root (folders too, so a created dist/ or cache folder shows) → sha256 of its bytes."""
    import hashlib

    return {
        p.relative_to(root).as_posix(): "folder" if p.is_dir() else hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
    }


def test_status_and_dry_run_of_a_never_built_project_create_nothing(sample: Path, tmp_path: Path) -> None:
    """No dist/, deckbuild.lock or .deckbuild-cache/ before: none after, against a real collection."""
    path = tmp_path / "learner" / "collection.anki2"
    new_collection(path.parent).close()
    before = _tree_digest(sample)
    assert not any(name.startswith(("dist", "deckbuild.lock", ".deckbuild-cache")) for name in before)

    status = run_json(sample, "status", "--collection", str(path))
    dry = run_json(sample, "push", "--collection", str(path), "--dry-run")

    assert _tree_digest(sample) == before
    assert status["missing"] and dry["new"] == 7 and dry["backup"] is None
