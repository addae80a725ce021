"""The build record (deckbuild.lock): per-note content hash and modification time.

Anki updates a note on import only when the incoming `mod` is newer than its own.  So a
note's mod must stay fixed while its content is unchanged and move forward when it
changes.  This file remembers both, lives beside the sources, and is committed: one JSON
line per note keeps diffs readable.  The clock is read only when something changed.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from deckbuild.errors import LocatedError, Location
from deckbuild.incremental.memo import Memo
from deckbuild.layout import RECORD_FILE
from deckbuild.model import RenderedNote, StampedNote

FORMAT = 1


@dataclass(frozen=True)
class Stamp:
    """What the record keeps for one note or note type."""

    hash: str
    mod: int
    notetype: str = field(default="", compare=False)  # a note's kind ("qa", "cloze"): one GUID, one kind
    guid: str = field(default="", compare=False)  # the GUID it shipped with (a rename must not move it)


@dataclass(frozen=True)
class Record:
    notes: Mapping[str, Stamp] = field(default_factory=dict)
    notetypes: Mapping[str, Stamp] = field(default_factory=dict)
    extra: Mapping[str, Any] = field(default_factory=dict)  # releases etc. (versioning.py)

    def to_bytes(self) -> bytes:
        lines = ["{", f'  "format": {FORMAT},']
        lines.append('  "notetypes": {')
        lines.append(",\n".join(f"    {json.dumps(k)}: {_stamp_json(v)}" for k, v in sorted(self.notetypes.items())))
        lines.append("  },")
        for key, value in sorted(self.extra.items()):
            lines.append(f"  {json.dumps(key)}: {json.dumps(value, sort_keys=True, ensure_ascii=False)},")
        lines.append('  "notes": {')
        lines.append(",\n".join(f"    {_quote(k)}: {_stamp_json(v)}" for k, v in sorted(self.notes.items())))
        lines.append("  }")
        lines.append("}")
        return ("\n".join(line for line in lines if line) + "\n").encode()


# json.dumps's own string encoder (ensure_ascii): a stamp line is built by hand because a
# large deck's record has one per note, and a dict through json.dumps costs several times more.
_quote = json.encoder.encode_basestring_ascii


def _stamp_json(stamp: Stamp) -> str:
    """json.dumps({"hash": ..., "mod": ..., "type": ..., "guid": ...}), the last two only if set."""
    text = '{"hash": ' + _quote(stamp.hash) + ', "mod": ' + str(int(stamp.mod))
    if stamp.notetype:
        text += ', "type": ' + _quote(stamp.notetype)
    if stamp.guid:
        text += ', "guid": ' + _quote(stamp.guid)
    return text + "}"


def load_record(root: Path, memo: Memo | None = None) -> Record:
    """deckbuild.lock as a Record; `memo` (serve) keeps the last one read, for the same bytes."""
    path = root / RECORD_FILE
    if not path.exists():
        return Record()
    from deckbuild.fsutil import not_regular_message, special_kind

    kind = special_kind(path)
    if kind is not None:
        raise LocatedError(Location(RECORD_FILE), "E125", not_regular_message(kind))
    try:
        raw = path.read_bytes()
        known = memo.files.get(RECORD_FILE) if memo is not None else None
        if known is not None and known[0] == raw and isinstance(known[1], Record):
            return known[1]
        data = json.loads(raw.decode("utf-8"))
        notes = {
            k: Stamp(str(v["hash"]), int(v["mod"]), str(v.get("type", "")), str(v.get("guid", "")))
            for k, v in data.get("notes", {}).items()
        }
        notetypes = {k: Stamp(str(v["hash"]), int(v["mod"])) for k, v in data.get("notetypes", {}).items()}
        extra = {k: v for k, v in data.items() if k not in {"format", "notes", "notetypes"}}
    except (OSError, RecursionError, ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError) as exc:
        raise LocatedError(
            Location(RECORD_FILE),
            "E160",
            f"the build record is unreadable ({exc}); restore it from git (`git checkout {RECORD_FILE}`), "
            "or delete it to start over (every note then counts as changed)",
        ) from None
    record = Record(notes, notetypes, extra)
    if memo is not None:
        memo.files[RECORD_FILE] = (raw, record)
    return record


def remember_written(memo: Memo, data: bytes, record: Record) -> None:
    """`record`, just written as `data` by this process (serve), for its next load_record to take
    back without parsing it: as reading `data` would give it (entries in the file's order), and
    only if its extra survives JSON as it is."""
    try:
        extra = dict(record.extra)
        read = json.loads(json.dumps(extra, sort_keys=True, ensure_ascii=False))
    except (TypeError, ValueError):
        return
    if read == extra:
        notes, notetypes = dict(sorted(record.notes.items())), dict(sorted(record.notetypes.items()))
        memo.files[RECORD_FILE] = (data, Record(notes, notetypes, read))


class Clock:
    """Reads the time once, and only if asked: SOURCE_DATE_EPOCH wins over the system clock."""

    def __init__(self) -> None:
        self._now: int | None = None

    def now(self) -> int:
        if self._now is None:
            env = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
            self._now = int(env) if env.isdigit() else int(time.time())
        return self._now


def stamp_notes(
    notes: Sequence[RenderedNote], notetype_hashes: Mapping[str, str], record: Record, clock: Clock
) -> tuple[list[StampedNote], dict[str, int], Record]:
    """Give every note and note type its mod; return them and the updated record."""
    stamped: list[StampedNote] = []
    new_notes: dict[str, Stamp] = {}
    known = record.notes
    for note in notes:
        old = known.get(note.card_id)
        if old is not None and old.hash == note.content_hash:
            same = old.notetype == note.notetype and old.guid == note.guid
            stamp = old if same else Stamp(old.hash, old.mod, note.notetype, note.guid)
        else:
            # A renamed card's note is the learner's old note: its mod must be newer than that one's.
            before = [record.notes[p].mod for p in note.previous_ids if p in record.notes]
            if old is not None:
                before.append(old.mod)
            floor = max(before) + 1 if before else 0
            mod = max(clock.now(), floor)
            stamp = Stamp(note.content_hash, mod, note.notetype, note.guid)
        new_notes[note.card_id] = stamp
        stamped.append(_stamped(note, stamp.mod))
    # Keep stamps of notes that left the sources: a release needs them to retire notes.
    if known.keys() - new_notes.keys():
        for card_id, stamp in known.items():
            new_notes.setdefault(card_id, stamp)
    new_types: dict[str, Stamp] = {}
    for key, content_hash in notetype_hashes.items():
        old = record.notetypes.get(key)
        if old is not None and old.hash == content_hash:
            new_types[key] = old
        else:
            new_types[key] = Stamp(content_hash, clock.now() if old is None else max(clock.now(), old.mod + 1))
    for key, stamp in record.notetypes.items():
        new_types.setdefault(key, stamp)
    mods = {key: stamp.mod for key, stamp in new_types.items()}
    return stamped, mods, Record(new_notes, new_types, record.extra)


def _stamped(note: RenderedNote, mod: int) -> StampedNote:
    """StampedNote(note, mod) without the frozen dataclass's __init__ (a note per card, every build)."""
    stamped: StampedNote = object.__new__(StampedNote)
    object.__setattr__(stamped, "__dict__", {"note": note, "mod": mod})
    return stamped
