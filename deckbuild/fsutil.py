"""File writes that never leave a half-written file, and the project lock."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

from deckbuild.errors import BuildBusy
from deckbuild.layout import CACHE_DIR


def special_kind(path: Path) -> str | None:
    """What a path is if it exists but is neither a regular file nor a folder, else None.

    Found with stat(), which never opens the file: opening a named pipe blocks until
    someone writes to it, and reading a device may never end.  Links are followed.
    """
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def not_regular_message(kind: str) -> str:
    """The E125 message: what was found, what is expected, what to do."""
    return f"expected a regular file; found {kind}, which deckbuild never opens: replace it with a file or remove it"


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write to a temporary file beside `path`, fsync, then rename over it."""
    with StagedWrites() as writes:
        writes.stage(path, data, if_changed=False)
        writes.commit()


def rename_into_place(tmp: str, path: Path) -> None:
    """The one step that replaces a target (a function of its own, so tests can kill a process between two)."""
    os.replace(tmp, path)


class StagedWrites:
    """Several files replaced together: every file's bytes reach a temp file beside it first.

    Only once all of them are on disk (fsynced) are they renamed into place, in the order
    staged; a failure while staging (a read-only folder, a full disk, an output path that is
    a folder) removes the temp files and leaves every target as it was.  Use as a context
    manager and call `commit()` at the end of the block.
    """

    def __init__(self) -> None:
        self._staged: list[tuple[str, Path]] = []

    def stage(self, path: Path, data: bytes, *, if_changed: bool = True) -> bool:
        """Put data in a temp file beside path; False (nothing staged) if path already holds it."""
        if path.is_dir():  # refused now: found at rename time, files renamed before it would stay
            raise IsADirectoryError(errno.EISDIR, "a folder is in the way", str(path))
        if if_changed and path.is_file() and path.read_bytes() == data:
            return False
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        self._staged.append((tmp, path))
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        return True

    def commit(self) -> None:
        """Rename every staged file into place, in the order staged."""
        while self._staged:
            tmp, path = self._staged[0]
            rename_into_place(tmp, path)
            self._staged.pop(0)

    def discard(self) -> None:
        for tmp, _path in self._staged:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        self._staged.clear()

    def __enter__(self) -> StagedWrites:
        return self

    def __exit__(self, *exc: object) -> None:
        self.discard()


def remove_stale_temps(path: Path) -> None:
    """Delete temp files a killed build left beside `path` (call only under the project lock)."""
    import glob

    for stale in path.parent.glob(f".{glob.escape(path.name)}.*.tmp"):
        with contextlib.suppress(OSError):
            stale.unlink()


@contextlib.contextmanager
def project_lock(root: Path) -> Iterator[None]:
    """Hold an exclusive lock on the project so two builds never interleave their writes."""
    import fcntl

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
