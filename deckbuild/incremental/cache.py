"""The build cache: parsed card files and rendered Markdown, kept in .deckbuild-cache/.

Parsing YAML and rendering Markdown are most of a build's time, and a typical rebuild
changes one file.  So a build keeps, in one SQLite file:

- per card file: the cards and problems parsed from it, keyed by a hash of deckbuild's code
  (uptodate.code_fingerprint), the file's display path and its exact bytes;
- per Markdown text: the field HTML it renders to, keyed by a hash of the text; the
  whole file is wiped when the code hash (stored in it) changes.

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
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from deckbuild.errors import Location, Problem
from deckbuild.incremental.uptodate import code_fingerprint
from deckbuild.layout import CACHE_DIR
from deckbuild.model import Card, Figure

CACHE_FILE = "cache.sqlite"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (code TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS parsed (key BLOB PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS markdown (key BLOB PRIMARY KEY, value TEXT NOT NULL);
"""


class BuildCache:
    """One build's view of the cache; a no-op when `conn` is None."""

    def __init__(self, conn: sqlite3.Connection | None, writable: bool) -> None:
        self._conn = conn
        self._writable = writable and conn is not None
        self._code = code_fingerprint().encode()
        self._used_parsed: set[bytes] = set()

    # -- card files

    def file_key(self, display: str, raw: bytes) -> bytes:
        return hashlib.blake2b(self._code + b"\0" + display.encode() + b"\0" + raw, digest_size=16).digest()

    def parsed(self, key: bytes) -> tuple[list[Card], list[Problem]] | None:
        """The cards and problems of a card file parsed before, or None."""
        if self._conn is None:
            return None
        try:
            row = self._conn.execute("SELECT value FROM parsed WHERE key = ?", (key,)).fetchone()
            if row is None:
                return None
            data = json.loads(row[0])
            result = [_card(c) for c in data["cards"]], [_problem(p) for p in data["problems"]]
        except (sqlite3.Error, ValueError, KeyError, TypeError):
            return None
        self._used_parsed.add(key)
        return result

    def store_parsed(self, key: bytes, cards: list[Card], problems: list[Problem]) -> None:
        if not self._writable:
            return
        self._used_parsed.add(key)
        try:
            value = json.dumps({"cards": [_card_json(c) for c in cards], "problems": [_problem_json(p) for p in problems]})
            assert self._conn is not None
            self._conn.execute("INSERT OR REPLACE INTO parsed VALUES (?, ?)", (key, value))
        except (sqlite3.Error, TypeError, ValueError):
            return  # a value JSON cannot hold (a new kind of field): just not cached

    # -- Markdown (render.py computes the keys: the text and whether it is inline)

    def markdown(self) -> dict[bytes, str]:
        """Every cached rendering (loaded at once: one query beats one per text)."""
        if self._conn is None:
            return {}
        try:
            return dict(self._conn.execute("SELECT key, value FROM markdown"))
        except sqlite3.Error:
            return {}

    def store_markdown(self, fresh: Mapping[bytes, str], used: set[bytes]) -> None:
        """Add new renderings; forget the ones this build did not use, once they pile up."""
        if not self._writable:
            return
        assert self._conn is not None
        try:
            self._conn.executemany("INSERT OR REPLACE INTO markdown VALUES (?, ?)", fresh.items())
            total = self._conn.execute("SELECT count(*) FROM markdown").fetchone()[0]
            if total > 2 * len(used) + 1000:
                _keep_only(self._conn, "markdown", used)
            total = self._conn.execute("SELECT count(*) FROM parsed").fetchone()[0]
            if total > 2 * len(self._used_parsed) + 100:
                _keep_only(self._conn, "parsed", self._used_parsed)
        except sqlite3.Error:
            return

    def commit(self) -> None:
        if self._writable and self._conn is not None:
            with contextlib.suppress(sqlite3.Error):
                self._conn.commit()


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
        conn.executescript("DELETE FROM meta; DELETE FROM parsed; DELETE FROM markdown;")
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
    return [_loc(problem.location), problem.code, problem.message, problem.severity]


def _problem(data: list[Any]) -> Problem:
    return Problem(_unloc(data[0]), data[1], data[2], data[3])


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
    "key_locations": lambda value: {k: _location(v) for k, v in value.items()},
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


def _card(data: list[Any]) -> Card:
    if len(data) != len(_CARD_FIELDS):
        raise ValueError("cached card has other fields than this Card")
    values = {}
    for name, value in zip(_CARD_FIELDS, data, strict=True):
        decode = _DECODE.get(name)
        values[name] = decode(value) if decode is not None else (_tuples(value) if isinstance(value, list) else value)
    card: Card = _restore(Card, values)
    return card
