"""The orchestrator: the only module that knows the order of the stages.

First gather and check everything (config, cards, references, media, diagrams); only
when all of it is valid start writing files (record, then package), each atomically.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from deckbuild.config import load_config
from deckbuild.errors import LocatedError, Location, Problem, ProjectInvalid, has_errors
from deckbuild.media import CACHE_DIR, check_images
from deckbuild.model import Card, MediaFile, Project
from deckbuild.sources import load_cards
from deckbuild.validate import validate_cards

Progress = Callable[[int, int, str], None]


@dataclass(frozen=True)
class BuildResult:
    path: Path
    notes: int
    cards: int
    media: int
    changed_notes: int
    written: bool


def load_project(root: Path) -> tuple[Project | None, list[Problem]]:
    """Stage 1-3: read deck.yaml and cards/, run every check.  Nothing is written."""
    # Stage 1: the deck's configuration.
    config, problems = load_config(root)
    # Stage 2: every card file, each card checked on its own.
    cards, card_problems = load_cards(root)
    problems += card_problems
    # Stage 3: checks across the deck (ids, references, text rules) and per-kind rules.
    problems += validate_cards(cards)
    problems += _check_cloze(cards)
    problems += _check_diagrams(cards)
    _images, image_problems = check_images(root, cards)
    problems += image_problems
    if config is None or has_errors(problems):
        return None, problems
    return Project(root=root, config=config, cards=tuple(cards)), problems


def check(root: Path) -> list[Problem]:
    """Every problem in the project, sorted by place."""
    _project, problems = load_project(root)
    return sorted(problems, key=lambda p: (p.location, p.code))


def output_path(project: Project) -> Path:
    config = project.config
    return project.root / config.output / f"{config.slug}-{config.version}.apkg"


def build(root: Path, *, progress: Progress | None = None, strict: bool = False) -> BuildResult:
    """Validate everything, then write the record and `dist/<slug>-<version>.apkg`."""
    from deckbuild.fsutil import project_lock

    project, problems = load_project(root)
    if project is None or (strict and problems):
        raise ProjectInvalid(sorted(problems, key=lambda p: (p.location, p.code)))
    with project_lock(root):
        return _build_locked(project, progress)


def _build_locked(project: Project, progress: Progress | None) -> BuildResult:
    from deckbuild import notes as notes_stage
    from deckbuild import record as record_stage
    from deckbuild.fsutil import atomic_write_bytes, remove_stale_temps
    from deckbuild.notetypes import NOTETYPES
    from deckbuild.package import write_package
    from deckbuild.render import markdown_html

    root = project.root
    config = project.config
    # Stage 4: media -- hand-made images and generated diagrams (rendered only if not cached).
    figures = _figures(project, progress)
    # Stage 5: render every card to a note (fields, tags, GUID, study order).
    rendered = notes_stage.render_notes(config.namespace, project.cards, figures)
    # Stage 6: stamp each note with its mod from the record; the clock is read only for changes.
    record = record_stage.load_record(root)
    hashes = {key: nt.content_hash() for key, nt in NOTETYPES.items()}
    stamped, notetype_mods, new_record = record_stage.stamp_notes(rendered, hashes, record, record_stage.Clock())
    changed = sum(1 for s in stamped if record.notes.get(s.note.card_id) != new_record.notes[s.note.card_id])
    # Stage 7: package everything, then write: the record first (the package derives from it).
    media = sorted({m.name: m for m, _ill in figures.values()}.values(), key=lambda m: m.name)
    data = write_package(
        output_path(project),
        deck_name=config.name,
        deck_description=markdown_html(config.description) + f"<p>Version {config.version}</p>",
        namespace=config.namespace,
        notetypes=NOTETYPES,
        notetype_mods=notetype_mods,
        notes=stamped,
        media=media,
    )
    out = output_path(project)
    _refuse_outside(root, out)
    try:
        for target in (root / record_stage.RECORD_FILE, out):
            remove_stale_temps(target)
        record_stage.save_record(root, new_record)
        written = not (out.exists() and out.read_bytes() == data)
        if written:
            atomic_write_bytes(out, data)
    except OSError as exc:
        where = Path(exc.filename).name if exc.filename else out.name
        raise LocatedError(
            Location(config.output), "E161", f"cannot write {where}: {exc.strerror or exc}; check the folder is writable"
        ) from None
    cards = sum(_card_count(card) for card in project.cards)
    return BuildResult(out, len(stamped), cards, len(media), changed, written)


def _refuse_outside(root: Path, out: Path) -> None:
    """deck.yaml keeps `output` inside the project; a symlinked folder must not lead out of it."""
    if not out.parent.resolve().is_relative_to(root.resolve()):
        raise LocatedError(
            Location("deck.yaml"), "E112", f"'output' folder {out.parent.name}/ is a link to a folder outside the project"
        )


def _card_count(card: Card) -> int:
    if card.kind == "qa":
        return 1
    from deckbuild import cloze

    text = card.formula or card.fact
    numbers = getattr(cloze, "cloze_numbers", None)
    if numbers is not None:
        return len(numbers(text))
    return len(set(re.findall(r"\{\{c(\d+)::", text)))


def _check_cloze(cards: list[Card]) -> list[Problem]:
    if not any(card.kind != "qa" for card in cards):
        return []
    from deckbuild import cloze

    checker = getattr(cloze, "card_problems", None)
    return list(checker(cards)) if checker else []


def _check_diagrams(cards: list[Card]) -> list[Problem]:
    specs = [card for card in cards if card.figure is not None and card.figure.diagram]
    if not specs:
        return []
    from deckbuild import diagrams

    problems = []
    for card in specs:
        assert card.figure is not None and card.figure.diagram is not None
        for message in diagrams.validate(card.figure.diagram, card.figure.params_dict()):
            problems.append(Problem(card.where("diagram"), "E130", f"card '{card.id}': diagram: {message}"))
    return problems


def _figures(project: Project, progress: Progress | None) -> dict[str, tuple[MediaFile, bool]]:
    images, _problems = check_images(project.root, project.cards)
    figures = {card_id: (media, False) for card_id, media in images.items()}
    diagram_cards = [c for c in project.cards if c.figure is not None and c.figure.diagram]
    if diagram_cards:
        from deckbuild import diagrams

        specs = [(c.figure.diagram, c.figure.params_dict()) for c in diagram_cards if c.figure and c.figure.diagram]
        paths = diagrams.materialize(specs, project.root / CACHE_DIR / "diagrams", progress)
        for card, (name, params) in zip(diagram_cards, specs, strict=True):
            path = paths[diagrams.cache_key(name, params)]
            figures[card.id] = (MediaFile(path.name, path), diagrams.REGISTRY[name].illustrative)
    return figures
