"""Media: hand-made images from media/ and generated diagrams, as flat, unique package names.

A hand-made image reaches the learner under a name that changes when its bytes change
(Anki never replaces a file it already has, and a note whose field text is unchanged is
never updated).  An image ships first under its own file name; the build record
remembers the bytes it shipped with, and once they change the image ships as
`<stem>-<12 hex of sha256>.<ext>`, like generated diagrams.  Unchanged images keep the
name they shipped with, so nothing else moves.
"""

from __future__ import annotations

import hashlib
import os
import re
import unicodedata
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from deckbuild.errors import Location, Problem
from deckbuild.layout import MEDIA_DIR
from deckbuild.mediacheck import refusals
from deckbuild.model import Card, MediaFile

IMAGE_TYPES = {".png", ".jpg", ".jpeg", ".gif", ".webp", ".svg"}
# Names Windows (and so Anki on Windows, and phones' FAT/exFAT cards) cannot store.
_RESERVED = frozenset({"CON", "PRN", "AUX", "NUL", *(f"COM{i}" for i in range(1, 10)), *(f"LPT{i}" for i in range(1, 10))})
_BAD_CHARS = re.compile(r'[<>:"/\\|?*\x00-\x1f]')


def shipped_name(source: str, digest: str, shipped: Mapping[str, Any]) -> str:
    """The name Anki sees for media/<source> with these bytes, given what shipped before.

    `shipped` is the build record's media map {source name: {"hash", "name"}}.  Bytes
    that shipped before keep their name; a first-seen image keeps its own file name;
    changed bytes get a content name, so the new picture reaches the learner.
    """
    entry = shipped.get(source)
    if not isinstance(entry, Mapping):
        return source
    if entry.get("hash") == digest and isinstance(entry.get("name"), str):
        return str(entry["name"])
    stem, dot, ext = source.rpartition(".")
    return f"{stem}-{digest[:12]}.{ext}" if dot else f"{source}-{digest[:12]}"


def media_record(images: Mapping[str, MediaFile], shipped: Mapping[str, Any]) -> dict[str, Any]:
    """The build record's new media map: what ships now, plus entries of images no longer used."""
    record = {k: dict(v) for k, v in shipped.items() if isinstance(v, Mapping)}
    for media in images.values():
        if media.source:
            record[media.source] = {"hash": media.hash, "name": media.name}
    return dict(sorted(record.items()))


def portable_name_problem(name: str) -> str | None:
    """Why a phone or Windows cannot store this media name, or None."""
    bad = sorted(set(_BAD_CHARS.findall(name)))
    if bad:
        shown = " ".join(repr(c) for c in bad)
        return f"contains {shown}, which Windows and phones cannot store in a file name"
    if name.endswith((".", " ")):
        return "ends with a dot or a space, which Windows drops (two names would then collide)"
    if name.split(".", 1)[0].upper() in _RESERVED:
        return f"'{name.split('.', 1)[0]}' is a reserved device name on Windows"
    return None


def special_media(root: Path) -> list[Problem]:
    """Every pipe, socket or device under media/ (listed, never opened), used or not."""
    from deckbuild.fsutil import not_regular_message, special_kind

    base = root / MEDIA_DIR
    problems: list[Problem] = []
    if not base.is_dir():
        return problems
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames.sort()
        for name in sorted(filenames):
            path = Path(dirpath) / name
            kind = special_kind(path)
            if kind is not None:
                problems.append(Problem(Location(path.relative_to(root).as_posix()), "E125", not_regular_message(kind)))
    return problems


def check_images(
    root: Path, cards: Sequence[Card], shipped: Mapping[str, Any] | None = None
) -> tuple[dict[str, MediaFile], list[Problem]]:
    """Resolve every `image:` to a file inside media/ and the name it ships under.

    Refuses escapes, links out, odd types, pipes and devices (never opened), names a phone
    or Windows cannot store, names that differ only in case or Unicode form, and files
    whose content is not what their name says or could run script (mediacheck.py).
    `shipped` is the build record's media map (see shipped_name).
    """
    from deckbuild.fsutil import not_regular_message, special_kind

    problems: list[Problem] = special_media(root)
    folded: dict[str, tuple[str, Location]] = {}
    found: dict[str, MediaFile] = {}
    media_root = (root / MEDIA_DIR).resolve()
    by_name: dict[str, tuple[Path, Location]] = {}
    refused: set[str] = set()  # names whose content the media check refused
    for card in cards:
        figure = card.figure
        if figure is None or figure.file is None:
            continue
        where = card.where("image")
        rel = figure.file
        path = Path(rel)
        if path.is_absolute() or ".." in path.parts or rel.startswith(("~", "\\")):
            problems.append(
                Problem(
                    where,
                    "E112",
                    f"card '{card.id}': image '{rel}' must be a path inside {MEDIA_DIR}/ (no '..', no absolute paths)",
                )
            )
            continue
        full = root / MEDIA_DIR / path
        try:
            resolved = full.resolve(strict=True)
        except (OSError, RuntimeError, ValueError):  # ValueError: a NUL byte in the name
            problems.append(Problem(where, "E111", f"card '{card.id}': image '{rel}' not found in {MEDIA_DIR}/"))
            continue
        if not resolved.is_relative_to(media_root) or not media_root.is_relative_to(root.resolve()):
            problems.append(Problem(where, "E112", f"card '{card.id}': image '{rel}' is a link to a file outside {MEDIA_DIR}/"))
            continue
        kind = special_kind(resolved)
        if kind is not None:
            problems.append(Problem(where, "E125", f"card '{card.id}': image '{rel}': {not_regular_message(kind)}"))
            continue
        if not resolved.is_file():
            problems.append(Problem(where, "E111", f"card '{card.id}': image '{rel}' is not a file"))
            continue
        if resolved.suffix.lower() not in IMAGE_TYPES:
            problems.append(
                Problem(
                    where,
                    "E113",
                    f"card '{card.id}': image '{rel}': unsupported type '{resolved.suffix}'; expected one of {', '.join(sorted(IMAGE_TYPES))}",
                )
            )
            continue
        name = path.name
        if name.startswith("_"):
            problems.append(
                Problem(
                    where,
                    "E122",
                    f"card '{card.id}': image names starting with '_' are reserved by Anki for template files; rename '{name}'",
                )
            )
            continue
        if name in by_name and by_name[name][0] != resolved:
            problems.append(
                Problem(
                    where,
                    "E122",
                    f"card '{card.id}': image name '{name}' is also used for a different file (at {by_name[name][1]}); Anki media names are flat, rename one",
                )
            )
            continue
        unportable = portable_name_problem(name)
        if unportable is not None:
            problems.append(Problem(where, "E124", f"card '{card.id}': image name '{name}' {unportable}; rename the file"))
            continue
        key = unicodedata.normalize("NFC", name).casefold()
        if key in folded and folded[key][0] != name:
            other, other_where = folded[key]
            how = "only in upper/lower case" if other.casefold() == name.casefold() else "only in Unicode normalization"
            problems.append(
                Problem(
                    where,
                    "E123",
                    f"card '{card.id}': image name '{name}' differs from '{other}' (at {other_where}) {how}; on macOS, "
                    "Windows and phones they are one file and one picture would replace the other: rename one",
                )
            )
            continue
        folded.setdefault(key, (name, where))
        first_use = name not in by_name
        by_name[name] = (resolved, where)
        if name in refused:
            continue
        data = resolved.read_bytes()
        digest = hashlib.sha256(data).hexdigest()
        if first_use:  # a file several cards show is checked and reported once, at the first
            found_wrong = refusals(name, data)
            problems += [r.at(f"{MEDIA_DIR}/{rel}", where, f"card '{card.id}': image '{rel}': ") for r in found_wrong]
            if found_wrong:
                refused.add(name)
                continue
        found[card.id] = MediaFile(name=shipped_name(name, digest, shipped or {}), path=resolved, source=name, hash=digest)
    return found, problems
