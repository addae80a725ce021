"""The adopt command's one function: read SOURCE, map it, check it with the pipeline, write DIR."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from deckbuild.adopt.model import SourceDeck
from deckbuild.errors import LocatedError, Location, Problem


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


def adopt(source: Path, target: Path) -> AdoptResult:
    """Make a deckbuild project in `target` from the deck in `source`; nothing written on failure."""
    from deckbuild.adopt.lock import finish
    from deckbuild.adopt.write import check_target, write_project

    check_target(target)  # before the (slow) read: a taken DIR is refused at once
    deck = read_source(source)
    if not deck.notes:
        raise LocatedError(Location(str(source)), "E259", "the deck holds no notes; nothing to adopt. Nothing was written")
    adopted = finish(deck, target)
    write_project(target, adopted.files)
    return AdoptResult(
        deck_name=adopted.deck_name,
        notes=len(adopted.cards),
        notetypes=len(adopted.notetype_keys),
        media=sum(1 for name in adopted.files if name.startswith("media/")),
        html_fields=sum(len(card.html_fields) for card in adopted.cards),
        warnings=tuple(adopted.warnings),
    )
