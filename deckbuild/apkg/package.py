"""The only module that imports genanki: stamped notes -> reproducible .apkg bytes.

genanki's defaults are replaced where they hurt learners: every note carries its own mod
(not the package time), note types carry their own mod, field and template dicts carry
stable ids, and the zip is written with fixed entry dates and modes in sorted order, so
the same inputs give the same bytes on any machine.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import sqlite3
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping, Sequence
from pathlib import Path
from typing import Any

import genanki

from deckbuild.apkg import ids, row_copy
from deckbuild.apkg.notetypes import NoteType
from deckbuild.model import MediaFile, StampedNote

COLLECTION_PAGE_BYTES = 8192
"""The collection's SQLite page size (SQLite's default is 4096).  Measured on a 100,000-note
collection: inserting the rows 0.41 -> 0.36 s, making the indexes 0.18 -> 0.14 s and deflating
the file 0.30 -> 0.28 s, as the file is 6% smaller (less space left over at the end of pages).
16 KB pages were a little faster still but raised a 100k first build's peak memory by 40 MB
(8 KB: within a run's spread).  Anki and every SQLite read the page size from the file's header."""


PROGRESS_STEPS = 20_000
"""SQLite virtual-machine steps between two asks of a package's checkpoint within one statement
(a fraction of a millisecond): the copy of a large deck's unchanged rows, or an index of
them, is one statement of a tenth of a second or more at 100,000 notes, which a newer save in
`deckbuild serve` would otherwise wait for (tests lower this)."""


class _Stop:
    """SQLite's progress handler for a package that may be abandoned: it asks `checkpoint`
    inside every statement, and what that raised ends the statement; `check` raises it again,
    in place of SQLite's error and of the fallbacks that error starts (a collection made
    without copied rows, or in memory)."""

    def __init__(self, checkpoint: Callable[[], None] | None) -> None:
        self._checkpoint = checkpoint
        self.raised: BaseException | None = None

    def __call__(self) -> int:
        if self.raised is None and self._checkpoint is not None:
            try:
                self._checkpoint()
            except BaseException as exc:  # SQLite is only told to stop; check() raises it
                self.raised = exc
        return 0 if self.raised is None else 1

    def watch(self, conn: sqlite3.Connection) -> None:
        if self._checkpoint is not None:
            conn.set_progress_handler(self, PROGRESS_STEPS)

    def check(self) -> None:
        if self.raised is not None:
            raise self.raised


class _Model(genanki.Model):  # type: ignore[misc]
    """A genanki Model whose mod is ours, not the package timestamp (and, for a declared
    note type, whose `req` is Anki's, not genanki's: see deckbuild/apkg/template_language.py)."""

    def __init__(self, *args: Any, mod: int, req: list[list[object]] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deckbuild_mod = mod
        self._deckbuild_req = req

    @property
    def _req(self) -> Any:
        # Computed once: this property hides genanki's cached one, which then ran chevron
        # over every template for each note genanki is asked about.
        if self._deckbuild_req is None:
            self._deckbuild_req = super()._req
        return self._deckbuild_req

    def to_json(self, timestamp: float, deck_id: int) -> dict[str, Any]:
        data: dict[str, Any] = super().to_json(self._deckbuild_mod, deck_id)
        return data


def _declared_req(notetype: NoteType) -> list[list[object]] | None:
    if not notetype.declared:
        return None
    from deckbuild.apkg.template_language import legacy_req, parse

    return legacy_req(notetype.fields, [parse(front).nodes for _name, front, _back in notetype.templates])


class _CardRule:
    """Which cards a declared note type's note gets: Anki's rule, computed here (never genanki's `_req`)."""

    def __init__(self, notetype: NoteType) -> None:
        from deckbuild.apkg.template_language import parse

        self.notetype = notetype
        self.fronts = [parse(front).nodes for _name, front, _back in notetype.templates]

    def ords(self, card_id: str, fields: Sequence[str]) -> list[int]:
        from deckbuild.apkg.template_language import card_ords

        ords = card_ords(self.notetype.fields, fields, self.fronts, self.notetype.is_cloze)
        if not ords:  # validation (E216, E217) refuses such notes before packaging
            raise ValueError(f"note {card_id!r} of note type {self.notetype.key!r} would get no card")
        return ords


# The rows genanki's Note.write_to_db writes, with the columns it always writes the same
# value to (usn -1, csum 0, flags 0, data '', a new card's zeros) given in the statement:
# SQLite stores a literal as it stores the same value bound, and binding 6 values instead
# of 18 per card row is a quarter of the cards' insert time.
_NOTE_SQL = "INSERT INTO notes VALUES(?,?,?,?,-1,?,?,?,0,0,'')"
_CARD_SQL = "INSERT INTO cards VALUES(?,?,?,?,?,-1,0,0,?,0,0,0,0,0,0,0,0,'')"


def _note_rows(
    notes: Sequence[StampedNote],
    models: Mapping[str, _Model],
    deck_ids: Mapping[str, int],
    rules: Mapping[str, _CardRule],
    model_keys: Mapping[str, str],
    id_gen: Iterator[int],
    card_rows: list[tuple[Any, ...]],
    card_ords: Mapping[str, str],
    used: dict[str, str],
    note_ids: list[int],
    checkpoint: Callable[[], None] | None = None,
) -> Iterator[tuple[Any, ...]]:
    """The notes table rows genanki's Note.write_to_db would insert one by one (cards into
    card_rows), each as the values _NOTE_SQL and _CARD_SQL bind.

    Same values and the same id sequence (note id, then its cards' ids), but built here
    so they go in with one executemany each: genanki's per-note work (a regex over every
    field looking for invalid HTML tags, tag-list validation, one execute per row) is most
    of its time for a large deck, and our fields are escaped and our tags checked already.
    Which cards a note gets is still genanki's decision (`Note.cards`: `_req` for
    front/back, the cloze numbers for cloze) for the built-in note types, remembered in
    `card_ords` under the note type's content and the note's content hash (the fields and
    tags it is computed from), so a rebuild asks genanki only about changed notes; and
    Anki's own rule for declared ones (`rules`), whose conditional templates genanki gets
    wrong.  `deck_ids` maps a note's subdeck ("" = the deck itself) to its deck id;
    `model_keys` each note type's _model_key.  `used` receives the card ordinals of these
    notes, `note_ids` their ids.
    """
    by_pattern: dict[tuple[str, tuple[bool, ...]], str] = {}
    for index, stamped in enumerate(notes):
        if checkpoint is not None and index % 1000 == 0:
            checkpoint()
        note, mod = stamped.note, stamped.mod
        model = models[note.notetype]
        if len(note.fields) != len(model.fields):
            raise ValueError(f"note {note.card_id!r}: {len(note.fields)} fields for note type {model.name!r}")
        fields = list(note.fields)
        note_id = next(id_gen)
        note_ids.append(note_id)
        tags = " " + " ".join(note.tags) + " "
        # Yielded, not collected: executemany consumes one row at a time (no second copy of every field).
        sort_field = fields[model.sort_field_index]
        yield (note_id, note.guid, model.model_id, mod, tags, "\x1f".join(fields), sort_field)
        deck_id = deck_ids[note.deck]
        rule = rules.get(note.notetype)
        if rule is not None:
            for ord_ in rule.ords(note.card_id, fields):
                card_rows.append((next(id_gen), note_id, deck_id, ord_, mod, note.due))
            continue
        key = f"{model_keys[note.notetype]}:{note.content_hash}"
        known = card_ords.get(key)
        if known is None:
            if model.model_type == genanki.Model.FRONT_BACK:
                # genanki decides a front/back note's cards from which fields are empty
                # (Note._front_back_cards): asked once per note type and pattern.
                pattern = (note.notetype, tuple(bool(value) for value in fields))
                known = by_pattern.get(pattern)
                if known is None:
                    known = by_pattern[pattern] = _genanki_ords(model, fields, note.card_id)
            else:
                known = _genanki_ords(model, fields, note.card_id)
        used[key] = known
        for ord_text in known.split(",") if known else ():
            card_rows.append((next(id_gen), note_id, deck_id, int(ord_text), mod, note.due))


def _row_indexes(cursor: sqlite3.Cursor) -> list[str]:
    """Drop the indexes of the notes and cards tables (still empty); their CREATE statements, in order."""
    found = cursor.execute(
        "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name IN ('notes', 'cards') AND sql IS NOT NULL"
        " ORDER BY rowid"
    ).fetchall()
    for name, _sql in found:
        cursor.execute(f'DROP INDEX "{name}"')
    return [sql for _name, sql in found]


def _layout(
    models: Mapping[str, _Model],
    model_keys: Mapping[str, str],
    used: Iterable[str],
    rules: Mapping[str, _CardRule],
    deck_ids: Mapping[str, int],
) -> str:
    """What every note's rows depend on besides the note (apkg/row_copy.py): the used note types'
    ids, sort fields and what decides their cards, and the deck ids."""
    types = [[key, models[key].model_id, models[key].sort_field_index, model_keys[key], key in rules] for key in sorted(used)]
    return json.dumps([types, sorted(deck_ids.items())])


def _genanki_ords(model: _Model, fields: list[str], card_id: str) -> str:
    """genanki's choice of a note's cards, as comma-separated ordinals."""
    made = genanki.Note(model=model, fields=fields).cards
    if any(card.suspend for card in made):  # never for our note types; kept out of the memo
        raise ValueError(f"note {card_id!r}: genanki suspends one of its cards")
    return ",".join(str(card.ord) for card in made)


def _model_key(model: _Model) -> str:
    """What genanki's choice of cards depends on besides the fields: type and templates."""
    payload = json.dumps([model.model_type, model.fields, model.templates], sort_keys=True)
    return hashlib.blake2b(payload.encode(), digest_size=8).hexdigest()


def _model(notetype: NoteType, namespace: str, mod: int) -> _Model:
    return _Model(
        notetype.model_id(namespace),
        notetype.name(namespace),
        fields=[{"name": name, "id": notetype.field_id(namespace, name)} for name in notetype.fields],
        templates=[
            {"name": name, "qfmt": front, "afmt": back, "id": notetype.template_id(namespace, name)}
            for name, front, back in notetype.templates
        ],
        css=notetype.css,
        model_type=genanki.Model.CLOZE if notetype.is_cloze else genanki.Model.FRONT_BACK,
        sort_field_index=notetype.sort_field,
        mod=mod,
        req=_declared_req(notetype),
    )


def write_package(
    out_path: Path,
    *,
    deck_name: str,
    deck_description: str,
    namespace: str,
    notetypes: Mapping[str, NoteType],
    notetype_mods: Mapping[str, int],
    notes: Sequence[StampedNote],
    media: Sequence[MediaFile],
    card_ords: MutableMapping[str, str] | None = None,
    counts: MutableMapping[str, int] | None = None,
    work_dir: Path | None = None,
    checkpoint: Callable[[], None] | None = None,
    last: row_copy.Collection | None = None,
    keep: Callable[[row_copy.Collection], None] | None = None,
    copyable: int = 0,
) -> bytes:
    """Build the .apkg and return its bytes (the caller writes them atomically).

    `checkpoint`, called every thousand notes, within every SQLite statement (_Stop), before
    the zip and for every chunk of the collection zipped, may raise to abandon the package
    (serve, when a newer save makes it outdated): that is raised, and nothing is kept.

    `work_dir`: a folder of the project for a scratch copy of the collection (deleted
    before returning); without one the collection is built in memory.  Same bytes either way.

    `card_ords`: which cards each note gets, from earlier builds; left holding this build's.
    `counts`, if given, receives the package's number of "notes" and "cards".

    With a `work_dir`: `last`, the collection of the last package (apkg/row_copy.py), whose
    rows the first `copyable` notes may take where they did not change; `keep` receives this
    package's collection (its scratch file, to move away before this returns).
    """
    card_ords = {} if card_ords is None else card_ords
    models = {key: _model(nt, namespace, notetype_mods[key]) for key, nt in notetypes.items()}
    rules = {key: _CardRule(nt) for key, nt in notetypes.items() if nt.declared}
    deck_id = ids.deck_id(namespace, deck_name)
    deck = genanki.Deck(deck_id, deck_name, description=deck_description)
    # Only the note types the notes use: an unused one would appear in every learner's
    # collection (an adopted deck would bring deckbuild's two built-in ones).
    kinds = {(stamped.note.notetype, stamped.note.deck) for stamped in notes}  # one pass over the notes
    used = {notetype for notetype, _deck in kinds}
    for key, model in models.items():
        if key in used:
            deck.add_model(model)
    # Subdecks by full name (Anki matches decks by name), each with its parents, in name order.
    deck_ids = {"": deck_id}
    decks = [deck]
    for full in subdeck_names(deck_name, {deck for _notetype, deck in kinds}):
        decks.append(genanki.Deck(ids.deck_id(namespace, full), full))
        deck_ids[full[len(deck_name) + 2 :]] = decks[-1].deck_id
    timestamp = ids.package_time([*notetype_mods.values(), *(n.mod for n in notes)])

    # Computed before genanki's write_to_db, which adds each field's and template's `ord` to the models.
    model_keys = {key: _model_key(model) for key, model in models.items()}
    layout = _layout(models, model_keys, used, rules, deck_ids)
    copyable = min(copyable, len(notes))
    keys = [row_copy.note_key(n) for n in notes[:copyable]] if last is not None else None
    note_ids: list[int] = []  # each note's id, then the id after the last (for the next build's copies)
    stop = _Stop(checkpoint)

    def fill(conn: sqlite3.Connection, last: row_copy.Collection | None) -> None:
        stop.watch(conn)
        cursor = conn.cursor()
        cursor.execute(f"PRAGMA page_size = {COLLECTION_PAGE_BYTES}")  # before the first table
        # genanki writes the schema, the collection, the deck and the note types ...
        genanki.Package(decks).write_to_db(cursor, timestamp, ids.row_ids(timestamp))
        # ... and we add the notes and cards it would write, in bulk (see _note_rows), with
        # their indexes made afterwards from genanki's own statements (a quarter of the
        # time of keeping them up to date row by row).  Runs of notes unchanged since the last
        # package are copied from its collection (apkg/row_copy.py), the others made here.
        indexes = _row_indexes(cursor)
        runs = row_copy.runs(keys or (), len(notes), last, layout)
        source = last if last is not None and any(run.copied for run in runs) else None  # what is copied from
        if source is not None:
            row_copy.attach(conn, source)
        used_ords: dict[str, str] = {}

        def make(part: Sequence[StampedNote], first_id: int) -> tuple[list[tuple[Any, ...]], int]:
            card_rows: list[tuple[Any, ...]] = []
            counter = itertools.count(first_id)
            made = _note_rows(
                part, models, deck_ids, rules, model_keys, counter, card_rows, card_ords, used_ords, note_ids, checkpoint
            )
            cursor.executemany(_NOTE_SQL, made)
            return card_rows, next(counter)

        note_ids.clear()
        first = next(ids.row_ids(timestamp))
        cards = row_copy.insert_rows(cursor, notes, runs, first, note_ids, make, _CARD_SQL, source)
        # What this build's notes need, for the next build.  The copied notes' cards are those of
        # the last package, whose ordinals card_ords holds: kept, those of the notes that left dropped.
        if source is not None:
            for content, notetype in map(row_copy.content_and_type, row_copy.gone(runs, source)):
                card_ords.pop(f"{model_keys.get(notetype)}:{content}", None)
        else:
            card_ords.clear()
        card_ords.update(used_ords)
        for statement in indexes:
            cursor.execute(statement)
        if checkpoint is not None:
            checkpoint()
        if counts is not None:
            counts.update(notes=len(notes), cards=cards)
        conn.commit()

    media = sorted(media, key=lambda m: m.name)
    if work_dir is not None:

        def made(path: Path, crc: int) -> None:
            if keep is not None:
                kept = [
                    *(keys if keys is not None else map(row_copy.note_key, notes[:copyable])),
                    *map(row_copy.note_key, notes[copyable:]),
                ]
                keep(row_copy.Collection(path, layout, kept, list(note_ids), copyable, crc))

        try:
            data = _package_via_file(work_dir, lambda conn: fill(conn, last), media, made, checkpoint)
        except row_copy.CopyFailed:  # then every row is made here (unless the copy was stopped)
            stop.check()
            data = _package_via_file(work_dir, lambda conn: fill(conn, None), media, made, checkpoint)
        stop.check()  # a stopped statement gives None too: abandoned, not an unwritable folder
        if data is not None:
            return data
    # In memory, not a temp file: a build writes nothing outside the project, even if killed.
    conn = sqlite3.connect(":memory:")
    try:
        fill(conn, None)
        db_bytes = conn.serialize()
    except sqlite3.Error:
        stop.check()
        raise
    finally:
        conn.close()
    return _zip(db_bytes, media, checkpoint=checkpoint)


def _package_via_file(
    work_dir: Path,
    fill: Callable[[sqlite3.Connection], None],
    media: Sequence[MediaFile],
    made: Callable[[Path, int], None],
    checkpoint: Callable[[], None] | None = None,
) -> bytes | None:
    """The package with its collection built in a scratch file of `work_dir` and streamed
    into the zip, so a large deck's collection is never held in memory twice (the database
    and its serialized copy were the peak of a 100k-card build).  Same bytes as the
    in-memory way (see _collection_chunks).  None if the scratch file cannot be written
    (a read-only or full disk): the caller builds in memory instead.  `made` is given the
    scratch file and its CRC-32 before it is deleted (to move it away and keep it)."""
    from deckbuild.leftovers import remove_abandoned
    from deckbuild.writer import open_database, scratch_file

    remove_abandoned(work_dir, "package-*.anki2")
    with scratch_file(work_dir, "package-", ".anki2") as name:
        if name is None:
            return None
        try:
            conn = open_database(name)
            try:
                conn.execute("PRAGMA journal_mode=OFF")  # a scratch file: nothing to roll back to
                conn.execute("PRAGMA synchronous=OFF")
                conn.execute(f"PRAGMA cache_size=-{SCRATCH_CACHE_KIB}")
                fill(conn)
            finally:
                conn.close()
            crc: list[int] = []
            data = _zip(name, media, crc, checkpoint)
        except (OSError, sqlite3.OperationalError):
            return None
        made(name, crc[0])
        return data


SCRATCH_CACHE_KIB = 16 * 1024
"""SQLite's page cache for the scratch collection (its default is 2 MB): the indexes, made after
the rows, read every row back, and a collection that fits (10,000 notes take about 10 MB) is
then read from memory, not from the file; a larger one costs at most this much more memory."""


def subdeck_names(deck_name: str, subdecks: Iterable[str]) -> list[str]:
    """Full names of the given subdecks ("" = the deck itself, left out) and of every parent between."""
    names: set[str] = set()
    for sub in subdecks:
        parts = sub.split("::") if sub else []
        for depth in range(1, len(parts) + 1):
            names.add("::".join([deck_name, *parts[:depth]]))
    return sorted(names)


def _zip(
    collection: bytes | Path,
    media: Sequence[MediaFile],
    crc: list[int] | None = None,
    checkpoint: Callable[[], None] | None = None,
) -> bytes:
    """The .apkg: the collection (its bytes, or the scratch file holding them: `crc` then receives
    the file's CRC-32), the media map, the media, deflated by a thread per core (apkg/zipwrite.py).
    `checkpoint` is called before each chunk of the collection is read (it may raise)."""
    from deckbuild.apkg.zipwrite import CHUNK, Deflater, archive
    from deckbuild.jobs import default_jobs

    with Deflater(default_jobs()) as deflater:
        if isinstance(collection, Path):
            chunks: Iterable[bytes] = _collection_chunks(collection, crc if crc is not None else [])
        else:
            chunks = (collection[i : i + CHUNK] for i in range(0, len(collection), CHUNK))
        first = deflater.member("collection.anki2", _asking(checkpoint, chunks))
        index = json.dumps({str(i): m.name for i, m in enumerate(media)}).encode()
        members = [first, deflater.member("media", [index])]
        members += [deflater.member(str(i), [item.path.read_bytes()]) for i, item in enumerate(media)]
        return archive(members)


def _asking(checkpoint: Callable[[], None] | None, chunks: Iterable[bytes]) -> Iterator[bytes]:
    """`chunks`, with `checkpoint` called before each."""
    for chunk in chunks:
        if checkpoint is not None:
            checkpoint()
        yield chunk


# A database file's header counts its writes and names the SQLite version that made it
# (offsets 24-27 and 92-99); an in-memory database's serialized header has zeros there.
# Zeroed in the stream, a collection built in a file has the bytes it always had, on any
# SQLite version.
_HEADER_COUNTERS = ((24, 28), (92, 100))


def _collection_chunks(path: Path, crc: list[int]) -> Iterator[bytes]:
    """The collection file a chunk at a time, header counters zeroed (as an in-memory
    database's are); `crc` then receives the CRC-32 of the file as it is."""
    from deckbuild.apkg.zipwrite import CHUNK

    with path.open("rb") as source:
        raw = source.read(CHUNK)
        file_crc = zlib.crc32(raw)
        head = bytearray(raw)
        for start, end in _HEADER_COUNTERS:
            head[start:end] = bytes(end - start)
        yield bytes(head)
        while chunk := source.read(CHUNK):
            file_crc = zlib.crc32(chunk, file_crc)
            yield chunk
    crc.append(file_crc)
