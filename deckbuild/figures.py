"""Every card's figure as a file for the package: a hand-made image from media/ or a drawn diagram.

Diagrams are drawn only when not cached (in .deckbuild-cache/diagrams, named by what they
depend on), in worker processes when there are several; a generator that fails is reported
for every card that uses it, in source order (E283 raised, E284 past its time limit,
E131 an image the media check refuses).  The generators are the project's own, in its
diagrams/ folder (deckbuild.diagrams.registry).  A first build of a deck with
diagrams starts the drawing workers' imports before the cards are even parsed
(start_early), so that matplotlib is loaded by the time the diagrams are known.
"""

from __future__ import annotations

import os
import re
import stat
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from deckbuild.errors import Problem, ProjectInvalid
from deckbuild.model import Card, MediaFile, Progress

if TYPE_CHECKING:
    from deckbuild.diagrams.registry import ScanStore

# A card's `diagram:` key, at the start of a line (block style, the format's own): what
# start_early looks for.  Missing a card written otherwise only costs that head start.
_DIAGRAM_KEY = re.compile(rb"^[ \t-]*diagram[ \t]*:", re.MULTILINE)


def start_early(root: Path) -> None:
    """Start the diagram workers' imports now if this build will most likely draw: no build
    has succeeded here yet (no build state, no drawn diagram) and a card names a diagram.

    Called before the cards are parsed: the workers' imports then overlap with the parse.
    A guess, and only a head start: a wrong "yes" costs a background import, a wrong "no"
    what builds cost without it.  A rebuild (whose diagrams are most likely drawn already)
    never reads the card files here.
    """
    from deckbuild.incremental.uptodate import STATE_FILE
    from deckbuild.layout import CACHE_DIR
    from deckbuild.sources import card_files
    from deckbuild.yamlload import MAX_FILE_BYTES

    cache = root / CACHE_DIR
    if (cache / STATE_FILE).exists() or _any_drawn(cache / "diagrams"):
        return
    for path in card_files(root):
        try:  # only regular files of a size the build reads (a pipe would never end)
            st = path.stat()
            if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_FILE_BYTES:
                continue
            found = _DIAGRAM_KEY.search(path.read_bytes()) is not None
        except OSError:
            continue  # the build reports it
        if found:
            from deckbuild.diagrams.pool import start_workers

            start_workers()
            return


def _any_drawn(folder: Path) -> bool:
    try:
        with os.scandir(folder) as entries:
            return any(entry.name.endswith(".txt") for entry in entries)
    except OSError:
        return False


def diagram_problems(root: Path, cards: Sequence[Card], store: ScanStore | None = None) -> list[Problem]:
    """E280-E282 (and E130): a card's diagram spec against the project's generators, read
    statically from diagrams/ (nothing is imported or run); E285: a generator that cannot be read.
    `store`: the build cache, which keeps each generator file's reading for the next build."""
    from deckbuild.diagrams.registry import project_registry
    from deckbuild.diagrams.validation import validate

    registry = project_registry(root, store)
    problems = list(registry.problems)
    for card in cards:
        if card.figure is not None and card.figure.diagram:
            for code, message in validate(registry.diagrams, card.figure.diagram, card.figure.params_dict()):
                problems.append(Problem(card.where("diagram"), code, f"card '{card.id}': diagram: {message}"))
    return problems


def figures(
    root: Path,
    cards: Sequence[Card],
    images: Mapping[str, MediaFile],
    progress: Progress | None = None,
    jobs: int | None = None,
    *,
    draws_again: bool = False,
) -> dict[str, tuple[MediaFile, bool]]:
    """`images` (media.check_images' result) plus every diagram, drawn or from the cache.

    Unless this process `draws_again` (serve, planning after every save), the drawing
    workers' fork server ends here, drawn or not: what follows (the package) needs no more
    pictures, and is the peak of a large build's memory.
    """
    try:
        return _figures(root, cards, images, progress, jobs)
    finally:
        if not draws_again and "deckbuild.diagrams.pool" in sys.modules:  # never started if never imported
            from deckbuild.diagrams.pool import stop_workers

            stop_workers()


def _figures(
    root: Path,
    cards: Sequence[Card],
    images: Mapping[str, MediaFile],
    progress: Progress | None,
    jobs: int | None,
) -> dict[str, tuple[MediaFile, bool]]:
    found = {card_id: (media, False) for card_id, media in images.items()}
    diagram_cards = [c for c in cards if c.figure is not None and c.figure.diagram]
    if not diagram_cards:
        return found  # matplotlib is never imported
    from deckbuild.diagrams.cache import DiagramFailures, materialize
    from deckbuild.diagrams.keys import cache_key
    from deckbuild.diagrams.registry import project_registry
    from deckbuild.layout import CACHE_DIR

    registry = project_registry(root).diagrams
    specs = [(c.figure.diagram, c.figure.params_dict()) for c in diagram_cards if c.figure and c.figure.diagram]

    def diagram_progress(done: int, total: int, name: str) -> None:
        if progress is not None:
            progress(done, total, f"rendering diagram {name}")

    try:
        paths = materialize(registry, specs, root / CACHE_DIR / "diagrams", diagram_progress, jobs=jobs)
    except DiagramFailures as exc:  # every card whose diagram failed, in source order
        failed = [(c, exc.failures.get(cache_key(registry, *spec))) for c, spec in zip(diagram_cards, specs, strict=True)]
        raise ProjectInvalid(
            Problem(c.where("diagram"), why[0], f"card '{c.id}': {why[1]}") for c, why in failed if why is not None
        ) from None
    for card, (name, params) in zip(diagram_cards, specs, strict=True):
        path = paths[cache_key(registry, name, params)]
        found[card.id] = (MediaFile(path.name, path), registry[name].illustrative)
    return found
