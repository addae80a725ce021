"""release/record.py: deckbuild.lock round-trips byte for byte, and each note's mod follows the rules Anki needs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deckbuild.errors import LocatedError
from deckbuild.model import RenderedNote
from deckbuild.release.record import Clock, Record, Stamp, load_record, stamp_notes

RECORD = b"""{
  "format": 1,
  "notetypes": {
    "cloze": {"hash": "c1", "mod": 100},
    "qa": {"hash": "q1", "mod": 100}
  },
  "identity": {"name": "D\xc3\xa9ck", "namespace": "ns"},
  "notes": {
    "a": {"hash": "h-a", "mod": 100, "type": "qa", "guid": "g-a"},
    "gone": {"hash": "h-gone", "mod": 90, "type": "cloze", "guid": "g-gone"}
  }
}
"""


class FixedClock(Clock):
    """A clock at a given time that counts how often it is read."""

    def __init__(self, now: int) -> None:
        super().__init__()
        self.value = now
        self.reads = 0

    def now(self) -> int:
        self.reads += 1
        return self.value


def _note(card_id: str, content_hash: str, previous_ids: tuple[str, ...] = ()) -> RenderedNote:
    return RenderedNote(card_id, f"g-{card_id}", "qa", ("front",), (), 0, content_hash, previous_ids=previous_ids)


def _record() -> Record:
    return Record(
        notes={"a": Stamp("h-a", 100, "qa", "g-a"), "gone": Stamp("h-gone", 90, "cloze", "g-gone")},
        notetypes={"qa": Stamp("q1", 100), "cloze": Stamp("c1", 100)},
        extra={"identity": {"namespace": "ns", "name": "Déck"}},
    )


def test_record_bytes_are_sorted_one_line_per_note() -> None:
    assert _record().to_bytes() == RECORD


def test_record_round_trips(tmp_path: Path) -> None:
    (tmp_path / "deckbuild.lock").write_bytes(RECORD)
    loaded = load_record(tmp_path)
    assert loaded == _record()
    assert [(s.notetype, s.guid) for s in loaded.notes.values()] == [("qa", "g-a"), ("cloze", "g-gone")]
    assert loaded.to_bytes() == RECORD


def test_no_record_is_an_empty_one(tmp_path: Path) -> None:
    assert load_record(tmp_path) == Record()
    assert Record().to_bytes() == b'{\n  "format": 1,\n  "notetypes": {\n  },\n  "notes": {\n  }\n}\n'


def test_unchanged_notes_keep_their_mod_and_the_clock_is_not_read() -> None:
    clock = FixedClock(500)
    stamped, mods, record = stamp_notes([_note("a", "h-a")], {"qa": "q1", "cloze": "c1"}, _record(), clock)
    assert [(s.note.card_id, s.mod) for s in stamped] == [("a", 100)]
    assert mods == {"qa": 100, "cloze": 100}
    assert clock.reads == 0
    assert record.notes["gone"] == Stamp("h-gone", 90)  # a note that left the sources keeps its stamp
    assert record.notes["gone"].guid == "g-gone"


def test_changed_and_new_notes_get_the_build_time() -> None:
    stamped, _mods, record = stamp_notes([_note("a", "h-a2"), _note("new", "h-new")], {"qa": "q1"}, _record(), FixedClock(500))
    assert [(s.note.card_id, s.mod) for s in stamped] == [("a", 500), ("new", 500)]
    assert record.notes["a"] == Stamp("h-a2", 500)


def test_a_changed_note_is_newer_even_when_the_clock_is_behind() -> None:
    """Anki updates a note only when the incoming mod is newer than its own."""
    stamped, _mods, _record_ = stamp_notes([_note("a", "h-a2")], {}, _record(), FixedClock(50))
    assert stamped[0].mod == 101


def test_a_renamed_card_is_newer_than_the_note_it_takes_over() -> None:
    stamped, _mods, _record_ = stamp_notes([_note("renamed", "h-r", previous_ids=("a",))], {}, _record(), FixedClock(50))
    assert stamped[0].mod == 101


def test_note_type_mods() -> None:
    _stamped, mods, record = stamp_notes([], {"qa": "q2", "cloze": "c1", "new": "n1"}, _record(), FixedClock(50))
    assert mods == {"qa": 101, "cloze": 100, "new": 50}
    assert record.notetypes["qa"] == Stamp("q2", 101)


def test_clock_reads_once_and_prefers_source_date_epoch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1234567890")
    clock = Clock()
    assert clock.now() == 1234567890
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1")
    assert clock.now() == 1234567890


def test_unreadable_record(tmp_path: Path) -> None:
    (tmp_path / "deckbuild.lock").write_text('{"notes": {"a": {"mod": 1}}}', encoding="utf-8")
    with pytest.raises(LocatedError) as caught:
        load_record(tmp_path)
    assert str(caught.value) == (
        "deckbuild.lock: E160 the build record is unreadable ('hash'); restore it from git (`git checkout deckbuild.lock`), "
        "or delete it to start over (every note then counts as changed)"
    )


def test_a_pipe_in_the_records_place_is_never_opened(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "deckbuild.lock")
    with pytest.raises(LocatedError) as caught:
        load_record(tmp_path)
    assert caught.value.code == "E125"
    assert str(caught.value).startswith("deckbuild.lock: E125 expected a regular file; found a named pipe")


@settings(max_examples=300, deadline=None)
@given(
    st.text(max_size=20),
    st.integers(min_value=0, max_value=2**53),
    st.text(max_size=10),
    st.text(max_size=30),
    st.text(min_size=1, max_size=20),
)
def test_a_stamp_line_is_what_json_dumps_writes(hash_: str, mod: int, notetype: str, guid: str, card_id: str) -> None:
    """The record writes its per-note lines by hand (a large deck has one per note); they must
    stay byte-equal to json.dumps's, which earlier records were written with."""
    import json

    data: dict[str, object] = {"hash": hash_, "mod": mod}
    if notetype:
        data["type"] = notetype
    if guid:
        data["guid"] = guid
    written = Record({card_id: Stamp(hash_, mod, notetype, guid)}).to_bytes().decode()
    assert f"    {json.dumps(card_id)}: {json.dumps(data)}\n" in written


def test_a_record_serve_wrote_is_taken_back_as_reading_its_file_gives_it(tmp_path: Path) -> None:
    from deckbuild.incremental.memo import Memo
    from deckbuild.release.record import remember_written

    record = Record(
        {"b": Stamp("h2", 2, "qa", "g"), "a": Stamp("h1", 1, "cloze", "g")},  # one GUID twice: a renamed card
        {"qa": Stamp("t", 1)},
        {"media": {"y.png": {"name": "y.png", "hash": "2"}, "x.png": {"name": "x.png", "hash": "1"}}, "identity": {"n": 1}},
    )
    data = record.to_bytes()
    (tmp_path / "deckbuild.lock").write_bytes(data)
    memo = Memo()
    remember_written(memo, data, record)
    kept = load_record(tmp_path, memo)
    read = load_record(tmp_path)
    assert kept is not read and kept == read
    assert list(kept.notes) == list(read.notes) and list(kept.extra) == list(read.extra)
    assert list(kept.extra["media"]) == list(read.extra["media"])
    assert load_record(tmp_path, memo) is kept  # the same bytes: not read again
    (tmp_path / "deckbuild.lock").write_bytes(data.replace(b'"h1"', b'"h9"'))
    assert load_record(tmp_path, memo).notes["a"].hash == "h9"  # other bytes: read
    remember_written(memo, data, Record({}, {}, {"tuple": (1, 2)}))  # JSON gives it back as a list: not taken
    assert memo.files["deckbuild.lock"][1].notes["a"].hash == "h9"  # type: ignore[attr-defined]
