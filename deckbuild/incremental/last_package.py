"""The last package's collection, kept beside the build cache for the next build to copy its
unchanged rows from (apkg/row_copy.py).

Two files in .deckbuild-cache/: the collection (last-package.anki2) and what its rows were
made from (last-package.index: the layout, each note's key and id, the file's CRC-32 and the
code that made it, and a CRC-32 of its own).  They are replaced when the build cache keeps a build, and never trusted
beyond what they say: other code, another layout, a note whose key differs or a file whose
CRC-32 differs means rows made afresh, never a failed build.
"""

from __future__ import annotations

import array
import contextlib
import dataclasses
import json
import os
import sys
import threading
import zlib
from collections.abc import Callable
from pathlib import Path

from deckbuild.apkg.row_copy import Collection, file_crc
from deckbuild.errors import WriteFailed
from deckbuild.incremental.uptodate import code_fingerprint
from deckbuild.writer import atomic_write_bytes, move_into_place, remove_file

FILE = "last-package.anki2"
INDEX = "last-package.index"
FORMAT = 1


def load(folder: Path, *, check_now: bool = False) -> Collection | None:
    """The collection the last kept build left in `folder`, or None (none, other code, unreadable).

    `check_now`: its bytes' CRC-32 is computed from now on by a thread of its own (reading and
    hashing let go of the GIL), for the package to find ready: it is a read of the whole
    collection (90 MB and 0.1 s at 100,000 notes), and the stages between a plan's cards and
    its package take far longer.  Never while worker processes may be forked (they would
    inherit a process with a thread in it): after the cards are parsed.
    """
    try:
        raw = (folder / INDEX).read_bytes()
        header_end = raw.index(b"\n")
        header = json.loads(raw[:header_end])
        if header["format"] != FORMAT or header["code"] != code_fingerprint() or header["order"] != sys.byteorder:
            return None
        if zlib.crc32(raw[header_end + 1 :]) != header["body_crc"]:  # damaged since written
            return None
        count = int(header["notes"])
        ids = array.array("q")
        ids_end = header_end + 1 + ids.itemsize * (count + 1)
        ids.frombytes(raw[header_end + 1 : ids_end])
        keys = raw[ids_end:].decode("utf-8").split("\n") if count else []
        if len(keys) != count:  # a key holding a line break (a subdeck's name): nothing is copied
            return None
        collection = Collection(folder / FILE, str(header["layout"]), keys, ids, int(header["copyable"]), int(header["crc"]))
    except (OSError, ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError):
        return None
    return dataclasses.replace(collection, checked=_check_in_thread(collection.path)) if check_now else collection


def _check_in_thread(path: Path) -> Callable[[], int | None]:
    """file_crc(path), computed by a daemon thread: the callable waits for it."""
    found: list[int | None] = []
    thread = threading.Thread(target=lambda: found.append(file_crc(path)), name="last-package-crc", daemon=True)
    thread.start()

    def checked() -> int | None:
        thread.join()
        return found[0] if found else None

    return checked


class Keeper:
    """This build's collection, moved out of its scratch file: put in place when the build cache
    keeps the build (`keep`), removed when it drops it (`drop`)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.pending: Collection | None = None

    def take(self, made: Collection) -> None:
        """Move the package's scratch collection aside (a later package of the same plan replaces it)."""
        self.drop()
        # Named as package.py's scratch files are, so one a killed build leaves is removed later.
        pending = self.folder / f"package-{os.getpid()}-last.anki2"
        with contextlib.suppress(WriteFailed):
            move_into_place(made.path, pending)
            self.pending = dataclasses.replace(made, path=pending)

    def keep(self) -> None:
        made, self.pending = self.pending, None
        if made is None:
            return
        header = {
            "format": FORMAT,
            "code": code_fingerprint(),
            "layout": made.layout,
            "crc": made.crc,
            "notes": len(made.keys),
            "copyable": made.copyable,
            "order": sys.byteorder,
        }
        # A line of JSON, the ids as 8-byte integers, the keys a line each: a large deck's
        # index (100,000 notes) is read and written in milliseconds.
        body = array.array("q", made.ids).tobytes() + "\n".join(made.keys).encode()
        header["body_crc"] = zlib.crc32(body)
        index = json.dumps(header).encode() + b"\n" + body
        try:
            # Either order leaves a pair the next build refuses if killed between: the index
            # names the CRC-32 of the collection it was written with.
            atomic_write_bytes(self.folder / INDEX, index)
            move_into_place(made.path, self.folder / FILE)
        except WriteFailed:
            with contextlib.suppress(WriteFailed):
                remove_file(made.path)

    def drop(self) -> None:
        made, self.pending = self.pending, None
        if made is not None:
            with contextlib.suppress(WriteFailed):
                remove_file(made.path)
