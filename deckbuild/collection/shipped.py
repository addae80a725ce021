"""What a project's releases shipped of each note (releases/*.jsonl): push's baseline when the
collection holds no record of an earlier push (the deck came in by a plain import)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from deckbuild.errors import DeckbuildError
from deckbuild.layout import RELEASES_DIR
from deckbuild.model import RETIRED_TAG
from deckbuild.release.versioning import read_snapshot


@dataclass(frozen=True)
class Version:
    """One note as one release shipped it: its fields by name and its tags."""

    fields: Mapping[str, str]
    tags: tuple[str, ...]


def released_versions(root: Path) -> dict[str, tuple[Version, ...]]:
    """By GUID, every distinct version of the note that a release of the project (or of one of
    its variants) shipped, oldest release file first; {} for a project never released."""
    out: dict[str, list[Version]] = {}
    for path in sorted((root / RELEASES_DIR).rglob("*.jsonl")):
        try:
            snapshot = read_snapshot(path)
        except DeckbuildError:
            continue  # an unreadable snapshot only makes the baseline smaller; build reports it
        names = {key: [str(n) for n in schema.get("fields", [])] for key, schema in snapshot.schemas.items()}
        for note in snapshot.notes.values():
            fields = names.get(note.notetype)
            if not fields or len(fields) != len(note.fields):
                continue
            tags = tuple(note.tags) + ((RETIRED_TAG,) if note.retired and RETIRED_TAG not in note.tags else ())
            version = Version(dict(zip(fields, note.fields, strict=True)), tags)
            seen = out.setdefault(note.guid, [])
            if version not in seen:
                seen.append(version)
    return {guid: tuple(versions) for guid, versions in out.items()}
