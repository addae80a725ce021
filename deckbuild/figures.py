"""Every card's figure as a file for the package: a hand-made image from media/ or a drawn diagram.

Diagrams are drawn only when not cached (in .deckbuild-cache/diagrams, named by what they
depend on), in worker processes when there are several; a generator that fails is reported
as E131 for every card that uses it, in source order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from deckbuild.errors import Problem, ProjectInvalid
from deckbuild.model import Card, MediaFile, Progress


def figures(
    root: Path,
    cards: Sequence[Card],
    images: Mapping[str, MediaFile],
    progress: Progress | None = None,
    jobs: int | None = None,
) -> dict[str, tuple[MediaFile, bool]]:
    """`images` (media.check_images' result) plus every diagram, drawn or from the cache."""
    found = {card_id: (media, False) for card_id, media in images.items()}
    diagram_cards = [c for c in cards if c.figure is not None and c.figure.diagram]
    if not diagram_cards:
        return found  # matplotlib is never imported
    from deckbuild import diagrams
    from deckbuild.layout import CACHE_DIR

    specs = [(c.figure.diagram, c.figure.params_dict()) for c in diagram_cards if c.figure and c.figure.diagram]

    def diagram_progress(done: int, total: int, name: str) -> None:
        if progress is not None:
            progress(done, total, f"rendering diagram {name}")

    try:
        paths = diagrams.materialize(specs, root / CACHE_DIR / "diagrams", diagram_progress, jobs=jobs)
    except diagrams.DiagramFailures as exc:  # every card whose diagram failed, in source order
        failed = [(c, exc.failures.get(diagrams.cache_key(*spec))) for c, spec in zip(diagram_cards, specs, strict=True)]
        raise ProjectInvalid(
            Problem(c.where("diagram"), "E131", f"card '{c.id}': {why} (check the diagram's params)")
            for c, why in failed
            if why is not None
        ) from None
    for card, (name, params) in zip(diagram_cards, specs, strict=True):
        path = paths[diagrams.cache_key(name, params)]
        found[card.id] = (MediaFile(path.name, path), diagrams.REGISTRY[name].illustrative)
    return found
