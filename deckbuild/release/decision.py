"""The release decision: the next version, what changed since the last release, and the files a release adds.

A pure stage of the plan: it reads deck.yaml and CHANGELOG.md to compute their new bytes
but writes nothing (apply.py does, together with the record and the package).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from deckbuild.apkg.notetypes import NoteType
from deckbuild.errors import Location
from deckbuild.layout import CHANGELOG, CONFIG_FILE
from deckbuild.model import Card, DeckConfig, RenderedNote
from deckbuild.release import identity, retirement, versioning
from deckbuild.release.record import Clock


@dataclass(frozen=True)
class ReleaseDecision:
    """What `deckbuild release` ships: the version, the changes, the snapshot and its files."""

    version: str
    time: int
    changes: versioning.Changes
    snapshot: versioning.Snapshot
    info: Mapping[str, Any]  # the build record's "release" entry
    files: tuple[tuple[Path, bytes], ...]  # the snapshot, deck.yaml, CHANGELOG.md, in the order they are written


def decide(
    root: Path,
    config: DeckConfig,
    rendered: Sequence[RenderedNote],
    previous: versioning.Snapshot | None,
    media: Sequence[str],
    clock: Clock,
    notetypes: Mapping[str, NoteType] | None = None,
    *,
    bump: str | None = None,
    allow_schema_change: bool = False,
    past: identity.Known | None = None,
    cards: Sequence[Card] = (),
) -> ReleaseDecision:
    """Compare the rendered notes with the last release; refuse a release that must not ship (E501, E502, E170).

    `notetypes`: every note type the deck ships (default: the built-in ones); `past`: what the
    record and the last release say (identity.known), if read already; `cards`: the sources'
    cards, whose `previous_ids` name the default replacement of a retired id."""
    from deckbuild.apkg.notetypes import NOTETYPES

    current = {n.card_id: versioning.published(n) for n in rendered}
    schemas = {key: nt.schema() for key, nt in (notetypes or NOTETYPES).items()}
    changes = identity.release_changes(root, config, versioning.compare(previous, current, schemas), past)
    where = Location(CONFIG_FILE)
    if previous is None:
        version = versioning.bump(config.version, bump) if bump else config.version
        identity.refuse_minor_namespace_change(changes, bump or "")
    else:
        part, version = versioning.next_version(previous.version, changes, bump, allow_schema_change, where)
        identity.refuse_minor_namespace_change(changes, part)
    # The one read of the clock for this release; every changed note gets this time.
    now = clock.now()
    notice = NOTETYPES["qa"].fields.index("Notice")
    # A declared note type has no Notice field: its retired notes say so by their tag only.
    retired = {n.card_id: versioning.retire(n, version, notice if n.notetype in NOTETYPES else None) for n in changes.retired}
    if previous is not None:
        guids = {n.guid for n in current.values()}  # a retired note renamed back to life ships once
        retired.update({k: n for k, n in previous.notes.items() if n.retired and k not in current and n.guid not in guids})
    snapshot = versioning.Snapshot(version, now, schemas, tuple(sorted(set(media))), {**current, **retired})
    # The snapshot records retired notes as they ship: their fronts say why and what replaces them.
    shown = retirement.shipped(root, cards, rendered, snapshot, dict(config.sources))
    snapshot = dataclasses.replace(snapshot, notes={**snapshot.notes, **{n.card_id: n for n in shown}})
    changelog = versioning.changelog_with(root, versioning.changelog_entry(version, now, changes, config.name), config.name)
    files = (
        (versioning.snapshot_path(root, version), snapshot.to_bytes()),
        (root / CONFIG_FILE, versioned_deck_yaml(root, version)),
        (root / CHANGELOG, changelog),
    )
    info = {"version": version, "time": now, "summary": changes.summary()}
    return ReleaseDecision(version, now, changes, snapshot, info, files)


def versioned_deck_yaml(root: Path, version: str) -> bytes:
    """deck.yaml's bytes with its version line set to version, keeping comments and layout."""
    text = (root / CONFIG_FILE).read_text("utf-8")
    new, count = re.subn(r"(?m)^(version:[ \t]*)[\"']?[^\s#\"']+[\"']?", lambda m: m.group(1) + version, text, count=1)
    if count != 1:
        new = text.rstrip("\n") + f"\nversion: {version}\n"
    return new.encode()
