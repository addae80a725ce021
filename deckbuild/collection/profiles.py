"""Where Anki desktop keeps its profiles, and which collection file a command means."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from deckbuild.errors import LocatedError, Location


def anki_base(base: Path | None = None) -> Path:
    """Anki's base folder: `--base`, else $ANKI_BASE, else the platform's default (as Anki desktop does)."""
    if base is not None:
        return base
    if os.environ.get("ANKI_BASE"):
        return Path(os.environ["ANKI_BASE"])
    home = Path.home()
    if sys.platform == "win32":
        return Path(os.environ.get("APPDATA", home / "AppData" / "Roaming")) / "Anki2"
    if sys.platform == "darwin":
        return home / "Library" / "Application Support" / "Anki2"
    return Path(os.environ.get("XDG_DATA_HOME", home / ".local" / "share")) / "Anki2"


def resolve(collection: Path | None, profile: str | None, base: Path | None) -> Path:
    """The collection.anki2 named by --collection, or by --profile in Anki's base folder."""
    if (collection is None) == (profile is None):
        raise LocatedError(Location("<command line>"), "E600", "give exactly one of --collection PATH or --profile NAME")
    if collection is not None:
        return collection
    folder = anki_base(base)
    path = folder / str(profile) / "collection.anki2"
    if not path.is_file():
        known = sorted(p.parent.name for p in folder.glob("*/collection.anki2"))
        raise LocatedError(
            Location(str(folder)),
            "E603",
            f"no Anki profile {profile!r} here: expected {path}; found profiles: {', '.join(known) or 'none'}."
            " Give --base DIR if Anki runs with -b DIR or ANKI_BASE",
        )
    return path
