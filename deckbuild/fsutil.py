"""What a path is before it is read: regular files and folders only (writes are in writer.py)."""

from __future__ import annotations

import os
import stat
from pathlib import Path


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
