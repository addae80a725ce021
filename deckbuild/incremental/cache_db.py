"""The build cache's file: its SQLite schema, and a connection that holds it for one build.

cache.py reads and writes the entries; this module only makes sure the file it works on has
the tables this code expects, emptied of what other code left there, and is held by this
build alone.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping
from pathlib import Path

from deckbuild.incremental.codec import NOTE_FIELDS
from deckbuild.incremental.uptodate import code_fingerprint
from deckbuild.writer import open_database

CACHE_FILE = "cache.sqlite"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (code TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS parsed (key BLOB PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS facts (key BLOB PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS markdown (key BLOB PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS notes (key BLOB PRIMARY KEY, {note_columns});
CREATE TABLE IF NOT EXISTS ords (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (key BLOB PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS splices (key BLOB PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS generators (key BLOB PRIMARY KEY, value TEXT NOT NULL);
""".format(note_columns=", ".join(f"{name} TEXT NOT NULL" for name in NOTE_FIELDS))
LOCK_WAIT_MS = 2000
_TABLES = ("meta", "parsed", "facts", "markdown", "notes", "ords", "files", "splices", "generators")


def keep_only(conn: sqlite3.Connection, table: str, keys: set[bytes]) -> None:
    """Delete the rows of `table` (one of ours) whose key is not in `keys`."""
    conn.execute("CREATE TEMP TABLE IF NOT EXISTS keep (key BLOB PRIMARY KEY)")
    conn.execute("DELETE FROM keep")
    conn.executemany("INSERT OR IGNORE INTO keep VALUES (?)", ((k,) for k in keys))
    conn.execute(f"DELETE FROM {table} WHERE key NOT IN (SELECT key FROM keep)")  # noqa: S608 -- table is ours


PAGE_BYTES = 65536
"""The page size of a new cache file (SQLite's default is 4 KB): a rebuild reads every card
file's parse (a blob of about half a megabyte) and every note back, a page at a time."""


def connect(path: Path) -> sqlite3.Connection:
    """Open for writing, in one transaction that keep() commits; entries made by other code
    are dropped in it.  Another build holding the cache (a second deckbuild planning in the
    same project) means no cache for this one rather than a wait."""
    conn = open_database(path)
    try:
        conn.execute(f"PRAGMA busy_timeout = {LOCK_WAIT_MS}")
        conn.execute(f"PRAGMA page_size = {PAGE_BYTES}")
        conn.execute("BEGIN IMMEDIATE")
        create_tables(conn)
        if stored_code(conn) != code_fingerprint():
            # Dropped, not emptied: other code may keep other columns.
            for table in _TABLES:
                conn.execute(f"DROP TABLE IF EXISTS {table}")  # noqa: S608 -- our own table names
            create_tables(conn)
            conn.execute("INSERT INTO meta VALUES (?)", (code_fingerprint(),))
    except sqlite3.Error:
        conn.close()
        raise
    return conn


def select_values(conn: sqlite3.Connection, table: str, keys: Iterable[bytes]) -> dict[bytes, str]:
    """The values under these keys in `table` (one of ours: key, value); {} if it cannot be read."""
    try:
        return {
            key: row[0] for key in keys if (row := conn.execute(f"SELECT value FROM {table} WHERE key = ?", (key,)).fetchone())
        }  # noqa: S608 -- table is ours
    except sqlite3.Error:
        return {}


def store_values(conn: sqlite3.Connection, table: str, items: Iterable[tuple[bytes, str]], keep: set[bytes]) -> None:
    """Store these values in `table` (one of ours); once it holds more than twice `keep`, only those."""
    try:
        conn.executemany(f"INSERT OR REPLACE INTO {table} VALUES (?, ?)", items)  # noqa: S608 -- table is ours
        if conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0] > 2 * len(keep) + 100:  # noqa: S608
            keep_only(conn, table, keep)
    except sqlite3.Error:
        return


def create_tables(conn: sqlite3.Connection) -> None:
    """The schema, inside the open transaction (executescript would commit it)."""
    for statement in _SCHEMA.split(";"):
        if statement.strip():
            conn.execute(statement)


def stored_code(conn: sqlite3.Connection) -> str | None:
    row = conn.execute("SELECT code FROM meta").fetchone()
    return str(row[0]) if row else None


def other_code(path: Path) -> bool:
    """Whether the cache file was written by other code (then none of it is of use); False when
    it cannot be told (locked, corrupt: connect() decides)."""
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            return stored_code(conn) != code_fingerprint()
        finally:
            conn.close()
    except sqlite3.Error:
        return False


def read_ords(conn: sqlite3.Connection) -> dict[str, str]:
    """The ords table (card ordinals by note key), or {} if it cannot be read."""
    try:
        return dict(conn.execute("SELECT key, value FROM ords"))
    except sqlite3.Error:
        return {}


def store_ords(conn: sqlite3.Connection, stored: Mapping[str, str] | None, ords: Mapping[str, str]) -> None:
    """The ords table made to hold `ords`, given what it held when read (`stored`; None: not read)."""
    if stored is None:  # not read this build: written afresh
        conn.execute("DELETE FROM ords")
        conn.executemany("INSERT INTO ords VALUES (?, ?)", ords.items())
        return
    # A rebuild changes a few notes: only their rows change.
    conn.executemany("DELETE FROM ords WHERE key = ?", ((key,) for key in stored.keys() - ords.keys()))
    conn.executemany("INSERT OR REPLACE INTO ords VALUES (?, ?)", ((k, v) for k, v in ords.items() if stored.get(k) != v))
