"""The adopt command's one function: read SOURCE, map it, check it with the pipeline, write DIR."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from deckbuild.adopt.model import SourceDeck
from deckbuild.errors import LocatedError, Location, Problem, ProjectInvalid


@dataclass(frozen=True)
class AdoptResult:
    deck_name: str
    notes: int
    notetypes: int
    media: int
    html_fields: int  # fields kept as HTML (their Markdown would not give the same HTML back)
    warnings: tuple[Problem, ...]


def read_source(source: Path) -> SourceDeck:
    """An .apkg file or a CrowdAnki folder (E250 if it is neither)."""
    from deckbuild.adopt.crowdanki import DECK_FILE, read_crowdanki
    from deckbuild.adopt.package import read_package

    where = Location(str(source))
    if source.is_dir():
        if not (source / DECK_FILE).exists():
            raise LocatedError(
                where,
                "E250",
                f"expected an .apkg file or a CrowdAnki export folder (with {DECK_FILE}); found a folder without it",
            )
        return read_crowdanki(source)
    if not source.exists():
        raise LocatedError(where, "E250", "no such file or folder; expected an .apkg file or a CrowdAnki export folder")
    if not source.is_file():
        raise LocatedError(
            where, "E250", "expected an .apkg file or a CrowdAnki export folder; found neither (a device or pipe?)"
        )
    return read_package(source)


def adopt(source: Path, target: Path, ids_from: Path | None = None) -> AdoptResult:
    """Make a deckbuild project in `target` from the deck in `source`; nothing written on failure.

    `ids_from`: an .apkg or collection that has the deck, whose note-type ids learners'
    collections share (ids_from.py); without it a CrowdAnki source gets a warning (E296).
    """
    from deckbuild.adopt.ids_from import read_ids, take_ids
    from deckbuild.adopt.lock import finish
    from deckbuild.adopt.write import check_target, write_project

    check_target(target)  # before the (slow) read: a taken DIR is refused at once
    deck = read_source(source)
    if not deck.notes:
        raise LocatedError(Location(str(source)), "E259", "the deck holds no notes; nothing to adopt. Nothing was written")
    found: list[Problem] = []
    if ids_from is not None:
        deck, found = take_ids(deck, read_ids(ids_from))
        if any(p.severity == "error" for p in found):
            raise ProjectInvalid(found)
    elif source.is_dir():
        found.append(
            Problem(
                Location(str(source)),
                "E296",
                "a CrowdAnki folder does not say which note-type ids learners' collections have, so the adopted note "
                "types get new ones: learners who got this deck another way (CrowdAnki, AnkiWeb, a shared .apkg) will "
                "see its notes as conflicting, never updated. To take them over, adopt again with --ids-from an .apkg "
                "exported from a collection that has the deck",
                "warning",
            )
        )
    adopted = finish(deck, target)
    write_project(target, adopted.files)
    return AdoptResult(
        deck_name=adopted.deck_name,
        notes=len(adopted.cards),
        notetypes=len(adopted.notetype_keys),
        media=sum(1 for name in adopted.files if name.startswith("media/")),
        html_fields=sum(len(card.html_fields) for card in adopted.cards),
        warnings=(*found, *adopted.warnings),
    )
