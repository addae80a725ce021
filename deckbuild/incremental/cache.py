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
  content and the note's content hash;
- per card file: its notes' keys and what else they were rendered from (NoteReuse takes an
  unchanged file's notes whole), keyed as its parse;
- per card file path: the key of its last clean parse, and under that key the parse's
  segments (splice.py parses an edit's chunk).

The whole file is wiped when the code hash (stored in it) changes.

Both keys hold everything the value depends on, so an entry is either right or never
looked up: editing a file, moving it, or changing deckbuild or its libraries misses.
Values are JSON, never pickle, so a cache folder copied from elsewhere cannot run code.
Any trouble with the file (corrupt, locked, read-only) means "no cache", never a failed
build.  `deckbuild check` reads the cache but never writes it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sqlite3
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from deckbuild.errors import Problem, WriteFailed
from deckbuild.incremental import cache_db
from deckbuild.incremental.cache_db import CACHE_FILE, connect, keep_only, other_code, select_values, store_values, stored_code
from deckbuild.incremental.codec import (
    NOTE_COLUMNS,
    NOTE_FIELDS,
    WELL_FORMED_NOTE,
    card_digest,
    decode_card,
    decode_facts,
    decode_problem,
    encode_facts,
    encode_parsed,
    note_from_row,
    note_row,
)
from deckbuild.incremental.memo import Memo, card_key
from deckbuild.incremental.uptodate import code_fingerprint
from deckbuild.layout import CACHE_DIR
from deckbuild.leftovers import remove_abandoned
from deckbuild.model import Card, RenderedNote
from deckbuild.validate import CardFacts
from deckbuild.writer import make_folder, move_into_place, remove_empty_folder, remove_file

FEW_KEYS = 1000  # notes looked up one by one rather than by a scan of the notes table
Entries = Literal["files", "splices", "generators"]


class BuildCache:
    """One build's view of the cache; a no-op when `conn` is None."""

    def __init__(
        self,
        conn: sqlite3.Connection | None,
        writable: bool,
        fresh: Path | None = None,
        made_folder: bool = False,
        memo: Memo | None = None,
    ) -> None:
        self._conn = conn
        self._memo = memo  # what this process's earlier plans read or wrote (serve), looked up first
        self._writable = writable and conn is not None
        self._fresh = fresh  # a new cache file, made beside the one it becomes on keep()
        self._made_folder = made_folder  # the cache folder was made for it (removed again on drop())
        self._code = code_fingerprint().encode()
        self._used_parsed: set[bytes] = set()
        self.cards_read = 0  # cards read back this build, not parsed (most of a rebuild's, none of a first build's)
        self._used_notes: set[bytes] = set()
        self._fresh_notes: list[tuple[Any, ...]] = []
        self._rendered: dict[bytes, str] = {}  # rendered by parse workers this build
        self._digests: dict[int, tuple[Card, bytes]] = {}  # id(card) -> the card (kept alive) and its digest
        self._file_keys: dict[str, bytes] = {}  # display path -> the key of the bytes this build read
        self._used_facts: set[bytes] = set()
        self._used_files: set[bytes] = set()
        self._run_paths: set[str] = set()  # card files whose facts this plan asked for
        self._worker_facts: dict[str, list[CardFacts]] = {}  # display path -> facts a parse worker computed
        self._stored_ords: dict[str, str] | None = None  # the ords table as card_ords read it
        self._markdown_asked = 0
        self._all_markdown: dict[bytes, str] | None = None
        self._held: list[tuple[Callable[[], None], Callable[[], None]]] = []  # see hold()

    def hold(self, keep: Callable[[], None], drop: Callable[[], None]) -> None:
        """Files this build made beside the cache (last_package.py): kept or dropped with it."""
        self._held.append((keep, drop))

    # -- card files

    def file_key(self, display: str, raw: bytes) -> bytes:
        key = hashlib.blake2b(self._code + b"\0" + display.encode() + b"\0" + raw, digest_size=16).digest()
        self._file_keys[display] = key
        return key

    def has_parsed(self, key: bytes) -> bool:
        """Whether parsed(key) has something to decode (a corrupt entry then gives None)."""
        if self._memo is not None and key in self._memo.parsed:
            return True
        try:
            found = self._conn is not None and self._conn.execute("SELECT 1 FROM parsed WHERE key = ?", (key,)).fetchone()
        except sqlite3.Error:
            return False
        return bool(found)

    def parsed(self, key: bytes) -> tuple[list[Card], list[Problem]] | None:
        """The cards and problems of a card file parsed before, or None."""
        if self._memo is not None and key in self._memo.parsed:
            # Its cards' digests are not listed again: NoteReuse asks only for the cards whose
            # keys it cannot take from the last plan (few), and digest() computes those.
            kept_cards, kept_problems, _kept_digests = self._memo.parsed[key]
            self._used_parsed.add(key)
            self.cards_read += len(kept_cards)
            return list(kept_cards), list(kept_problems)
        if self._conn is None:
            return None
        try:
            row = self._conn.execute("SELECT value FROM parsed WHERE key = ?", (key,)).fetchone()
            if row is None:
                return None
            data = json.loads(row[0])
            cards = [decode_card(c) for c in data["cards"]]
            result = cards, [decode_problem(p) for p in data["problems"]]
            digests = [bytes.fromhex(d) for d in data["digests"]]
        except (sqlite3.Error, ValueError, KeyError, TypeError):
            return None
        self._remember_digests(cards, digests)
        self._used_parsed.add(key)
        self.cards_read += len(cards)
        if self._memo is not None:
            self._memo.parsed[key] = (tuple(cards), tuple(result[1]), tuple(digests))
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
        if self._memo is not None:
            self._memo.parsed[key] = (tuple(cards), tuple(problems), tuple(digests))
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
        return self.kept_facts(key, count) if key is not None else None

    def kept_facts(self, key: bytes, count: int) -> list[CardFacts] | None:
        """The facts of the `count` cards of the card file parsed under `key`, or None."""
        if self._memo is not None:
            kept = self._memo.facts.get(key)
            if kept is not None and len(kept) == count:
                self._used_facts.add(key)
                return list(kept)
        if self._conn is None:
            return None
        try:
            row = self._conn.execute("SELECT value FROM facts WHERE key = ?", (key,)).fetchone()
            none = CardFacts(())
            facts = [decode_facts(item, none) for item in json.loads(row[0])] if row is not None else None
        except (sqlite3.Error, ValueError, KeyError, TypeError, IndexError):
            return None
        if facts is None or len(facts) != count:
            return None
        self._used_facts.add(key)
        if self._memo is not None:
            self._memo.facts[key] = tuple(facts)
        return facts

    def run_facts(self, path: str, cards: Sequence[Card], compute: Callable[[Card], CardFacts]) -> list[CardFacts]:
        """A file's kept facts, else compute(card) for each card the file's last plan in this process did not have."""
        known = self.file_facts(path, len(cards))
        if known is None:
            earlier = self._memo.earlier_facts(path) if self._memo is not None else {}
            keys = [card_key(card) if earlier else None for card in cards]
            known = [earlier[k] if k is not None and k in earlier else compute(c) for k, c in zip(keys, cards, strict=True)]
            self.store_file_facts(path, known)
        if self._memo is not None:
            self._memo.runs[path] = (tuple(cards), tuple(known))
            self._run_paths.add(path)
        return known

    def store_file_facts(self, path: str, facts: Sequence[CardFacts]) -> None:
        key = self._file_keys.get(path)
        if key is not None and self._memo is not None:
            self._memo.facts[key] = tuple(facts)
        if not self._writable or key is None:
            return
        self._used_facts.add(key)
        try:
            value = json.dumps([encode_facts(item) for item in facts], ensure_ascii=False)
        except (TypeError, ValueError):
            return
        assert self._conn is not None
        store_values(self._conn, "facts", [(key, value)], self._used_facts | set(self._file_keys.values()))

    # -- what each card file's notes were rendered from (NoteReuse, in a process without a memo)

    def read_key(self, path: str) -> bytes | None:
        """The key of the bytes of the card file at `path` as this build read it (None: not cached)."""
        return self._file_keys.get(path)

    def file_entries(self, keys: Iterable[bytes], table: Entries = "files") -> dict[bytes, str]:
        """The entries (JSON) stored under these card files' keys, or in "splices" their paths (splice.py)."""
        wanted = set(keys)
        self._used_files |= wanted
        return select_values(self._conn, table, wanted) if self._conn is not None else {}

    def store_file_entries(self, entries: Mapping[bytes, str], table: Entries = "files") -> None:
        if self._writable and self._conn is not None:
            self._used_files.update(entries)
            keep = {*self._used_files, *self._file_keys.values(), *(path.encode() for path in self._file_keys)}
            store_values(self._conn, table, entries.items(), keep)  # "splices" is keyed by the paths

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
                keep_only(self._conn, "markdown", used)
            total = self._conn.execute("SELECT count(*) FROM parsed").fetchone()[0]
            if total > 2 * len(self._used_parsed) + 100:
                keep_only(self._conn, "parsed", self._used_parsed)
        except sqlite3.Error:
            return

    # -- rendered notes (NoteReuse computes the keys)

    def notes(self, keys: Sequence[bytes]) -> dict[bytes, RenderedNote]:
        """The notes rendered before under these keys (their `due` is the caller's to set: a
        kept one has its last position, a read one -1).  Missing or unreadable ones are left out."""
        self._used_notes.update(keys)
        memo = self._memo
        found: dict[bytes, RenderedNote] = {}
        if memo is not None:
            get = memo.notes.get
            found = {k: note for k in keys if (note := get(k)) is not None}
            if len(found) == len(keys):
                return found
            keys = [k for k in keys if k not in found]
        if self._conn is None or not keys:
            return found
        try:
            # Rows this code did not write are left out (then rendered again, and stored over).
            if len(keys) <= FEW_KEYS:
                # A few keys (a serve save's) are looked up one by one (CROSS JOIN keeps `wanted` the
                # outer loop; the planner scanned all 100,000 notes for them, 0.15 s a save).
                self._conn.execute("CREATE TEMP TABLE IF NOT EXISTS wanted (key BLOB PRIMARY KEY)")
                self._conn.execute("DELETE FROM wanted")
                self._conn.executemany("INSERT OR IGNORE INTO wanted VALUES (?)", ((k,) for k in keys))
                rows = self._conn.execute(
                    f"SELECT notes.key, {NOTE_COLUMNS} FROM wanted CROSS JOIN notes ON notes.key = wanted.key "
                    f"WHERE {WELL_FORMED_NOTE}"
                )
                read = {row[0]: note_from_row(row) for row in rows}
            else:
                # A fresh build's keys of every note: one scan of the table (which keep_only holds to
                # about the deck's notes), each row decoded only if wanted.  Filling a table of the
                # wanted keys to join with cost more than the scan (0.94-1.36 s against 0.70 s at 100k).
                wanted = set(keys)
                rows = self._conn.execute(f"SELECT notes.key, {NOTE_COLUMNS} FROM notes WHERE {WELL_FORMED_NOTE}")
                read = {row[0]: note_from_row(row) for row in rows if row[0] in wanted}
        except sqlite3.Error:
            return found
        if memo is not None:
            memo.notes.update(read)
        found.update(read)
        return found

    def memo(self) -> Memo | None:
        """What this process's earlier plans kept (serve), for NoteReuse's keys and files; else None."""
        return self._memo

    def use_notes(self, keys: Iterable[bytes]) -> None:
        """Notes this plan takes without asking for them (NoteReuse.kept_runs): kept, not forgotten."""
        self._used_notes.update(keys)

    def store_note(self, key: bytes, note: RenderedNote) -> None:
        if self._memo is not None:
            self._memo.notes[key] = note
        if not self._writable:
            return
        self._used_notes.add(key)
        row = note_row(key, note)
        if row is not None:
            self._fresh_notes.append(row)
        if len(self._fresh_notes) >= 1000:  # written as they come: a first build's would be its size again in memory
            self._flush_notes()

    def _flush_notes(self) -> None:
        try:
            assert self._conn is not None
            self._conn.executemany(
                f"INSERT OR REPLACE INTO notes VALUES (?, {', '.join('?' * len(NOTE_FIELDS))})", self._fresh_notes
            )
        except sqlite3.Error:
            pass
        self._fresh_notes = []

    def save_notes(self) -> None:
        """Write the notes rendered this build; forget unused ones once they pile up."""
        if not self._writable or self._conn is None:
            return
        self._flush_notes()
        try:
            total = self._conn.execute("SELECT count(*) FROM notes").fetchone()[0]
            if total > 2 * len(self._used_notes) + 100:
                keep_only(self._conn, "notes", self._used_notes)
        except sqlite3.Error:
            return

    # -- card ordinals of a note (package.py computes the keys)

    def card_ords(self) -> dict[str, str]:
        self._stored_ords = cache_db.read_ords(self._conn) if self._conn is not None else {}
        return dict(self._stored_ords)

    def store_card_ords(self, ords: Mapping[str, str]) -> None:
        """Keep the ordinals of this build's notes only (a small table: one short row per note)."""
        if self._writable and self._conn is not None:
            with contextlib.suppress(sqlite3.Error):
                cache_db.store_ords(self._conn, self._stored_ords, ords)

    def keep(self) -> None:
        """Commit what this build learnt and close: called once the command's own files are
        written, so a command that fails leaves the cache as it found it."""
        held, self._held = self._held, []
        for keep, _drop in held:
            keep()
        if self._memo is not None:
            self._memo.retain(self._used_parsed, self._used_facts, self._used_notes, self._run_paths)
        if self._conn is None:
            return
        try:
            if self._writable:
                self._flush_notes()
                self._conn.commit()
        except sqlite3.Error:
            self.drop()
            return
        self._conn.close()
        self._conn = None
        if self._fresh is not None:  # the first cache of the project: now put in place whole
            fresh, self._fresh = self._fresh, None
            try:
                move_into_place(fresh, fresh.with_name(CACHE_FILE))
            except WriteFailed:
                with contextlib.suppress(WriteFailed):
                    remove_file(fresh)

    def __enter__(self) -> BuildCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.drop()  # nothing kept that keep() did not keep

    def drop(self) -> None:
        """Close without keeping anything this build wrote (a failed or read-only command)."""
        held, self._held = self._held, []
        for _keep, drop in held:
            drop()
        if self._conn is not None:
            with contextlib.suppress(sqlite3.Error):
                self._conn.rollback()
            self._conn.close()
            self._conn = None
        if self._fresh is not None:
            fresh, self._fresh = self._fresh, None
            with contextlib.suppress(WriteFailed):
                remove_file(fresh)
                if self._made_folder:
                    remove_empty_folder(fresh.parent)


def open_cache(root: Path, *, writable: bool, memo: Memo | None = None) -> BuildCache:
    """The project's cache; read-only for `check`.  Never raises for a broken cache file.

    Everything a build writes into it stays in one uncommitted transaction until the caller
    says keep() (its outputs are written) or drop() (it failed): a failed command changes no
    file, the cache included.  A project without a cache gets a new file beside the place it
    takes on keep(), and so does a project whose cache other code wrote (deckbuild upgraded)."""
    path = root / CACHE_DIR / CACHE_FILE
    conn: sqlite3.Connection | None = None
    fresh: Path | None = None
    made_folder = False
    try:
        if writable:
            made_folder = not path.parent.is_dir()
            make_folder(path.parent)
            remove_abandoned(path.parent, f"{CACHE_FILE}.new-*")  # killed builds' fresh caches
            if not path.is_file() or other_code(path):  # a new file: made with this code's page size
                fresh = path.with_name(f"{CACHE_FILE}.new-{os.getpid()}")
                remove_file(fresh)
            conn = connect(fresh or path)
        elif path.is_file():
            conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
            if stored_code(conn) != code_fingerprint():
                raise sqlite3.DatabaseError("made by other code")
    except (sqlite3.Error, WriteFailed):
        if conn is not None:
            conn.close()
        conn = None
        if fresh is not None:
            with contextlib.suppress(WriteFailed):
                remove_file(fresh)
        elif writable and path.is_file():  # corrupt or from an incompatible version: start over
            with contextlib.suppress(WriteFailed, sqlite3.Error):
                fresh = path.with_name(f"{CACHE_FILE}.new-{os.getpid()}")
                remove_file(fresh)
                conn = connect(fresh)
    return BuildCache(conn, writable, fresh if conn is not None else None, made_folder, memo)
