"""The build cache: parsed card files and rendered Markdown, kept in .deckbuild-cache/.

Parsing YAML and rendering Markdown are most of a build's time, and a typical rebuild
changes one file.  So a build keeps, in one SQLite file:

- per card file: the cards and problems parsed from it, keyed by a hash of deckbuild's code
  (uptodate.code_fingerprint), the file's display path and its exact bytes;
- per Markdown text: the field HTML it renders to, keyed by a hash of the text;
- per card: the note it rendered to (fields, tags, GUID), keyed by a hash of the card's
  content, the content of every card it draws on (its `of` parent, related and
  overlapping cards), its figure and the namespace (NoteReuse) -- so an edit re-renders
  only the notes whose inputs changed;
- per note: the card ordinals genanki gives it (package.py), keyed by its note type's
  content and the note's content hash.

The whole file is wiped when the code hash (stored in it) changes.

Both keys hold everything the value depends on, so an entry is either right or never
looked up: editing a file, moving it, or changing deckbuild or its libraries misses.
Values are JSON, never pickle, so a cache folder copied from elsewhere cannot run code.
Any trouble with the file (corrupt, locked, read-only) means "no cache", never a failed
build.  `deckbuild check` reads the cache but never writes it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from deckbuild.errors import Location, Problem
from deckbuild.incremental.uptodate import code_fingerprint
from deckbuild.layout import CACHE_DIR
from deckbuild.model import Card, Figure, MediaFile, RenderedNote

if TYPE_CHECKING:
    from deckbuild.validate import CardFacts

CACHE_FILE = "cache.sqlite"
# A cached note: every RenderedNote field but its position (text, tuples of text), a column each.
_NOTE_FIELDS = tuple(f.name for f in dataclasses.fields(RenderedNote) if f.name != "due")
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (code TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS parsed (key BLOB PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS facts (key BLOB PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS markdown (key BLOB PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS notes (key BLOB PRIMARY KEY, {note_columns});
CREATE TABLE IF NOT EXISTS ords (key TEXT PRIMARY KEY, value TEXT NOT NULL);
""".format(note_columns=", ".join(f"{name} TEXT NOT NULL" for name in _NOTE_FIELDS))
_TABLES = ("meta", "parsed", "facts", "markdown", "notes", "ords")


class BuildCache:
    """One build's view of the cache; a no-op when `conn` is None."""

    def __init__(self, conn: sqlite3.Connection | None, writable: bool) -> None:
        self._conn = conn
        self._writable = writable and conn is not None
        self._code = code_fingerprint().encode()
        self._used_parsed: set[bytes] = set()
        self._used_notes: set[bytes] = set()
        self._fresh_notes: list[tuple[Any, ...]] = []
        self._rendered: dict[bytes, str] = {}  # rendered by parse workers this build
        self._digests: dict[int, tuple[Card, bytes]] = {}  # id(card) -> the card (kept alive) and its digest
        self._file_keys: dict[str, bytes] = {}  # display path -> the key of the bytes this build read
        self._used_facts: set[bytes] = set()
        self._worker_facts: dict[str, list[CardFacts]] = {}  # display path -> facts a parse worker computed
        self._stored_ords: dict[str, str] | None = None  # the ords table as card_ords read it
        self._markdown_asked = 0
        self._all_markdown: dict[bytes, str] | None = None

    # -- card files

    def file_key(self, display: str, raw: bytes) -> bytes:
        key = hashlib.blake2b(self._code + b"\0" + display.encode() + b"\0" + raw, digest_size=16).digest()
        self._file_keys[display] = key
        return key

    def parsed(self, key: bytes) -> tuple[list[Card], list[Problem]] | None:
        """The cards and problems of a card file parsed before, or None."""
        if self._conn is None:
            return None
        try:
            row = self._conn.execute("SELECT value FROM parsed WHERE key = ?", (key,)).fetchone()
            if row is None:
                return None
            data = json.loads(row[0])
            cards = [_card(c) for c in data["cards"]]
            result = cards, [_problem(p) for p in data["problems"]]
            digests = [bytes.fromhex(d) for d in data["digests"]]
        except (sqlite3.Error, ValueError, KeyError, TypeError):
            return None
        self._remember_digests(cards, digests)
        self._used_parsed.add(key)
        return result

    def store_parsed(
        self,
        key: bytes,
        cards: list[Card],
        problems: list[Problem],
        digests: list[bytes] | None = None,
        encoded: str | None = None,
    ) -> None:
        """Keep a file's parse; `digests` (its cards' card_digest) and `encoded` (encode_parsed)
        if a parse worker already computed them."""
        if not self._writable:
            return
        self._used_parsed.add(key)
        digests = [card_digest(c) for c in cards] if digests is None else digests
        self._remember_digests(cards, digests)
        try:
            value = encode_parsed(cards, problems, digests) if encoded is None else encoded
            assert self._conn is not None
            self._conn.execute("INSERT OR REPLACE INTO parsed VALUES (?, ?)", (key, value))
        except (sqlite3.Error, TypeError, ValueError):
            return  # a value JSON cannot hold (a new kind of field): just not cached

    def _remember_digests(self, cards: list[Card], digests: list[bytes]) -> None:
        if len(cards) == len(digests):
            for card, digest in zip(cards, digests, strict=True):
                self._digests[id(card)] = (card, digest)

    def digest(self, card: Card) -> bytes:
        """card_digest(card), computed once per card (when it was parsed)."""
        known = self._digests.get(id(card))
        if known is not None and known[0] is card:
            return known[1]
        return card_digest(card)

    # -- what the deck-wide checks need of each card of a file (validate.FactStore)

    def add_file_facts(self, path: str, facts: list[CardFacts]) -> None:
        """The facts of a card file a parse worker just parsed (incremental/parallel.py)."""
        self._worker_facts[path] = facts

    def file_facts(self, path: str, count: int) -> list[CardFacts] | None:
        """The facts of the `count` cards of the card file at `path` as this build read it, or None."""
        fresh = self._worker_facts.pop(path, None)
        if fresh is not None and len(fresh) == count:
            self.store_file_facts(path, fresh)
            return fresh
        key = self._file_keys.get(path)
        if self._conn is None or key is None:
            return None
        from deckbuild.validate import CardFacts

        try:
            row = self._conn.execute("SELECT value FROM facts WHERE key = ?", (key,)).fetchone()
            none = CardFacts(())
            facts = [_card_facts(item, none) for item in json.loads(row[0])] if row is not None else None
        except (sqlite3.Error, ValueError, KeyError, TypeError, IndexError):
            return None
        if facts is None or len(facts) != count:
            return None
        self._used_facts.add(key)
        return facts

    def store_file_facts(self, path: str, facts: Sequence[CardFacts]) -> None:
        key = self._file_keys.get(path)
        if not self._writable or key is None:
            return
        self._used_facts.add(key)
        try:
            value = json.dumps([_card_facts_json(item) for item in facts], ensure_ascii=False)
            assert self._conn is not None
            self._conn.execute("INSERT OR REPLACE INTO facts VALUES (?, ?)", (key, value))
            total = self._conn.execute("SELECT count(*) FROM facts").fetchone()[0]
            if total > 2 * len(self._file_keys) + 100:
                _keep_only(self._conn, "facts", self._used_facts | set(self._file_keys.values()))
        except (sqlite3.Error, TypeError, ValueError):
            return

    # -- Markdown (render.py computes the keys: the text and whether it is inline)

    def markdown(self) -> dict[bytes, str]:
        """The parse workers' renderings of this build (the cached ones: markdown_lookup)."""
        return dict(self._rendered)

    def markdown_lookup(self, key: bytes) -> str | None:
        """A cached rendering, or None.  One query per text: a rebuild renders a few notes
        only; once many are asked for (a changed namespace re-renders every note), all
        cached renderings are read at once instead."""
        if self._conn is None:
            return None
        try:
            if self._all_markdown is None:
                self._markdown_asked += 1
                if self._markdown_asked <= 2000:
                    row = self._conn.execute("SELECT value FROM markdown WHERE key = ?", (key,)).fetchone()
                    return str(row[0]) if row is not None else None
                self._all_markdown = dict(self._conn.execute("SELECT key, value FROM markdown"))
            return self._all_markdown.get(key)
        except sqlite3.Error:
            return None

    def add_rendered(self, rendered: Mapping[bytes, str]) -> None:
        """Renderings made by parse workers (incremental/parallel.py) for this build."""
        self._rendered.update(rendered)

    def store_markdown(self, fresh: Mapping[bytes, str], used: set[bytes], notes: int = 0) -> None:
        """Add new renderings (the workers' among them); forget the ones this build did not
        use once they pile up beyond what a deck of `notes` notes keeps (a rebuild takes most
        notes from the note cache and so uses few renderings: those of the rest stay)."""
        if not self._writable:
            return
        assert self._conn is not None
        try:
            workers = ((key, value) for key, value in self._rendered.items() if key in used)
            self._conn.executemany("INSERT OR REPLACE INTO markdown VALUES (?, ?)", workers)
            self._rendered = {}
            self._conn.executemany("INSERT OR REPLACE INTO markdown VALUES (?, ?)", fresh.items())
            total = self._conn.execute("SELECT count(*) FROM markdown").fetchone()[0]
            if total > 2 * len(used) + 8 * notes + 1000:
                _keep_only(self._conn, "markdown", used)
            total = self._conn.execute("SELECT count(*) FROM parsed").fetchone()[0]
            if total > 2 * len(self._used_parsed) + 100:
                _keep_only(self._conn, "parsed", self._used_parsed)
        except sqlite3.Error:
            return

    # -- rendered notes (NoteReuse computes the keys)

    def notes(self, keys: Sequence[bytes]) -> dict[bytes, dict[str, Any]]:
        """The notes rendered before under these keys: key -> the values of a RenderedNote
        but its `due` (the caller's to set).  Missing or unreadable ones are left out."""
        self._used_notes.update(keys)
        if self._conn is None or not keys:
            return {}
        try:
            self._conn.execute("CREATE TEMP TABLE IF NOT EXISTS wanted (key BLOB PRIMARY KEY)")
            self._conn.execute("DELETE FROM wanted")
            self._conn.executemany("INSERT OR IGNORE INTO wanted VALUES (?)", ((k,) for k in keys))
            # Rows this code did not write are left out (then rendered again, and stored over).
            rows = self._conn.execute(
                f"SELECT notes.key, {_NOTE_COLUMNS} FROM notes JOIN wanted ON notes.key = wanted.key WHERE {_WELL_FORMED}"
            )
            return {row[0]: _note_values(row) for row in rows}
        except sqlite3.Error:
            return {}

    def store_note(self, key: bytes, note: RenderedNote) -> None:
        if not self._writable:
            return
        self._used_notes.add(key)
        row = _note_row(key, note)
        if row is not None:
            self._fresh_notes.append(row)
        if len(self._fresh_notes) >= 1000:  # written as they come: a first build's would be its size again in memory
            self._flush_notes()

    def _flush_notes(self) -> None:
        try:
            assert self._conn is not None
            self._conn.executemany(
                f"INSERT OR REPLACE INTO notes VALUES (?, {', '.join('?' * len(_NOTE_FIELDS))})", self._fresh_notes
            )
        except sqlite3.Error:
            pass
        self._fresh_notes = []

    def save_notes(self) -> None:
        """Write the notes rendered this build; forget unused ones once they pile up."""
        if not self._writable:
            return
        assert self._conn is not None
        self._flush_notes()
        try:
            total = self._conn.execute("SELECT count(*) FROM notes").fetchone()[0]
            if total > 2 * len(self._used_notes) + 100:
                _keep_only(self._conn, "notes", self._used_notes)
        except sqlite3.Error:
            return

    # -- card ordinals of a note (package.py computes the keys)

    def card_ords(self) -> dict[str, str]:
        if self._conn is None:
            return {}
        try:
            self._stored_ords = dict(self._conn.execute("SELECT key, value FROM ords"))
        except sqlite3.Error:
            self._stored_ords = {}
        return dict(self._stored_ords)

    def store_card_ords(self, ords: Mapping[str, str]) -> None:
        """Keep the ordinals of this build's notes only (a small table: one short row per note)."""
        if not self._writable:
            return
        assert self._conn is not None
        stored = self._stored_ords
        try:
            if stored is None:  # not read this build: written afresh
                self._conn.execute("DELETE FROM ords")
                self._conn.executemany("INSERT INTO ords VALUES (?, ?)", ords.items())
                return
            # A rebuild changes a few notes: only their rows change.
            self._conn.executemany("DELETE FROM ords WHERE key = ?", ((key,) for key in stored.keys() - ords.keys()))
            self._conn.executemany(
                "INSERT OR REPLACE INTO ords VALUES (?, ?)", ((k, v) for k, v in ords.items() if stored.get(k) != v)
            )
        except sqlite3.Error:
            return

    def commit(self) -> None:
        if self._writable and self._conn is not None:
            with contextlib.suppress(sqlite3.Error):
                self._conn.commit()


def encode_parsed(cards: list[Card], problems: list[Problem], digests: list[bytes]) -> str:
    """A card file's parse as the cache stores it (raises TypeError for a value JSON cannot hold)."""
    return json.dumps(
        {
            "cards": [_card_json(c) for c in cards],
            "problems": [_problem_json(p) for p in problems],
            "digests": [d.hex() for d in digests],
        }
    )


def _keep_only(conn: sqlite3.Connection, table: str, keys: set[bytes]) -> None:
    conn.execute("CREATE TEMP TABLE IF NOT EXISTS keep (key BLOB PRIMARY KEY)")
    conn.execute("DELETE FROM keep")
    conn.executemany("INSERT OR IGNORE INTO keep VALUES (?)", ((k,) for k in keys))
    conn.execute(f"DELETE FROM {table} WHERE key NOT IN (SELECT key FROM keep)")  # noqa: S608 -- table is ours


@contextlib.contextmanager
def open_cache(root: Path, *, writable: bool) -> Iterator[BuildCache]:
    """The project's cache; read-only for `check`.  Never raises for a broken cache file."""
    path = root / CACHE_DIR / CACHE_FILE
    conn: sqlite3.Connection | None = None
    try:
        if writable:
            path.parent.mkdir(exist_ok=True)
            conn = _connect(path)
        elif path.is_file():
            conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
            if _stored_code(conn) != code_fingerprint():
                raise sqlite3.DatabaseError("made by other code")
    except sqlite3.Error:
        if conn is not None:
            conn.close()
        conn = None
        if writable:  # corrupt or from an incompatible version: start over
            with contextlib.suppress(OSError, sqlite3.Error):
                path.unlink()
                conn = _connect(path)
    cache = BuildCache(conn, writable)
    try:
        yield cache
    finally:
        if conn is not None:
            conn.close()


def _connect(path: Path) -> sqlite3.Connection:
    """Open for writing; entries made by other code are dropped here, once."""
    conn = sqlite3.connect(path)
    conn.executescript(_SCHEMA)
    if _stored_code(conn) != code_fingerprint():
        # Dropped, not emptied: other code may keep other columns.
        conn.executescript("".join(f"DROP TABLE IF EXISTS {table};" for table in _TABLES) + _SCHEMA)
        conn.execute("INSERT INTO meta VALUES (?)", (code_fingerprint(),))
        conn.commit()
    return conn


def _stored_code(conn: sqlite3.Connection) -> str | None:
    row = conn.execute("SELECT code FROM meta").fetchone()
    return str(row[0]) if row else None


# -- JSON for the parsed cards (explicit, so a cache file can only ever hold data)


def _loc(loc: Location) -> list[Any]:
    return [loc.path, loc.line, loc.col]


def _unloc(data: list[Any]) -> Location:
    return Location(str(data[0]), int(data[1]), int(data[2]))


def _problem_json(problem: Problem) -> list[Any]:
    encoded = [_loc(problem.location), problem.code, problem.message, problem.severity]
    return [*encoded, problem.subject] if problem.subject else encoded


def _problem(data: list[Any]) -> Problem:
    return Problem(_unloc(data[0]), data[1], data[2], data[3], str(data[4]) if len(data) > 4 else "")


def _card_facts_json(facts: CardFacts) -> Any:
    if not facts.problems and not facts.claims:
        return 0
    claims = [[list(answer), _loc(where), number, body] for answer, where, number, body in facts.claims]
    return [[_problem_json(p) for p in facts.problems], claims]


def _card_facts(data: Any, none: CardFacts) -> CardFacts:
    """A card's facts from their JSON; `none`: the one shared value of a card without any."""
    if data == 0:
        return none
    problems, claims = data
    return type(none)(
        tuple(_problem(p) for p in problems),
        tuple((tuple(answer), _unloc(where), int(number), str(body)) for answer, where, number, body in claims),
    )


def _tuples(value: Any) -> Any:
    """JSON lists back to the tuples the frozen model holds."""
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


def _restore(cls: type[Any], values: dict[str, Any]) -> Any:
    """Rebuild a frozen dataclass from its own field values, as pickle and copy do.

    Skips the generated __init__ (one object.__setattr__ per field, the cost of loading a
    large deck from the cache); safe because the values came out of such an object and the
    model classes have no __post_init__.
    """
    obj = object.__new__(cls)
    obj.__dict__.update(values)
    return obj


def _location(value: list[Any]) -> Location:
    return _restore(Location, {"path": value[0], "line": value[1], "col": value[2]})  # type: ignore[no-any-return]


def _figure_json(figure: Figure | None) -> Any:
    if figure is None:
        return None
    location = _loc(figure.location) if figure.location else None
    return [figure.alt, figure.diagram, figure.params, figure.file, location]


def _figure(data: Any) -> Figure | None:
    if data is None:
        return None
    alt, diagram, params, file, location = data
    return Figure(alt=alt, diagram=diagram, params=_tuples(params), file=file, location=_location(location) if location else None)


class KeyLocations(Mapping[str, Location]):
    """A card's key -> Location map, kept as JSON data (or its text) and decoded when first read.

    Only cards with a problem are ever asked where a key is, so most never decode theirs;
    decoding every one was a third of loading a large deck from the cache, and the decoded
    maps were a third of the memory a large first build's cards take.
    """

    def __init__(self, raw: dict[str, list[Any]] | str) -> None:
        self._raw = raw
        self._decoded: dict[str, Location] | None = None

    @classmethod
    def compact(cls, locations: Mapping[str, Location]) -> KeyLocations:
        return cls(json.dumps({k: _loc(v) for k, v in locations.items()}, separators=(",", ":")))

    def _map(self) -> dict[str, Location]:
        if self._decoded is None:
            raw = json.loads(self._raw) if isinstance(self._raw, str) else self._raw
            self._decoded = {k: _location(v) for k, v in raw.items()}
        return self._decoded

    def __reduce__(self) -> tuple[Any, ...]:
        return (KeyLocations, (self._raw,))  # never the decoded map

    def __getitem__(self, key: str) -> Location:
        return self._map()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._map())

    def __len__(self) -> int:
        return len(self._map())


# Card fields as positional lists (a 100k-card deck decodes ~2x faster than dicts of names).
# Plain values (text, flags, tuples of words) need no conversion beyond list -> tuple.
_CARD_FIELDS = tuple(f.name for f in dataclasses.fields(Card))
_ENCODE: dict[str, Any] = {
    "location": _loc,
    "key_locations": lambda value: {k: _loc(v) for k, v in value.items()},
    "figure": _figure_json,
}
_DECODE: dict[str, Any] = {
    "location": _location,
    "key_locations": lambda value: KeyLocations(value),
    "figure": _figure,
}


def _card_json(card: Card) -> list[Any]:
    out: list[Any] = []
    for name in _CARD_FIELDS:
        value = getattr(card, name)
        encode = _ENCODE.get(name)
        if encode is not None:
            value = encode(value)
        elif not isinstance(value, (str, int, bool, tuple, type(None))):
            raise TypeError(f"cannot cache Card.{name} of type {type(value).__name__}")
        out.append(value)
    return out


# Fields decoded by kind (each list is rebuilt with one call, not one per value): tuples of
# words, and anything else that is a tuple in the model (nested lists become nested tuples).
_FLAT_TUPLES = tuple(f.name for f in dataclasses.fields(Card) if f.type == "tuple[str, ...]")
_NESTED = tuple(
    f.name
    for f in dataclasses.fields(Card)
    if str(f.type).startswith("tuple[") and f.name not in _FLAT_TUPLES and f.name not in _DECODE
)


def _card(data: list[Any]) -> Card:
    if len(data) != len(_CARD_FIELDS):
        raise ValueError("cached card has other fields than this Card")
    values = dict(zip(_CARD_FIELDS, data, strict=True))
    values["location"] = _location(values["location"])
    values["key_locations"] = KeyLocations(values["key_locations"])
    if values["figure"] is not None:
        values["figure"] = _figure(values["figure"])
    for name in _FLAT_TUPLES:
        values[name] = tuple(values[name])
    for name in _NESTED:
        values[name] = _tuples(values[name]) if values[name] else ()
    card: Card = _restore(Card, values)
    return card


# -- which notes can be reused


_CONTENT_FIELDS = tuple(name for name in _CARD_FIELDS if name not in ("location", "key_locations", "figure"))


def card_digest(card: Card) -> bytes:
    """A hash of everything a card says, not where it says it (an edit above it moves it).

    repr of str, int, bool, None and tuples of them is exact and the same in every process.
    """
    figure = card.figure
    shown = None if figure is None else (figure.alt, figure.diagram, figure.params, figure.file)
    content = (tuple(getattr(card, name) for name in _CONTENT_FIELDS), shown)
    return hashlib.blake2b(repr(content).encode(), digest_size=16).digest()


def _shown(card: Card) -> bytes:
    """What a note shows of another card: keep in step with notes.render_notes."""
    return repr((card.id, card.question, card.context, card.difficulty, card.topics, card.source)).encode()


_NOTE_COLUMNS = ", ".join(f"notes.{name}" for name in _NOTE_FIELDS)
# Its tuples (fields, tags, ...) are kept as one text each, every item after a \x1f (the
# separator Anki itself keeps fields apart with, so no field holds one): SQLite hands
# back plain text, and splitting it costs far less than decoding JSON.
_NOTE_TUPLES = frozenset(f.name for f in dataclasses.fields(RenderedNote) if str(f.type).startswith("tuple["))
_SEP = "\x1f"
# What _note_row writes: text in every column, each tuple empty or starting with the separator.
_WELL_FORMED = " AND ".join(
    f"typeof(notes.{name}) = 'text'"
    + (f" AND (notes.{name} = '' OR substr(notes.{name}, 1, 1) = char(31))" if name in _NOTE_TUPLES else "")
    for name in _NOTE_FIELDS
)


def _note_row(key: bytes, note: RenderedNote) -> tuple[Any, ...] | None:
    """A note as a row of the notes table, or None if it cannot be kept (then it is rendered
    again).  Written out field by field, like _note_values: a first build stores every note."""
    joined = []
    for items in (note.fields, note.tags, note.media, note.previous_ids):
        try:
            text = _SEP + _SEP.join(items) if items else ""
        except TypeError:  # not all text
            return None
        if text.count(_SEP) != len(items):  # an item holding the separator would not split back
            return None
        joined.append(text)
    fields, tags, media, previous_ids = joined
    row = (key, note.card_id, note.guid, note.notetype, fields, tags, note.content_hash, media, previous_ids, note.deck)
    return row if all(isinstance(value, str) for value in row[1:]) else None


def _note_values(row: Sequence[Any]) -> dict[str, Any]:
    """A well-formed row of the notes table (key first) -> its note's values by field name.

    Written out field by field: a rebuild decodes every note of the deck here.
    """
    _key, card_id, guid, notetype, fields, tags, content_hash, media, previous_ids, deck = row
    return {
        "card_id": card_id,
        "guid": guid,
        "notetype": notetype,
        "fields": tuple(fields.split(_SEP)[1:]),
        "tags": tuple(tags.split(_SEP)[1:]),
        "content_hash": content_hash,
        "media": tuple(media.split(_SEP)[1:]) if media else (),
        "previous_ids": tuple(previous_ids.split(_SEP)[1:]) if previous_ids else (),
        "deck": deck,
    }


class NoteReuse:
    """Hands notes.render_notes the notes of the last build whose inputs are unchanged.

    A note is a pure function of its card, of what it shows of the cards it names (`of`,
    `related`, `duplicate_of`) or that name it as their duplicate -- their front text and
    the difficulty, topics and source a cloze inherits (_shown) --, of its figure's file
    name and illustrative flag, and of the namespace (notes.render_notes); the key hashes
    all of them, so a hit is the note a fresh rendering would give.  Positions (`due`) are
    set here from the caller's.  tests/test_cache.py checks edit -> rebuild == clean build.
    """

    def __init__(self, cache: BuildCache, namespace: str, figures: Mapping[str, tuple[MediaFile, bool]]) -> None:
        self._cache = cache
        self._namespace = namespace.encode()
        self._figures = figures
        self._keys: dict[int, tuple[Card, bytes]] = {}  # id(card) -> the card and its key
        self._shown: dict[str, bytes] = {}  # card id -> what notes naming it show of it (in their keys)
        self._found: dict[bytes, dict[str, Any]] | None = None

    def _key(self, card: Card, by_id: Mapping[str, Card], duplicates_of: Mapping[str, Sequence[str]]) -> bytes:
        parts = [self._namespace, self._cache.digest(card)]
        shown = self._shown
        for ref in (card.of, *card.related, card.duplicate_of, *duplicates_of.get(card.id, ())):
            part = shown.get(ref)
            if part is None:  # once per card named (a question is named by each of its clozes)
                other = by_id.get(ref) if ref else None
                part = shown[ref] = ref.encode() + b"=" + (_shown(other) if other is not None else b"-")
            parts.append(part)
        figure = self._figures.get(card.id)
        if figure is not None:
            parts.append(f"{figure[0].name}\0{figure[1]}".encode())
        return hashlib.blake2b(b"\0\0".join(parts), digest_size=16).digest()

    def lookup(
        self, card: Card, due: int, by_id: Mapping[str, Card], duplicates_of: Mapping[str, Sequence[str]]
    ) -> RenderedNote | None:
        """The cached note for this card at position `due`, or None (then `store` it)."""
        if self._found is None:  # the first call: every card's key, and one query for them all
            for other in by_id.values():
                self._keys[id(other)] = (other, self._key(other, by_id, duplicates_of))
            self._found = self._cache.notes([key for _card, key in self._keys.values()])
        known = self._keys.get(id(card))
        if known is None or known[0] is not card:
            key = self._key(card, by_id, duplicates_of)
            self._keys[id(card)] = (card, key)
        else:
            key = known[1]
        values = self._found.pop(key, None)  # each card is asked for once; a second ask renders again
        if values is None:
            return None
        values["due"] = due
        note: RenderedNote = object.__new__(RenderedNote)
        object.__setattr__(note, "__dict__", values)  # the decoded values become the note, not a copy of them
        return note

    def store(self, card: Card, note: RenderedNote) -> None:
        known = self._keys.get(id(card))
        if known is not None and known[0] is card:
            self._cache.store_note(known[1], note)
