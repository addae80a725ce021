"""Writing the adopted project into DIR: all or nothing, and nothing outside DIR.

DIR must be new or empty.  The writer stages every file in a hidden folder inside DIR, then
renames the top-level entries into place; on any failure it removes what it wrote (and DIR, if
it created it), so DIR's parent is as it was.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from deckbuild.errors import LocatedError, Location
from deckbuild.writer import write_folder


def check_target(target: Path) -> None:
    """E258 unless `target` can take a new project: missing (in an existing folder) or an empty folder."""
    where = Location(str(target))
    if target.is_symlink():
        raise LocatedError(where, "E258", "DIR is a symbolic link; name a new folder. Nothing was written")
    if target.exists():
        if not target.is_dir():
            raise LocatedError(where, "E258", "DIR exists and is not a folder; name a new folder. Nothing was written")
        if any(target.iterdir()):
            raise LocatedError(where, "E258", "DIR exists and is not empty; name a new or empty folder. Nothing was written")
    elif not target.parent.is_dir():
        raise LocatedError(where, "E258", f"the folder {target.parent} does not exist; create it first. Nothing was written")


def write_project(target: Path, files: Mapping[str, bytes]) -> None:
    """Write `files` (relative POSIX paths) into `target`, all or nothing (writer.write_folder)."""
    check_target(target)
    write_folder(target, files)
