"""The adopted project, planned once by the pipeline itself, and the record that keeps each note's mod.

Anki updates a note on import only if the incoming mod is newer.  So the first build of an
adopted project must stamp every note (and note type) with the mod it has in the source
collection.  adopt plans a build of the project in a private temp folder with the real
pipeline (plan.py; nothing of the build is written), takes the build record that build
would write (content hashes, identity, media: the pipeline's own hashing), and puts the
source's mods into it; the first build in DIR then finds every hash unchanged and keeps
those mods.  The same plan checks the round trip: a field written as Markdown whose
built HTML is not exactly the source's is written as HTML instead, and an HTML field the
build changes (sanitizes) is counted.
"""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from deckbuild.adopt.mapping import Adopted, map_deck
from deckbuild.adopt.model import SourceDeck
from deckbuild.errors import DeckbuildError, LocatedError, Location, Problem

if TYPE_CHECKING:
    from deckbuild.release.record import Record

# CrowdAnki keeps no mods: an old mod lets an import skip the unchanged note in a
# collection that has it, and any edit made later stamps the build time, which is newer.
# Anki's stock note types have mod 0: kept as 0.
NO_MOD = 1


def _markdown_ok(text: str) -> bool:
    """Whether the build's checks take `text` as a Markdown field (cloze and math rules)."""
    from deckbuild.cloze.checks import math_problems, validate_fact
    from deckbuild.notetypes.fields import CLOZE_SYNTAX

    checks = validate_fact(text) if CLOZE_SYNTAX.search(text) else (math_problems(text) if "\\" in text else [])
    return not checks


def _render(text: str) -> str:
    """The build's own rendering of a Markdown field of a declared note type."""
    from deckbuild.notetypes.fields import render_field

    return render_field(text, False)


def finish(deck: SourceDeck, target: Path) -> Adopted:
    """The project's files with deckbuild.lock, checked by a real build (E262 if it does not build)."""
    from deckbuild.layout import RECORD_FILE
    from deckbuild.release.record import Record, Stamp

    adopted = map_deck(deck, _render, accept=_markdown_ok)
    with tempfile.TemporaryDirectory(prefix="deckbuild-adopt-build-") as tmp:
        built, record = _build(adopted, Path(tmp) / "first", target)
        # A Markdown field whose HTML is not the source's stays HTML (the round trip must be exact).
        force = {}
        for card in adopted.cards:
            fields = built.get(card.note.guid)
            if fields is None:
                continue
            names = _notetype_fields(deck, card.note.notetype)
            wrong = {
                name
                for name, value, out in zip(names, card.values, fields, strict=False)
                if value and name not in card.html_fields and value != out
            }
            if wrong:
                force[card.card_id] = frozenset(wrong)
        root = Path(tmp) / "first"
        if force:
            adopted = map_deck(deck, _render, force, _markdown_ok)
            root = Path(tmp) / "second"
            built, record = _build(adopted, root, target)
        mods = {card.card_id: card.note.mod for card in adopted.cards}
        notes = {key: dataclasses.replace(stamp, mod=_mod(mods.get(key))) for key, stamp in record.notes.items()}
        # The built-in note types no adopted note uses get a fixed old mod too, so the same
        # source always gives the same project (the build's clock would stamp them "now").
        type_mods = {adopted.notetype_keys[nt.key]: nt.mod for nt in deck.notetypes if nt.key in adopted.notetype_keys}
        notetypes = {key: Stamp(stamp.hash, _mod(type_mods.get(key))) for key, stamp in record.notetypes.items()}
        changed = 0
        for card in adopted.cards:
            fields = built.get(card.note.guid, ())
            changed += sum(1 for value, out in zip(card.values, fields, strict=False) if value and value != out)
    files = {**adopted.files, RECORD_FILE: Record(notes, notetypes, record.extra).to_bytes()}
    warnings = list(adopted.warnings)
    if changed:
        warnings.append(
            Problem(
                Location(deck.source),
                "E264",
                f"{changed} HTML field(s) differ in the build from the source (sanitized); the first import leaves them as "
                "they are in the collection, an edit of such a card ships the built form",
                "warning",
            )
        )
    return dataclasses.replace(adopted, files=files, warnings=warnings)


def _mod(source_mod: int | None) -> int:
    return NO_MOD if source_mod is None else source_mod


def _notetype_fields(deck: SourceDeck, key: str) -> tuple[str, ...]:
    return next(nt.fields for nt in deck.notetypes if nt.key == key)


def _build(adopted: Adopted, root: Path, target: Path) -> tuple[dict[str, tuple[str, ...]], Record]:
    """Plan a build of the project in `root` (nothing of it is written): each note's fields by GUID, and the record."""
    from deckbuild.plan import plan

    for relative, data in adopted.files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    try:
        planned = plan(root, "build", jobs=1)
    except DeckbuildError as exc:
        problems = [f"{p.location}: {p.code} {p.message}" for p in exc.problems()] or [str(exc)]
        raise LocatedError(
            Location(str(target)),
            "E262",
            "the adopted project does not build, so nothing was written: " + "; ".join(problems[:20]),
        ) from None
    assert planned.record is not None
    return {stamped.note.guid: stamped.note.fields for stamped in planned.notes}, planned.record
