"""The .apkg's zip container: any zip reader gets every member back, and the bytes depend on
the members only -- not on how many threads deflated them, nor on how their bytes were read."""

from __future__ import annotations

import io
import random
import struct
import zipfile

import pytest

from deckbuild.apkg import zipwrite
from deckbuild.apkg.zipwrite import CHUNK, Deflater, archive

RANDOM = random.Random(7)
MEMBERS = {
    "collection.anki2": (b"SQLite format 3\x00" + b"row " * 900_000 + RANDOM.randbytes(CHUNK))[: 2 * CHUNK + 12345],
    "media": b'{"0": "a.png"}',
    "0": RANDOM.randbytes(5000),
    "1": b"",
    "2": b"z" * CHUNK,
    "caf\u00e9.svg": b"<svg/>",
}


def _zip(workers: int, piece: int, members: dict[str, bytes] = MEMBERS) -> bytes:
    with Deflater(workers) as deflater:
        made = [
            deflater.member(name, [data[i : i + piece] for i in range(0, len(data), piece)]) for name, data in members.items()
        ]
        return archive(made)


@pytest.mark.parametrize(("workers", "piece"), [(1, CHUNK), (2, 1 << 20), (3, 999_983), (8, 3 * CHUNK)])
def test_every_member_comes_back_and_the_bytes_never_depend_on_threads_or_reads(workers: int, piece: int) -> None:
    data = _zip(workers, piece)
    assert data == _zip(2, CHUNK)
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        assert zf.testzip() is None
        assert [i.filename for i in zf.infolist()] == list(MEMBERS)
        for info in zf.infolist():
            assert zf.read(info) == MEMBERS[info.filename]
            assert info.compress_type == zipfile.ZIP_DEFLATED and info.date_time == (1980, 1, 1, 0, 0, 0)
            assert info.external_attr == 0o644 << 16 and info.create_system == 3
    # Each chunk of a member is a stream of its own, so a long member's chunks deflate apart.
    assert len(data) < sum(len(v) for v in MEMBERS.values()) // 2


def test_sizes_offsets_and_counts_past_the_zip_limits_get_zip64_records(monkeypatch: pytest.MonkeyPatch) -> None:
    """Lowered limits stand in for a 4 GiB member and 65,535 pictures: the same records."""
    members = {str(i): RANDOM.randbytes(40 + i) for i in range(6)} | {"big": RANDOM.randbytes(300)}  # size too: 300 > 100
    plain = _zip(2, CHUNK, members)
    assert b"PK\x06\x06" not in plain
    monkeypatch.setattr(zipwrite, "_LIMIT", 100)
    monkeypatch.setattr(zipwrite, "_COUNT_LIMIT", 4)
    data = _zip(2, CHUNK, members)
    assert b"PK\x06\x06" in data and b"PK\x06\x07" in data  # the zip64 end record and its locator
    at = data.rindex(b"PK\x06\x06")
    *_, count, total, size, start = struct.unpack("<IQHHIIQQQQ", data[at : at + 56])
    assert (count, total) == (len(members), len(members)) and start + size == at  # the central directory before it
    locator = struct.unpack("<IIQI", data[at + 56 : at + 76])
    assert locator[2] == at
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        assert zf.testzip() is None
        assert {i.filename: zf.read(i) for i in zf.infolist()} == members


def test_a_many_core_machine_deflates_with_at_most_threads_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each thread holds chunks waiting for it: a 64-core machine must not hold 128 of them."""
    import threading
    import time

    running, most = [0], [0]
    lock = threading.Lock()
    real = zipwrite._deflate

    def slow(data: bytes, final: bool) -> bytes:
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.05)  # longer than reading the chunks: every thread the pool has gets one
        with lock:
            running[0] -= 1
        return real(data, final)

    monkeypatch.setattr(zipwrite, "_deflate", slow)
    data = RANDOM.randbytes(CHUNK // 64) * 64 * 24  # 24 chunks
    with Deflater(64) as deflater:
        member = deflater.member("big", [data])
        archived = archive([member])
    assert 1 < most[0] <= zipwrite.THREADS
    with zipfile.ZipFile(io.BytesIO(archived)) as zf:
        assert zf.read("big") == data
