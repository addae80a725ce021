"""The last package's rows copied into the next package by SQLite, for the notes that did not change.

A one-card edit of a large deck writes a package whose rows are the last package's, but for
the edited note's and for ids that all move with the package's time: building every row in
Python and binding it again was most of such a rebuild's packaging (0.7 s of 100,000 notes).
So a build keeps its collection (incremental/last_package.py), and the next one inserts each
long run of unchanged notes, and their cards, with one INSERT ... SELECT from it.

The collection stays byte-identical to a clean build's: the same rows go in, in the same
order, into a database built the same way; only who made each row differs.  A note's rows
are copied only when everything they are made of compares equal (`note_key`, and `layout`
for what all notes share), so a copied row is the row this build would have made.
"""

from __future__ import annotations

import sqlite3
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from deckbuild.errors import DeckbuildError
from deckbuild.model import StampedNote

MIN_RUN = 16
"""Shorter runs of unchanged notes are made in Python: a statement per run costs about as much
as a dozen rows made here, and a deck of alternating edits must not cost a statement per note."""


@dataclass(frozen=True)
class Collection:
    """A package's collection file and what its note rows were made from.

    `layout`: what every row depends on (note types' ids and templates, deck ids);
    `keys`: per note, in the package's order, `note_key`; `ids`: each note's id, and last the
    id after the last one's cards; `copyable`: how many notes, from the first, may be copied
    (the rendered ones; retired ones follow).  `crc`: zlib.crc32 of the file's bytes.
    `checked`: gives the CRC-32 the file's bytes have now (None: unreadable), if something
    computes it already; else attach reads the file.
    """

    path: Path
    layout: str
    keys: Sequence[str]
    ids: Sequence[int]
    copyable: int
    crc: int
    checked: Callable[[], int | None] | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Run:
    """Notes [start, end) of the package: copied (`first` is then the last package's id of
    the note at `start`, `after` the id after the run's last card) or made here (both 0)."""

    start: int
    end: int
    first: int = 0
    after: int = 0

    @property
    def copied(self) -> bool:
        return self.after > 0


class CopyFailed(DeckbuildError):
    """The last collection did not give the rows it was said to hold: write_package then makes
    every row itself (never reported)."""


def note_key(stamped: StampedNote) -> str:
    """What a note's rows are made of besides the layout: its fields and tags (through its
    content hash, which covers its note type too), mod, place, GUID and subdeck; the note type
    follows the hash (see `content_and_type`).  Two notes have the same key only if all of
    these are equal: the GUID is preceded by its length."""
    note = stamped.note
    return f"{note.content_hash} {note.notetype} {stamped.mod} {note.due} {len(note.guid)} {note.guid} {note.deck}"


def content_and_type(key: str) -> tuple[str, str]:
    """A note key's content hash and note type."""
    content, notetype, _rest = key.split(" ", 2)
    return content, notetype


def runs(keys: Sequence[str], total: int, last: Collection | None, layout: str) -> list[Run]:
    """The package's notes (`total`; `keys` for the first ones, those that may be copied) as
    runs, each copied from `last` or made here, in order."""
    if last is None or last.layout != layout or len(last.ids) != len(last.keys) + 1 or last.copyable > len(last.keys):
        return [Run(0, total)] if total else []
    old = last.keys
    same = min(len(keys), last.copyable)
    out: list[Run] = []
    made_from = 0  # the start of the notes made here not yet in `out`
    index = 0
    while index < same:
        if keys[index] != old[index]:
            index += 1
            continue
        end = index + 1
        while end < same and keys[end] == old[end]:
            end += 1
        if end - index >= MIN_RUN:
            if made_from < index:
                out.append(Run(made_from, index))
            out.append(Run(index, end, last.ids[index], last.ids[end]))
            made_from = end
        index = end
    if made_from < total:
        out.append(Run(made_from, total))
    return out


def file_crc(path: Path) -> int | None:
    """The CRC-32 of the file's bytes, or None if it cannot be read."""
    crc = 0
    try:
        with path.open("rb") as handle:
            while chunk := handle.read(1 << 20):
                crc = zlib.crc32(chunk, crc)
    except OSError:
        return None
    return crc


def attach(conn: sqlite3.Connection, last: Collection) -> None:
    """Open `last` beside the new collection (read only, as `last`) once its bytes are the ones
    described: a damaged or replaced file is never copied from (CopyFailed)."""
    crc = last.checked() if last.checked is not None else file_crc(last.path)
    if crc is None or crc != last.crc:
        raise CopyFailed
    try:
        conn.execute("ATTACH DATABASE ? AS last", (last.path.absolute().as_uri() + "?mode=ro",))
    except sqlite3.Error:
        raise CopyFailed from None


_COPY_NOTES = (
    "INSERT INTO notes SELECT id + ?, guid, mid, mod, usn, tags, flds, sfld, csum, flags, data"
    " FROM last.notes WHERE id >= ? AND id < ? ORDER BY id"
)
_COPY_CARDS = (
    "INSERT INTO cards SELECT id + ?, nid + ?, did, ord, mod, usn, type, queue, due, ivl, factor, reps, lapses, left,"
    " odue, odid, flags, data FROM last.cards WHERE id > ? AND id < ? ORDER BY id"
)


def copy_notes(cursor: sqlite3.Cursor, run: Run, next_id: int) -> int:
    """Insert the run's notes with ids from `next_id`; return how many cards they have."""
    try:
        cursor.execute(_COPY_NOTES, (next_id - run.first, run.first, run.after))
    except sqlite3.Error:
        raise CopyFailed from None
    if cursor.rowcount != run.end - run.start:
        raise CopyFailed
    return run.after - run.first - (run.end - run.start)


def copy_cards(cursor: sqlite3.Cursor, run: Run, next_id: int, cards: int) -> None:
    """Insert the cards of the run's notes, their ids (and their notes') from `next_id`."""
    shift = next_id - run.first
    try:
        cursor.execute(_COPY_CARDS, (shift, shift, run.first, run.after))
    except sqlite3.Error:
        raise CopyFailed from None
    if cursor.rowcount != cards:
        raise CopyFailed


def insert_rows(
    cursor: sqlite3.Cursor,
    notes: Sequence[StampedNote],
    runs: Sequence[Run],
    next_id: int,
    note_ids: list[int],
    make: Callable[[Sequence[StampedNote], int], tuple[list[tuple[Any, ...]], int]],
    card_sql: str,
    last: Collection | None,
) -> int:
    """Insert the notes run by run, then their cards run by run: the order a clean build inserts
    them in.  `make(notes, first id)` inserts notes made here and returns their cards' rows and
    the next id.  `note_ids` receives each note's id, then the next id.  Returns the number of cards."""
    made: list[list[tuple[Any, ...]] | int] = []  # per run: its cards' rows, or a copied run's card count
    starts: list[int] = []
    for run in runs:
        starts.append(next_id)
        if run.copied:
            assert last is not None
            made.append(copy_notes(cursor, run, next_id))
            note_ids.extend(old + next_id - run.first for old in last.ids[run.start : run.end])
            next_id += run.after - run.first
        else:
            card_rows, next_id = make(notes[run.start : run.end], next_id)
            made.append(card_rows)
    note_ids.append(next_id)
    cards = 0
    for run, start, rows in zip(runs, starts, made, strict=True):
        if isinstance(rows, int):
            copy_cards(cursor, run, start, rows)
            cards += rows
        else:
            cursor.executemany(card_sql, rows)
            cards += len(rows)
    return cards


def gone(runs: Sequence[Run], last: Collection) -> list[str]:
    """The keys of the last package's notes that no run copies (edited, moved, deleted, retired)."""
    out: list[str] = []
    start = 0
    for run in runs:
        if run.copied:
            out += last.keys[start : run.start]
            start = run.end
    return out + list(last.keys[start:])
