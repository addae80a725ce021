"""Same sources and record -> the same bytes, wherever and whenever they are built."""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path

from conftest import copy_project

from deckbuild.commands import build


def test_two_builds_give_identical_bytes(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    first = copy_project("sample", tmp_path / "a")
    one = build(first).path.read_bytes()
    # A second checkout elsewhere, with the committed record, on another "day".
    second = tmp_path / "b" / "sample"
    shutil.copytree(first, second, ignore=shutil.ignore_patterns("dist", ".deckbuild-cache"))
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1900000000")
    two = build(second).path.read_bytes()
    assert one == two
    # And a rebuild in place after deleting the output.
    out = build(first).path
    out.unlink()
    assert build(first).path.read_bytes() == one


def test_zip_entries_have_fixed_dates_and_order(sample: Path) -> None:
    with zipfile.ZipFile(build(sample).path) as zf:
        infos = zf.infolist()
    assert [i.filename for i in infos][:2] == ["collection.anki2", "media"]
    assert {i.date_time for i in infos} == {(1980, 1, 1, 0, 0, 0)}
