"""The up-to-date check reads a file again unless its stat signature proves it unchanged.

A file's signature (where it leads, device, inode, size, mtime, ctime, mode) stands in for
its content only if the file was settled -- its timestamps older than the moment it was
read by more than the file system's granularity -- when it was hashed (the racy-git
rule, incremental/uptodate.py).  Real files and real waits; no timings asserted.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import REPO

from deckbuild.commands import build
from deckbuild.incremental import uptodate
from deckbuild.incremental.uptodate import STATE_FILE, up_to_date
from deckbuild.layout import CACHE_DIR


@pytest.fixture(autouse=True)
def _fixed_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")


def _settle(*paths: Path) -> None:
    """Wait until every file's timestamps are older than the up-to-date check's margin."""
    coarse = any(p.stat().st_mtime_ns % 1_000_000_000 == 0 for p in paths)
    time.sleep((uptodate._SETTLED_COARSE_NS if coarse else uptodate._SETTLED_NS) / 1e9 + 0.05)


def _recorded(project: Path) -> dict[str, list[object]]:
    return json.loads((project / CACHE_DIR / STATE_FILE).read_text("utf-8"))["files"]


def _count_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The files the check reads from here on (a spy on the one function that reads them)."""
    reads: list[str] = []
    real = uptodate._hash

    def counting(path: Path, where: str, mode: int) -> str:
        reads.append(Path(path).name)
        return real(path, where, mode)

    monkeypatch.setattr(uptodate, "_hash", counting)
    return reads


def test_a_no_op_reads_no_file_once_they_are_settled(sample: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = build(sample).path
    card = sample / "cards" / "basics.yaml"
    # The package and the record were just written: not trusted by their signatures yet.
    recorded = _recorded(sample)
    assert os.path.relpath(package, sample) not in recorded and "deckbuild.lock" not in recorded
    _settle(package, card)
    reads = _count_reads(monkeypatch)
    assert up_to_date(sample) is not None
    assert package.name in reads and "deckbuild.lock" in reads  # read once more, now settled ...
    recorded = _recorded(sample)
    assert {os.path.relpath(package, sample), "deckbuild.lock", "deck.yaml", "cards/basics.yaml"} <= set(recorded)
    reads.clear()
    assert up_to_date(sample) is not None
    assert reads == []  # ... and from then on taken by their signatures
    # deckbuild's own sources too, in a new process (this one knows its code fingerprint).
    probe = (
        "import sys\n"
        "from pathlib import Path\n"
        "from deckbuild.incremental import uptodate\n"
        "reads = []\n"
        "real = uptodate._hash\n"
        "uptodate._hash = lambda *args: reads.append(args[0]) or real(*args)\n"
        "print(uptodate.up_to_date(Path(sys.argv[1])) is not None, len(reads))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe, str(sample)], capture_output=True, text=True, check=True, cwd=REPO)
    assert out.stdout.split() == ["True", "0"], out.stdout + out.stderr


def test_a_same_size_edit_that_keeps_the_mtime_is_caught(sample: Path) -> None:
    build(sample)
    card = sample / "cards" / "basics.yaml"
    _settle(card)
    assert up_to_date(sample) is not None
    assert "cards/basics.yaml" in _recorded(sample)
    before = card.stat()
    data = card.read_bytes()
    edited = data.replace(b"Across the batch, per feature.", b"Per feature, across the batch.")
    assert len(edited) == len(data) and edited != data
    with open(card, "r+b") as handle:  # in place: the same inode
        handle.write(edited)
    os.utime(card, ns=(before.st_atime_ns, before.st_mtime_ns))  # and the old mtime back
    after = card.stat()
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (before.st_ino, before.st_size, before.st_mtime_ns)
    assert up_to_date(sample) is None  # the ctime moved: no program can set it back
    assert build(sample, force=False).changed_notes == 1


def test_a_file_swapped_for_a_link_to_equal_bytes_is_caught(sample: Path) -> None:
    build(sample)
    card = sample / "cards" / "basics.yaml"
    _settle(card)
    assert up_to_date(sample) is not None
    twin = sample.parent / "basics-twin.yaml"
    twin.write_bytes(card.read_bytes())
    card.unlink()
    card.symlink_to(twin)
    assert up_to_date(sample) is None


def test_only_settled_files_are_trusted_by_their_signature(tmp_path: Path) -> None:
    """Racy git: a write in the same timestamp tick as the read would keep the signature,
    so a file read within the margin of its last change is hashed again next time."""
    ns = 1_700_000_000_123_456_789
    fine = uptodate._SETTLED_NS
    assert not uptodate._settled(SimpleNamespace(st_mtime_ns=ns, st_ctime_ns=ns), ns)  # type: ignore[arg-type]
    assert not uptodate._settled(SimpleNamespace(st_mtime_ns=ns, st_ctime_ns=ns), ns + fine)  # type: ignore[arg-type]
    assert uptodate._settled(SimpleNamespace(st_mtime_ns=ns, st_ctime_ns=ns), ns + fine + 1)  # type: ignore[arg-type]
    # A newer ctime (a chmod, a write with the mtime set back) counts as the last change.
    assert not uptodate._settled(SimpleNamespace(st_mtime_ns=ns - 10 * fine, st_ctime_ns=ns), ns + fine)  # type: ignore[arg-type]
    # File systems that keep whole seconds need a wider margin.
    whole = 1_700_000_000_000_000_000
    assert not uptodate._settled(SimpleNamespace(st_mtime_ns=whole, st_ctime_ns=whole), whole + fine + 1)  # type: ignore[arg-type]
    assert uptodate._settled(SimpleNamespace(st_mtime_ns=whole, st_ctime_ns=whole), whole + uptodate._SETTLED_COARSE_NS + 1)  # type: ignore[arg-type]
    # A file hashed right after it was written is not remembered by its signature.
    fresh = tmp_path / "fresh.txt"
    fresh.write_text("just written", "utf-8")
    files = uptodate._Files(tmp_path, {})
    digest = files.hash(fresh)
    assert files.seen == {}
    _settle(fresh)
    files = uptodate._Files(tmp_path, {})
    assert files.hash(fresh) == digest and list(files.seen) == ["fresh.txt"]
    # A recorded signature whose hash is not that file's content is never produced, but a
    # changed signature is never taken on trust either.
    fresh.write_text("changed text", "utf-8")
    again = uptodate._Files(tmp_path, files.seen)
    assert again.hash(fresh) != digest
