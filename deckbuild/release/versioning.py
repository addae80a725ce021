"""Releases: semantic versions, published snapshots, retired notes and the changelog.

A release publishes the deck: `releases/<version>.jsonl` records every note exactly as
shipped (one JSON line per note, sorted by id, so a git diff of two releases reads like
a review).  Anki never deletes a note on import, so a card removed from the sources keeps
shipping from that snapshot with a `retired` tag and a visible notice.  The clock is read
once per release; rebuilding a recorded release gives the same bytes on any day.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from deckbuild.changeset import Baseline, Changeset, changes
from deckbuild.errors import LocatedError, Location
from deckbuild.layout import CHANGELOG, RELEASES_DIR
from deckbuild.model import RETIRED_TAG, RenderedNote
from deckbuild.render import plain


@dataclass(frozen=True)
class PublishedNote:
    """A note as a release shipped it."""

    card_id: str
    guid: str
    notetype: str
    fields: tuple[str, ...]
    tags: tuple[str, ...]
    front: str  # plain text of the question or cloze context, for changelogs
    hash: str
    retired: bool = False
    deck: str = ""  # its subdeck under the deck's name ("" = the deck itself)

    def to_json(self) -> str:
        data: dict[str, Any] = {
            "id": self.card_id,
            "guid": self.guid,
            "notetype": self.notetype,
            "hash": self.hash,
            "front": self.front,
            "tags": list(self.tags),
            "fields": list(self.fields),
        }
        if self.retired:
            data["retired"] = True
        if self.deck:
            data["deck"] = self.deck
        return json.dumps(data, ensure_ascii=False, sort_keys=True)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PublishedNote:
        return cls(
            card_id=str(data["id"]),
            guid=str(data["guid"]),
            notetype=str(data["notetype"]),
            fields=tuple(data["fields"]),
            tags=tuple(data["tags"]),
            front=str(data.get("front", "")),
            hash=str(data["hash"]),
            retired=bool(data.get("retired", False)),
            deck=str(data.get("deck", "")),
        )

    def as_rendered(self, due: int) -> RenderedNote:
        return RenderedNote(self.card_id, self.guid, self.notetype, self.fields, self.tags, due, self.hash)


@dataclass(frozen=True)
class Snapshot:
    """One release: its version, time, note type schemas, media names and notes."""

    version: str
    time: int
    schemas: Mapping[str, Any]
    media: tuple[str, ...]
    notes: Mapping[str, PublishedNote] = field(default_factory=dict)

    def to_bytes(self) -> bytes:
        head = {"version": self.version, "time": self.time, "schemas": self.schemas, "media": list(self.media)}
        lines = [json.dumps({"release": head}, sort_keys=True)]
        lines += [self.notes[k].to_json() for k in sorted(self.notes)]
        return ("\n".join(lines) + "\n").encode()


def snapshot_path(root: Path, version: str) -> Path:
    return root / RELEASES_DIR / f"{version}.jsonl"


def read_snapshot(path: Path) -> Snapshot:
    display = str(path)
    try:
        lines = path.read_text("utf-8").splitlines()
        head = json.loads(lines[0])["release"]
        notes = {}
        for line in lines[1:]:
            if line.strip():
                note = PublishedNote.from_json(json.loads(line))
                notes[note.card_id] = note
        return Snapshot(str(head["version"]), int(head["time"]), head.get("schemas", {}), tuple(head.get("media", [])), notes)
    except FileNotFoundError:
        raise LocatedError(Location(display), "E503", "release snapshot not found; restore it from git") from None
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise LocatedError(Location(display), "E503", f"release snapshot is unreadable ({exc}); restore it from git") from None


def latest_snapshot(root: Path, record_extra: Mapping[str, Any]) -> Snapshot | None:
    """The last recorded release, if any (named in the build record)."""
    release = record_extra.get("release")
    if not release:
        return None
    return read_snapshot(snapshot_path(root, str(release["version"])))


def front_text(note: RenderedNote) -> str:
    import html
    import re

    text = re.sub(r"<[^>]+>", " ", note.fields[1] or note.fields[0] if note.notetype == "cloze" else note.fields[0])
    text = re.sub(r"\{\{c\d+::(.*?)(::[^}]*)?\}\}", r"[\1]", text)
    return re.sub(r"\s+", " ", html.unescape(text)).strip()[:160]


def published(note: RenderedNote) -> PublishedNote:
    return PublishedNote(
        note.card_id, note.guid, note.notetype, note.fields, note.tags, front_text(note), note.content_hash, deck=note.deck
    )


def retire(note: PublishedNote, version: str, notice_index: int | None) -> PublishedNote:
    """The note as it keeps shipping after its card left the sources (a declared note type
    has no Notice field, `notice_index` None: only the tag says so)."""
    from deckbuild.model import content_hash

    if note.retired:
        return note
    fields = list(note.fields)
    if notice_index is not None:
        fields[notice_index] = plain(
            f"Retired in version {version}: this card is no longer part of the deck. "
            f"Suspend or delete it (search: tag:{RETIRED_TAG})."
        )
    tags = tuple(sorted({*note.tags, RETIRED_TAG}))
    return PublishedNote(
        note.card_id,
        note.guid,
        note.notetype,
        tuple(fields),
        tags,
        note.front,
        content_hash(note.notetype, fields, tags),
        True,
        note.deck,
    )


@dataclass(frozen=True)
class Changes:
    """What changed between the last release and now: the changeset, and its notes as they ship."""

    added: tuple[PublishedNote, ...]
    changed: tuple[PublishedNote, ...]
    retired: tuple[PublishedNote, ...]
    schema_changed: tuple[str, ...]
    # (old id, the note now) for cards that kept their note under a new id (previous_ids).
    renamed: tuple[tuple[str, PublishedNote], ...] = ()
    # Lines for the changelog's Breaking paragraph (a new namespace); forces a major release.
    breaking: tuple[str, ...] = ()
    notices: tuple[str, ...] = ()  # other lines learners must read (a renamed deck)
    # Note types whose only schema change is fields renamed with their ids kept: Anki renames
    # them in place, so learners' notes keep updating (still a major release).
    renamed_in_place: tuple[str, ...] = ()
    # (note, subdeck before, subdeck now) for notes the sources put in another deck: a plain
    # import leaves learners' existing cards where they are ("" = the deck itself).
    moved: tuple[tuple[PublishedNote, str, str], ...] = ()
    changeset: Changeset = Changeset()  # what the lists above are read from

    def needed_bump(self) -> str | None:
        return release_bump(self.changeset, breaking=bool(self.breaking), notice=bool(self.notices))

    def summary(self) -> str:
        renamed = f", {len(self.renamed)} renamed" if self.renamed else ""
        moved = f", {len(self.moved)} moved" if self.moved else ""
        return f"{len(self.added)} added, {len(self.changed)} changed{renamed}{moved}, {len(self.retired)} retired"


def release_bump(changeset: Changeset, *, breaking: bool = False, notice: bool = False) -> str | None:
    """The part a release must bump for `changeset` (None: nothing to release).

    major where notes retire or a note type changes (or the deck's identity breaks), minor
    where notes are added, patch for edits, renames, moves (and a notice learners must read)."""
    if changeset.leaving or changeset.of_kind("retired") or changeset.notetypes or breaking:
        return "major"
    if changeset.of_kind("added"):
        return "minor"
    if changeset.of_kind("changed", "renamed") or changeset.moved or notice:
        return "patch"
    return None


def release_baseline(previous: Snapshot | None) -> Baseline:
    """What the last release shipped, as the changeset compares with it (everything, fields included)."""
    if previous is None:
        return Baseline()
    old = previous.notes
    return Baseline(
        {k: n.hash for k, n in old.items()},
        {n.guid: k for k, n in old.items()},
        old,
        dict(previous.schemas),
        {name: "" for name in previous.media},
    )


def compare(previous: Snapshot | None, current: Mapping[str, PublishedNote], schemas: Mapping[str, Any]) -> Changes:
    """Notes added, changed and retired since `previous` (everything is new without one)."""
    base = release_baseline(previous)
    now = [dataclasses.replace(n.as_rendered(0), deck=n.deck) for n in current.values()]
    found = changes(base, now, field_names={}, notetypes=schemas)
    return release_changes(found, previous, current)


def release_changes(changeset: Changeset, previous: Snapshot | None, current: Mapping[str, PublishedNote]) -> Changes:
    """A release's lists as a function of its changeset: each entry the note as it ships now
    (a retired one as it last shipped)."""
    from deckbuild.apkg.notetypes import NOTETYPES

    old = previous.notes if previous else {}
    added = tuple(current[c.card_id] for c in changeset.of_kind("added"))
    changed = tuple(current[c.card_id] for c in changeset.of_kind("changed", "retired"))
    retired = tuple(old[k] for k in changeset.leaving)
    renamed = tuple((c.previous, current[c.card_id]) for c in changeset.of_kind("renamed"))
    in_place = tuple(
        k
        for k in changeset.notetypes
        if previous is not None and k in NOTETYPES and NOTETYPES[k].renames_in_place(previous.schemas[k])
    )
    moves = tuple((current[k], before, now) for k, before, now in changeset.moved)
    return Changes(
        added, changed, retired, changeset.notetypes, renamed, renamed_in_place=in_place, moved=moves, changeset=changeset
    )


def bump(version: str, part: str) -> str:
    major, minor, patch = (int(x) for x in version.split("."))
    if part == "major":
        return f"{major + 1}.0.0"
    if part == "minor":
        return f"{major}.{minor + 1}.0"
    return f"{major}.{minor}.{patch + 1}"


def next_version(
    previous: str,
    changes: Changes,
    part: str | None,
    allow_schema_change: bool,
    where: Location,
    *,
    subject: str = "",
    command: str = "deckbuild release",
) -> tuple[str, str]:
    """The part to bump (`part`, else what the changes need) and the version after `previous`.

    Refuses a release with nothing in it (E502) and a note type schema change not shipped as
    a major release with --allow-schema-change (E501: Anki would make a `Name+` note type).
    `subject` names what is released when it is not the deck (a variant), `command` how to
    release it.
    """
    label, since = (f"{subject}: ", f"its release {previous}") if subject else ("", f"release {previous}")
    part = part or changes.needed_bump()
    if part is None:
        raise LocatedError(
            where, "E502", f"{label}nothing changed since {since}; edit cards first, or force a release with --bump"
        )
    if changes.schema_changed and (part != "major" or not allow_schema_change):
        raise LocatedError(
            where,
            "E501",
            f"{label}note type(s) {', '.join(changes.schema_changed)} changed fields or templates since {since}; Anki "
            "would create a duplicate note type. Revert the change, or ship it as a major release that says so: "
            f"{command} --bump major --allow-schema-change",
        )
    return part, bump(previous, part)


def changelog_entry(version: str, when: int, changes: Changes, deck_name: str = "") -> str:
    """The CHANGELOG.md section for one release (exact text is tested); deck_name names moved notes' decks."""
    date = dt.datetime.fromtimestamp(when, dt.UTC).date().isoformat()
    lines = [f"## {version} — {date}", "", changes.summary() + "."]
    in_place = [k for k in changes.schema_changed if k in changes.renamed_in_place]
    breaking = [k for k in changes.schema_changed if k not in changes.renamed_in_place]
    if in_place:
        lines += [
            "",
            f"**Note types:** the note type(s) {', '.join(in_place)} renamed fields; each keeps its id, so Anki renames "
            "the field in place on import and your notes, cards and review history stay as they are.",
        ]
    if breaking:
        lines += [
            "",
            f"**Breaking:** the note type(s) {', '.join(breaking)} changed their fields or templates. "
            "Anki will import them as a new note type; existing notes are not updated in place.",
        ]
    if changes.breaking:
        lines += ["", "**Breaking:** " + " ".join(changes.breaking)]
    if changes.notices:
        lines += ["", "**Note:** " + " ".join(changes.notices)]
    for title, notes in (("Added", changes.added), ("Changed", changes.changed)):
        if notes:
            lines += ["", f"### {title}", ""]
            lines += [f"- `{n.card_id}` — {n.front}" for n in notes]
    if changes.renamed:
        lines += ["", "### Renamed", ""]
        lines += [f"- `{old}` → `{n.card_id}` — {n.front} (same note: review history kept)" for old, n in changes.renamed]
    if changes.moved:
        lines += ["", "### Moved", ""]
        for n, _old, new in changes.moved:
            lines.append(f"- Moved to {_full_deck(deck_name, new)}: `{n.card_id}` — {n.front}")
        lines += [
            "",
            "A plain import does not move existing cards: Anki leaves them in their old deck (new cards go to the new "
            "one). `deckbuild push` moves them, keeping their review history; or move them in Anki's browser "
            "(Change Deck).",
        ]
    if changes.retired:
        lines += ["", "### Retired", ""]
        lines += [f"- `{n.card_id}` — {n.front}" for n in changes.retired]
    if changes.retired:
        lines += [
            "",
            f"Retired cards keep their review history but are no longer maintained. In Anki, search "
            f"`tag:{RETIRED_TAG}` to find them, then suspend or delete them.",
        ]
    return "\n".join(lines) + "\n"


def _full_deck(deck_name: str, subdeck: str) -> str:
    if not deck_name:
        return subdeck or "the deck itself"
    return f"{deck_name}::{subdeck}" if subdeck else deck_name


UNRELEASED = "## Unreleased\n"
"""The heading of the changelog's section for what no release carries yet."""


def changelog_with(root: Path, entry: str, deck_name: str, name: str = CHANGELOG) -> bytes:
    """The changelog's bytes (CHANGELOG.md, or a variant's) with entry added as the newest release.

    An `## Unreleased` section right after the intro (notes about deckbuild itself, written
    by hand) stays on top: the release goes below it.
    """
    path = root / name
    if path.exists() and not path.is_file():
        raise LocatedError(
            Location(name),
            "E166",
            f"cannot replace {name}: a folder (or something else that is not a file) has its name; move or remove it "
            "and run again (no file was changed)",
        )
    header = f"# Changelog — {deck_name}\n\nEvery release of the deck, newest first.\n"
    body = path.read_text("utf-8") if path.exists() else header
    if body.startswith("# "):
        title, _, rest = body.partition("\n\n")
        intro, _, older = rest.partition("\n\n")
        older = older.strip("\n")
        unreleased = ""
        if older.startswith(UNRELEASED):
            cut = older.find("\n## ")
            unreleased, older = (older, "") if cut < 0 else (older[:cut], older[cut + 1 :])
            unreleased = unreleased.strip("\n") + "\n\n"
        text = f"{title}\n\n{intro.strip()}\n\n{unreleased}{entry}" + (f"\n{older}\n" if older else "")
    else:
        text = header + "\n" + entry + "\n" + body
    return text.encode()


def description_changes(record_extra: Mapping[str, Any]) -> str:
    """The deck description's line about the latest release."""
    release = record_extra.get("release")
    if not release:
        return ""
    return f"Latest release {release['version']}: {release['summary']}. See CHANGELOG.md for the cards."
