"""Scratch files that killed commands left behind, removed once no running command can own them.

A command killed outright (SIGKILL, a power cut) cannot clean up: its scratch collection or
fresh build cache stays in .deckbuild-cache/, as large as the deck's collection.  The next
command removes such files by age, never by name alone: another command of the project may
be filling its own right now.
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path

from deckbuild.errors import WriteFailed
from deckbuild.writer import remove_file

ABANDONED_AFTER_S = 3600
"""A scratch file untouched for this long was left by a killed command, not one running."""


def remove_abandoned(folder: Path, pattern: str) -> None:
    """Delete the regular files in `folder` matching `pattern` untouched for ABANDONED_AFTER_S."""
    cutoff = time.time() - ABANDONED_AFTER_S
    with contextlib.suppress(OSError):
        for path in folder.glob(pattern):
            with contextlib.suppress(OSError, WriteFailed):
                if path.is_file() and not path.is_symlink() and path.stat().st_mtime < cutoff:
                    remove_file(path)
