"""Writing the adopted project into DIR: all or nothing, and nothing outside DIR.

DIR must be new or empty.  Every file is first written into a hidden staging folder
inside DIR, then the top-level entries are renamed into place; on any failure the staging
folder (and DIR, if adopt created it) is removed, so DIR's parent is as it was.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path

from deckbuild.errors import LocatedError, Location

STAGING_PREFIX = ".deckbuild-adopt-"


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
    """Write `files` (relative POSIX paths) into `target`, all or nothing."""
    check_target(target)
    created = not target.exists()
    target.mkdir(exist_ok=True)
    moved: list[Path] = []
    staging: Path | None = None
    try:
        staging = Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=target))
        for relative, data in sorted(files.items()):
            path = staging / relative
            if ".." in Path(relative).parts or Path(relative).is_absolute():  # never: mapping.py builds these names
                raise ValueError(f"refusing to write {relative!r} outside the project")
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "xb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
        for entry in sorted(staging.iterdir()):
            destination = target / entry.name
            os.rename(entry, destination)
            moved.append(destination)
        staging.rmdir()
    except BaseException:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
        for path in moved:
            with contextlib.suppress(OSError):
                shutil.rmtree(path) if path.is_dir() else path.unlink()
        if created:
            shutil.rmtree(target, ignore_errors=True)
        raise
