"""Opening a learner's collection safely: refuse one Anki has open, or a file that is not a collection."""

from __future__ import annotations

import shutil
import sqlite3
import sys
import tempfile
from pathlib import Path

from deckbuild.errors import LocatedError, Location

_SQLITE_MAGIC = b"SQLite format 3\x00"


def check_collection(path: Path) -> None:
    """Raise E601 if another process (Anki) has the collection open, E602 if it is not a collection,
    E604 if SQLite's `pragma quick_check` finds it damaged.

    Writes nothing, not even SQLite's -wal/-shm side files: Anki's backend opens
    collection.anki2 in SQLite's exclusive locking mode and holds the lock while it runs, so
    the lock is probed on SQLite's own lock bytes, and the tables are read from a copy.
    """
    where = Location(str(path))
    if not path.is_file():
        raise LocatedError(where, "E602", "not an Anki collection: no such file (expected a collection.anki2)")
    with path.open("rb") as handle:
        if handle.read(16) != _SQLITE_MAGIC:
            raise LocatedError(
                where, "E602", "not an Anki collection: expected an SQLite collection.anki2; got another kind of file"
            )
        if _locked(handle.fileno(), path):
            raise LocatedError(
                where,
                "E601",
                "the collection is open in another program (Anki is running on it); close Anki"
                " (or that program) and run again. Nothing was written",
            )
    with tempfile.TemporaryDirectory() as tmp:
        copy = private_copy(path, Path(tmp))
        try:
            conn = sqlite3.connect(copy)
            conn.create_collation("unicase", _unicase)
            try:
                conn.execute("select ver, crt from col").fetchone()
                conn.execute("select count() from notes").fetchone()
                damage = [str(row[0]) for row in conn.execute("pragma quick_check(20)").fetchall()]
            finally:
                conn.close()
        except sqlite3.DatabaseError as exc:
            if "malformed" in str(exc):
                raise _damaged(where, [str(exc)]) from None
            raise LocatedError(where, "E602", f"not an Anki collection: expected tables col and notes; {exc}") from None
        if damage != ["ok"]:
            raise _damaged(where, damage)


def _unicase(a: str, b: str) -> int:
    """Anki's `unicase` collation (its indexes of deck and tag names use it): case-insensitive order."""
    x, y = a.casefold(), b.casefold()
    return (x > y) - (x < y)


def _damaged(where: Location, damage: list[str]) -> LocatedError:
    """E604: the file is a collection, but SQLite's own check finds it damaged (a disk or copy fault)."""
    shown = "; ".join(damage[:3]) + (f"; and {len(damage) - 3} more" if len(damage) > 3 else "")
    return LocatedError(
        where,
        "E604",
        f"the collection is damaged: SQLite's integrity check expected 'ok'; got: {shown}. Nothing was written"
        " (no backup either). Restore it from one of Anki's backups, or let Anki's Tools → Check Database repair it",
    )


# SQLite's unix VFS locks a range past 1 GiB: PENDING_BYTE, RESERVED_BYTE, then 510 SHARED bytes.
_SHARED_FIRST, _SHARED_SIZE = 0x40000002, 510


def _locked(fd: int, path: Path) -> bool:
    """Whether another process holds SQLite's lock on the file (Anki holds an exclusive one)."""
    if sys.platform == "win32":  # pragma: no cover - Windows locks are mandatory: a read-only open fails
        try:
            conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=0)
            try:
                conn.execute("select count() from sqlite_master").fetchone()
            finally:
                conn.close()
        except sqlite3.OperationalError as exc:
            return "locked" in str(exc) or "busy" in str(exc)
        return False
    import fcntl

    try:
        fcntl.lockf(fd, fcntl.LOCK_SH | fcntl.LOCK_NB, _SHARED_SIZE, _SHARED_FIRST, 0)
    except OSError:
        return True
    fcntl.lockf(fd, fcntl.LOCK_UN, _SHARED_SIZE, _SHARED_FIRST, 0)
    return False


def private_copy(path: Path, folder: Path) -> Path:
    """Copy a (closed, checked) collection into folder, so reading or trying it never touches the original."""
    target = folder / "collection.anki2"
    shutil.copyfile(path, target)
    for suffix in ("-wal",):
        extra = path.with_name(path.name + suffix)
        if extra.exists():
            shutil.copyfile(extra, target.with_name(target.name + suffix))
    return target
