"""The one writer: every file deckbuild creates, replaces or deletes (the project, dist/,
.deckbuild-cache/, a new project's folder, a preview site) goes through this module.

Every file in the project is replaced the same way.  Each target's new bytes reach a temp
file beside it (fsynced); each existing target keeps its old bytes under a hard link beside
it (`.<name>.<random>.old`); with a project root, a journal in `.deckbuild-cache/journal.json`
lists every target, temp and backup; only then is each temp renamed over its target, in the
order staged.  A rename that fails puts back every target already replaced and removes the
folders it created, so the project is byte-identical; a kill between two renames leaves the
journal, and the next writing command (`recover`) rolls the project back from it before it
reads anything.  Read-only commands find the journal (`interrupted`) and refuse to run.

Fault hooks (tests only, since CI cannot make a file immutable nor kill at the right moment):
`DECKBUILD_FAULT=kill-after-rename:N` kills the process (SIGKILL) right after the N-th rename
of a commit with a journal; `DECKBUILD_FAULT=fail-rename:PATH` makes the rename onto PATH
(relative to the project, or to the folder `write_folder` fills) fail with EPERM, as onto an
immutable file.

Every failure is a WriteFailed naming the file and the cause the OS gave.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import shutil
import signal
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from deckbuild.errors import BuildBusy, WriteFailed
from deckbuild.layout import CACHE_DIR

if TYPE_CHECKING:
    import sqlite3

JOURNAL = "journal.json"
FAULT_ENV = "DECKBUILD_FAULT"
STAGING_PREFIX = ".deckbuild-staging-"


def _read_umask() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return umask


# Read once, on import, before any thread of this process creates files: reading the umask
# means setting it, and a file or folder another thread made in that moment (serve writes
# the package beside the next save's pages) would get no umask at all, writable by anyone.
_UMASK = _read_umask()


def journal_path(root: Path) -> Path:
    return root / CACHE_DIR / JOURNAL


@dataclass
class _Entry:
    target: Path
    temp: Path
    backup: Path | None = None


@dataclass
class StagedWrites:
    """Several files replaced together, all of them or none (see the module docstring).

    `root`: the project; with it the commit writes a journal that survives a kill, and
    `command` names what is recorded there (build, release, import).  Use as a context
    manager and call `commit()` at the end of the block; leaving the block removes every
    temp file that was not committed.
    """

    root: Path | None = None
    command: str = "write"
    _staged: list[_Entry] = field(default_factory=list)
    _made: list[Path] = field(default_factory=list)  # folders created for the targets, outermost first

    def stage(self, path: Path, data: bytes, *, if_changed: bool = True) -> bool:
        """Put data in a temp file beside path; False (nothing staged) if path already holds it."""
        if path.is_dir() or (path.exists() and not path.is_file()):
            # Refused now: found at rename time, the files renamed before it would have to go back.
            raise WriteFailed(path, "a folder (or another non-file) is in the way", "in the way")
        if if_changed and path.is_file() and path.read_bytes() == data:
            return False
        self._make_parents(path.parent)
        try:
            fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        except OSError as exc:
            raise WriteFailed(path, exc.strerror or str(exc), "stage") from None
        self._staged.append(_Entry(path, Path(tmp)))
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.chmod(tmp, 0o666 & ~_UMASK)  # as open() would make it (mkstemp makes it 0o600)
        except OSError as exc:
            raise WriteFailed(path, exc.strerror or str(exc), "stage") from None
        return True

    def _make_parents(self, folder: Path) -> None:
        self._made.extend(_make_missing(folder))

    def commit(self) -> None:
        """Keep every old target under a backup, write the journal, rename every staged file into place."""
        if not self._staged:
            return
        # A backup serves to put a target back when a later rename fails, or after a kill (the
        # journal): one file without a journal has neither, and os.replace leaves it whole.
        lone = self.root is None and len(self._staged) == 1
        for entry in () if lone else self._staged:
            if entry.target.is_file():
                entry.backup = entry.temp.with_name(entry.temp.name[: -len(".tmp")] + ".old")
                try:
                    _keep(entry.target, entry.backup)
                except OSError as exc:
                    raise WriteFailed(entry.target, exc.strerror or str(exc), "stage") from None
        journal = self._write_journal()
        fault = _fault_after()
        done: list[_Entry] = []
        for entry in self._staged:
            try:
                _fail_rename(self.root, entry.target)
                os.replace(entry.temp, entry.target)
            except OSError as exc:
                _roll_back(done, self._staged, self._made)
                self._staged.clear()
                self._made.clear()
                _remove(journal)
                raise WriteFailed(entry.target, exc.strerror or str(exc), "replace") from None
            done.append(entry)
            if journal is not None and fault == len(done):
                os.kill(os.getpid(), signal.SIGKILL)
        _remove(journal)
        for entry in self._staged:
            _remove(entry.backup)
        self._staged.clear()
        self._made.clear()

    def _write_journal(self) -> Path | None:
        if self.root is None:
            return None
        root = self.root

        def rel(path: Path | None) -> str | None:
            return None if path is None else os.path.relpath(path, root)

        record = {
            "command": self.command,
            "entries": [{"target": rel(e.target), "temp": rel(e.temp), "backup": rel(e.backup)} for e in self._staged],
            "made": [rel(folder) for folder in self._made],
        }
        path = journal_path(root)
        path.parent.mkdir(exist_ok=True)
        tmp = path.with_name(JOURNAL + ".tmp")
        with open(tmp, "wb") as handle:
            handle.write(json.dumps(record, indent=1).encode())
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
        return path

    def discard(self) -> None:
        for entry in self._staged:
            _remove(entry.temp)
            _remove(entry.backup)
        self._staged.clear()
        _remove_folders(self._made)
        self._made.clear()

    def __enter__(self) -> StagedWrites:
        return self

    def __exit__(self, *exc: object) -> None:
        self.discard()


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """One file replaced whole: a reader sees the old bytes or the new ones, never a part."""
    with StagedWrites() as writes:
        writes.stage(path, data, if_changed=False)
        writes.commit()


def replace_page(path: Path, data: bytes) -> None:
    """One file of a folder that is made again from the sources whenever it is lost or stale (a
    preview site's page, which its manifest checks by size and time), replaced whole in its
    existing folder: a reader sees the old bytes or the new ones.

    Unlike atomic_write_bytes: not fsynced, and none of a project transaction's checks and
    backups.  A first serve of 100,000 cards writes that many pages: here a page took 0.5 ms
    through the transaction, 0.11 ms without its fsync, and takes 0.06 ms this way.
    """
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise _failed(path, exc, "create") from None
    step = "stage"  # as a project's transaction names its steps (WriteFailed: E167, then E162)
    try:
        try:
            rest = memoryview(data)
            while rest:  # os.write may take less than all of it
                rest = rest[os.write(fd, rest) :]
            os.fchmod(fd, 0o666 & ~_UMASK)  # as open() would make it (mkstemp makes it 0o600)
        finally:
            os.close(fd)
        step = "replace"
        os.replace(tmp, path)
    except OSError as exc:
        _remove(Path(tmp))
        raise _failed(path, exc, step) from None


def make_folder(path: Path) -> None:
    """A folder and its missing parents (dist/, the cache folder, a preview); nothing if it is there."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _failed(path, exc, "create") from None


def remove_file(path: Path) -> None:
    """Delete one file; nothing if it is already gone."""
    try:
        path.unlink(missing_ok=True)
    except OSError as exc:
        raise _failed(path, exc, "remove") from None


def move_into_place(staged: Path, target: Path) -> None:
    """A whole file made beside its target (a project's first build cache) renamed over it."""
    try:
        os.replace(staged, target)
    except OSError as exc:
        raise _failed(target, exc, "rename") from None


def remove_empty_folder(path: Path) -> None:
    """Delete a folder if it is empty (one a failed command made); nothing otherwise."""
    with contextlib.suppress(OSError):
        path.rmdir()


def remove_tree(path: Path) -> None:
    """Delete a folder and everything in it (a previous preview site); nothing if it is gone."""
    try:
        shutil.rmtree(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise _failed(path, exc, "remove") from None


def open_database(path: Path) -> sqlite3.Connection:
    """A SQLite file opened for writing (the build cache, a package's scratch collection): SQLite
    creates it if missing and keeps its own journal beside it, so a kill leaves it consistent.
    sqlite3 is imported here: a no-op build never opens a database and stays light.  Opened by
    URI, so the connection may ATTACH another file read only (`file:...?mode=ro`)."""
    import sqlite3

    return sqlite3.connect(path.absolute().as_uri(), uri=True)


@contextlib.contextmanager
def scratch_file(folder: Path, prefix: str, suffix: str) -> Iterator[Path | None]:
    """A new empty file in `folder` for the block (a large package's scratch collection), deleted
    after it; None if it cannot be made (a read-only or full disk), so the caller works in memory."""
    try:
        handle, name = tempfile.mkstemp(prefix=prefix, suffix=suffix, dir=folder)
    except OSError:
        yield None
        return
    os.close(handle)
    try:
        yield Path(name)
    finally:
        _remove(Path(name))


def write_folder(target: Path, files: Mapping[str, bytes]) -> None:
    """Fill `target` (new or empty; the caller checks) with `files` (relative POSIX paths): all or nothing.

    Every file is first written into a hidden staging folder inside `target`, then the
    top-level entries are renamed into place; on any failure the staging folder, the entries
    already moved and the folders made here are removed, so nothing outside `target` changes.
    """
    made: list[Path] = []
    moved: list[Path] = []
    staging: Path | None = None
    current = target
    try:
        made = _make_missing(target)
        staging = Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=target))
        for relative, data in sorted(files.items()):
            if ".." in Path(relative).parts or Path(relative).is_absolute():
                raise ValueError(f"refusing to write {relative!r} outside {target}")
            current = target / relative
            path = staging / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "xb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
        for entry in sorted(staging.iterdir()):
            current = target / entry.name
            _fail_rename(target, current)
            os.rename(entry, current)
            moved.append(current)
        staging.rmdir()
    except BaseException as exc:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
        for path in moved:
            with contextlib.suppress(OSError):
                shutil.rmtree(path) if path.is_dir() else path.unlink()
        _remove_folders(made)
        if isinstance(exc, WriteFailed):
            raise
        if isinstance(exc, OSError):
            raise WriteFailed(current, exc.strerror or str(exc), "create") from None
        raise


def _make_missing(folder: Path) -> list[Path]:
    """Create `folder` and its missing parents; the folders made, outermost first."""
    missing = []
    while not folder.exists():
        missing.append(folder)
        folder = folder.parent
    made: list[Path] = []
    for path in reversed(missing):
        try:
            path.mkdir()
        except FileExistsError:
            continue
        except OSError as exc:
            _remove_folders(made)
            raise WriteFailed(path, exc.strerror or str(exc), "stage") from None
        made.append(path)
    return made


def _failed(path: Path, exc: OSError, step: str) -> WriteFailed:
    if exc.errno in (errno.ENOTDIR, errno.EEXIST, errno.EISDIR):
        step = "in the way"  # a file where a folder belongs, or the other way round
    return WriteFailed(exc.filename or path, exc.strerror or str(exc), step)


def _keep(target: Path, backup: Path) -> None:
    """The target's current bytes under `backup`: a hard link (no copy), or a copy where links fail."""
    try:
        os.link(target, backup)
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.EXDEV, errno.EMLINK, errno.ENOTSUP, errno.EOPNOTSUPP):
            raise
        shutil.copy2(target, backup)


def _fault_after() -> int | None:
    value = os.environ.get(FAULT_ENV, "")
    if value.startswith("kill-after-rename:"):
        with contextlib.suppress(ValueError):
            return int(value.split(":", 1)[1])
    return None


def _fail_rename(root: Path | None, target: Path) -> None:
    """The fault hook `fail-rename:PATH`: the rename onto PATH fails as onto an immutable file."""
    value = os.environ.get(FAULT_ENV, "")
    if root is not None and value.startswith("fail-rename:") and os.path.relpath(target, root) == value.split(":", 1)[1]:
        raise PermissionError(errno.EPERM, os.strerror(errno.EPERM), str(target))


def _remove(path: Path | None) -> None:
    if path is not None:
        with contextlib.suppress(OSError):
            os.unlink(path)


def _remove_folders(folders: list[Path]) -> None:
    for folder in reversed(folders):
        with contextlib.suppress(OSError):
            os.rmdir(folder)  # only if still empty


def _roll_back(done: list[_Entry], staged: list[_Entry], made: list[Path]) -> None:
    """Every renamed target back to its old bytes (or gone, if it is new); every temp removed."""
    for entry in reversed(done):
        if entry.backup is not None:
            os.replace(entry.backup, entry.target)
        else:
            _remove(entry.target)
    for entry in staged:
        _remove(entry.temp)
        _remove(entry.backup)
    _remove_folders(made)


@dataclass(frozen=True)
class Interrupted:
    """What the journal of an interrupted commit says: the command and the files it was replacing."""

    command: str
    targets: tuple[str, ...]


def interrupted(root: Path) -> Interrupted | None:
    """The unfinished commit the journal describes, or None; reads only."""
    path = journal_path(root)
    try:
        record = json.loads(path.read_bytes())
        return Interrupted(str(record["command"]), tuple(str(e["target"]) for e in record["entries"]))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError):
        return Interrupted("unknown", ())


def unfinished(root: Path) -> tuple[str, ...] | None:
    """The files an interrupted commit was replacing (relative to root), or None if none was; reads only."""
    found = interrupted(root)
    return None if found is None else found.targets


def recover(root: Path) -> tuple[str, ...]:
    """Roll an interrupted commit back from its journal (call under the project lock): every
    target holds its bytes from before that command again; returns the targets it names.

    Safe to repeat: a kill during recovery leaves the journal, and the next run finishes it.
    """
    found = interrupted(root)
    if found is None:
        return ()
    path = journal_path(root)
    try:
        record = json.loads(path.read_bytes())
        entries = [
            _Entry(root / e["target"], root / e["temp"], None if e["backup"] is None else root / e["backup"])
            for e in record["entries"]
        ]
        made = [root / folder for folder in record.get("made", [])]
    except (OSError, ValueError, KeyError, TypeError):
        entries, made = [], []  # unreadable: nothing can be restored from it
    for entry in reversed(entries):
        if entry.backup is not None:
            if entry.backup.exists() and entry.target.exists() and os.path.samefile(entry.backup, entry.target):
                _remove(entry.backup)  # never renamed: rename() between two links of one file does nothing
            elif entry.backup.exists():
                os.replace(entry.backup, entry.target)
        elif not entry.temp.exists():
            _remove(entry.target)  # a new file that was renamed into place
        _remove(entry.temp)
    _remove_folders(made)
    _remove(path)
    return found.targets


def remove_stale_temps(path: Path) -> None:
    """Delete temp files and backups a killed command left beside `path` (only under the project lock, no journal)."""
    import glob

    for pattern in (".tmp", ".old"):
        for stale in path.parent.glob(f".{glob.escape(path.name)}.*{pattern}"):
            _remove(stale)


@contextlib.contextmanager
def project_lock(root: Path) -> Iterator[None]:
    """Hold an exclusive lock on the project so two commands never interleave their writes."""
    lock_dir = root / CACHE_DIR
    lock_dir.mkdir(exist_ok=True)
    with open(lock_dir / "build.lock", "a+") as handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise BuildBusy(
                f"another deckbuild is running in {root} (it holds {lock_dir / 'build.lock'}); wait for it to finish and run again"
            ) from None
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
