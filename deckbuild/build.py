"""The orchestrator: the only module that knows the order of the stages.

First gather and check everything (config, cards, references, media, diagrams); only
when all of it is valid start writing files (record, then package), each atomically.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from deckbuild.config import load_config
from deckbuild.errors import LocatedError, Location, Problem, ProjectInvalid, has_errors
from deckbuild.media import CACHE_DIR, check_images
from deckbuild.model import Card, MediaFile, Project, RenderedNote
from deckbuild.release.identity import check_identity
from deckbuild.release.record import Clock, Record
from deckbuild.sources import load_cards
from deckbuild.validate import validate_cards

if TYPE_CHECKING:
    from deckbuild.incremental.cache import BuildCache
    from deckbuild.release.versioning import Changes, Snapshot

Progress = Callable[[int, int, str], None]


@dataclass(frozen=True)
class ReleaseResult:
    version: str
    changes: Changes
    build: BuildResult
    warnings: tuple[Problem, ...] = ()  # e.g. E173: a new id that looks like a renamed released card


@dataclass(frozen=True)
class BuildResult:
    path: Path
    notes: int
    cards: int
    media: int
    changed_notes: int
    written: bool


def load_project(
    root: Path,
    cache: BuildCache | None = None,
    *,
    allow_identity_change: bool = False,
    releasing: bool = False,
    jobs: int | None = 1,
    prerender: bool = False,
) -> tuple[Project | None, list[Problem]]:
    """Stage 1-3: read deck.yaml and cards/, run every check.  Nothing is written but the cache."""
    # Stage 1: the deck's configuration.
    config, problems = load_config(root)
    # Stage 2: every card file, each card checked on its own, LaTeX and cloze rules included
    # (unchanged files come from the cache; the others are parsed by `jobs` workers, see
    # incremental/parallel.py).
    cards, card_problems = load_cards(root, cache, jobs=jobs, prerender=prerender)
    problems += card_problems
    # Stage 3: checks across the deck (ids, references, text rules) and per-kind rules.
    problems += validate_cards(cards)
    problems += _check_diagrams(cards)
    _images, image_problems = check_images(root, cards)
    problems += image_problems
    if config is not None:  # namespace, deck name, previous ids and kinds against what shipped
        problems += check_identity(root, config, cards, allow_change=allow_identity_change, releasing=releasing)
    if config is None or has_errors(problems):
        return None, problems
    return Project(root=root, config=config, cards=tuple(cards)), problems


def check(root: Path, *, allow_identity_change: bool = False) -> list[Problem]:
    """Every problem in the project, sorted by place (the cache is read, never written)."""
    from deckbuild.incremental.cache import open_cache

    with open_cache(root, writable=False) as cache:
        _project, problems = load_project(root, cache, allow_identity_change=allow_identity_change, jobs=None)
    return sorted(problems, key=lambda p: (p.location, p.code))


def output_path(project: Project) -> Path:
    config = project.config
    return project.root / config.output / f"{config.slug}-{config.version}.apkg"


def build(
    root: Path,
    *,
    progress: Progress | None = None,
    strict: bool = False,
    allow_identity_change: bool = False,
    jobs: int | None = None,
) -> BuildResult:
    """Validate everything, then write the record and `dist/<slug>-<version>.apkg`.

    `jobs`: worker processes for parsing card files and drawing diagrams (None = every
    core, 1 = this process).
    """
    from deckbuild.config import CONFIG_FILE
    from deckbuild.fsutil import project_lock
    from deckbuild.incremental import uptodate
    from deckbuild.incremental.cache import open_cache
    from deckbuild.release.record import RECORD_FILE

    # Fingerprint the inputs before reading them: an edit made during the build then
    # makes the next build a real one, never a wrong "up to date".
    inputs = uptodate.inputs_fingerprint(root)
    # The cache is written only inside a deck project (never a stray folder in the wrong place).
    with open_cache(root, writable=(root / CONFIG_FILE).is_file()) as cache:
        project, problems = load_project(root, cache, allow_identity_change=allow_identity_change, jobs=jobs, prerender=True)
        cache.commit()  # keep the good files' parses even if the project is invalid
        if project is None or (strict and problems):
            raise ProjectInvalid(sorted(problems, key=lambda p: (p.location, p.code)))
        with project_lock(root):
            uptodate.forget_state(root)
            state = _gather(project, progress, cache=cache, jobs=jobs)
            cache.commit()
            _refuse_schema_change(state)
            result = _write(project, state, state.record)
            cache.store_card_ords(state.card_ords)
            cache.commit()
            summary = {"notes": result.notes, "cards": result.cards, "media": result.media}
            uptodate.save_state(root, inputs, result.path, RECORD_FILE, summary, warnings=len(problems))
    return result


def release(
    root: Path,
    *,
    bump: str | None = None,
    allow_schema_change: bool = False,
    progress: Progress | None = None,
    allow_identity_change: bool = False,
) -> ReleaseResult:
    """Record a release: pick the version, snapshot the notes, write the changelog, build."""
    from deckbuild.apkg.notetypes import NOTETYPES
    from deckbuild.fsutil import project_lock
    from deckbuild.incremental import uptodate
    from deckbuild.release import identity, versioning

    project, problems = load_project(root, allow_identity_change=allow_identity_change, releasing=True)
    if project is None:
        raise ProjectInvalid(sorted(problems, key=lambda p: (p.location, p.code)))
    with project_lock(root):
        uptodate.forget_state(root)
        state = _gather(project, progress)
        previous = state.snapshot
        current = {n.card_id: versioning.published(n) for n in state.rendered}
        schemas = {key: nt.schema() for key, nt in NOTETYPES.items()}
        changes = identity.release_changes(root, project.config, versioning.compare(previous, current, schemas))
        needed = changes.needed_bump()
        where = Location("deck.yaml")
        if previous is None:
            version = versioning.bump(project.config.version, bump) if bump else project.config.version
            identity.refuse_minor_namespace_change(changes, bump or "")
        else:
            if needed is None and bump is None:
                raise LocatedError(
                    where,
                    "E502",
                    f"nothing changed since release {previous.version}; edit cards first, or force a release with --bump",
                )
            part = bump or needed
            assert part is not None
            if changes.schema_changed and (part != "major" or not allow_schema_change):
                raise LocatedError(
                    where,
                    "E501",
                    f"note type(s) {', '.join(changes.schema_changed)} changed fields or templates since release "
                    f"{previous.version}; Anki would create a duplicate note type. Revert the change, or ship it as a "
                    "major release that says so: deckbuild release --bump major --allow-schema-change",
                )
            identity.refuse_minor_namespace_change(changes, part)
            version = versioning.bump(previous.version, part)
        # The one read of the clock for this release; every changed note gets this time.
        clock = Clock()
        now = clock.now()
        notice = NOTETYPES["qa"].fields.index("Notice")
        retired = {n.card_id: versioning.retire(n, version, notice) for n in changes.retired}
        if previous is not None:
            guids = {n.guid for n in current.values()}  # a retired note renamed back to life ships once
            retired.update({k: n for k, n in previous.notes.items() if n.retired and k not in current and n.guid not in guids})
        notes = {**current, **retired}
        snapshot = versioning.Snapshot(version, now, schemas, tuple(sorted({m.name for m, _i in state.figures.values()})), notes)
        release_info = {"version": version, "time": now, "summary": changes.summary()}
        # Everything the release writes is computed first -- the snapshot, deck.yaml with the
        # new version, the changelog, then the record and the package -- and written together
        # by _write, so a failure anywhere leaves every file of the project as it was.
        releases = [
            (versioning.snapshot_path(root, version), snapshot.to_bytes()),
            (root / "deck.yaml", _versioned_deck_yaml(root, version)),
            (
                root / versioning.CHANGELOG,
                versioning.changelog_with(root, versioning.changelog_entry(version, now, changes), project.config.name),
            ),
        ]
        project = dataclasses.replace(project, config=dataclasses.replace(project.config, version=version))
        record = Record(state.record.notes, state.record.notetypes, {**state.record.extra, "release": release_info})
        state = _gather(project, progress, record=record, clock=clock, release_snapshot=snapshot)
        result = _write(project, state, record, also=releases)
        return ReleaseResult(version, changes, result, tuple(sorted(problems, key=lambda p: (p.location, p.code))))


@dataclass(frozen=True)
class _State:
    """Everything gathered before writing: figures, rendered notes, record, last release."""

    figures: dict[str, tuple[MediaFile, bool]]
    rendered: list[RenderedNote]
    retired: list[RenderedNote]
    record: Record
    snapshot: Snapshot | None
    clock: Clock
    card_ords: dict[str, str] = dataclasses.field(default_factory=dict)  # package.py's memo, kept in the cache


def _valid_project(root: Path, strict: bool, allow_identity_change: bool = False) -> Project:
    project, problems = load_project(root, allow_identity_change=allow_identity_change, releasing=True)
    if project is None or (strict and problems):
        raise ProjectInvalid(sorted(problems, key=lambda p: (p.location, p.code)))
    return project


def _gather(
    project: Project,
    progress: Progress | None,
    *,
    record: Record | None = None,
    clock: Clock | None = None,
    cache: BuildCache | None = None,
    release_snapshot: Snapshot | None = None,
    jobs: int | None = None,
) -> _State:
    from deckbuild import notes as notes_stage
    from deckbuild.incremental.cache import NoteReuse
    from deckbuild.release import record as record_stage
    from deckbuild.release import versioning
    from deckbuild.render import RenderMemo

    record = record or record_stage.load_record(project.root)
    # Stage 4: media -- hand-made images (named by what shipped, see media.py) and generated
    # diagrams (rendered only if not cached).
    figures = _figures(project, progress, record.extra.get("media") or {}, jobs)
    # Stage 5: render every card to a note (fields, tags, GUID, study order), with the
    # Markdown renderings of the last build (a pure function of the text and the code).
    memo = RenderMemo(cache.markdown() if cache is not None else None)
    reuse = NoteReuse(cache, project.config.namespace, figures) if cache is not None else None
    rendered = notes_stage.render_notes(project.config.namespace, project.cards, figures, memo, reuse)
    if cache is not None:
        cache.store_markdown(memo.fresh, memo.used)
        cache.save_notes()
    # Stage 6: what the last release shipped; its retired notes keep shipping.
    snapshot = release_snapshot or versioning.latest_snapshot(project.root, record.extra)
    current = {n.card_id for n in rendered}
    retired = []
    if snapshot is not None:
        guids = {n.guid for n in rendered}  # a retired note a card took back (previous_ids) ships once
        gone = [n for k, n in sorted(snapshot.notes.items()) if n.retired and k not in current and n.guid not in guids]
        retired = [n.as_rendered(len(rendered) + i) for i, n in enumerate(gone)]
    ords = cache.card_ords() if cache is not None else {}
    return _State(figures, rendered, retired, record, snapshot, clock or record_stage.Clock(), ords)


def _refuse_schema_change(state: _State) -> None:
    from deckbuild.apkg.notetypes import NOTETYPES

    if state.snapshot is None:
        return
    for key, notetype in NOTETYPES.items():
        released = state.snapshot.schemas.get(key)
        if released is not None and released != notetype.schema() and not notetype.renames_in_place(released):
            raise LocatedError(
                Location("deckbuild/apkg/notetypes.py"),
                "E501",
                f"note type '{key}' changed its fields or templates since release {state.snapshot.version}; Anki would "
                "create a duplicate note type and stop updating learners' notes. Revert it, or ship it as a major "
                "release that says so: deckbuild release --bump major --allow-schema-change",
            )


def _write(project: Project, state: _State, record: Record, also: Sequence[tuple[Path, bytes]] = ()) -> BuildResult:
    """Package the gathered notes and write, all or nothing: also's files, the record, the package."""
    from deckbuild.apkg.notetypes import NOTETYPES
    from deckbuild.apkg.package import write_package
    from deckbuild.fsutil import StagedWrites, remove_stale_temps
    from deckbuild.release import identity, versioning
    from deckbuild.release import record as record_stage
    from deckbuild.render import markdown_html, plain

    config = project.config
    # Stage 7: stamp each note with its mod from the record; the clock is read only for changes.
    notes = state.rendered + state.retired
    hashes = {key: nt.content_hash() for key, nt in NOTETYPES.items()}
    stamped, notetype_mods, new_record = record_stage.stamp_notes(notes, hashes, record, state.clock)
    new_record = identity.remember(new_record, config, [m for m, _ill in state.figures.values()])
    changed = sum(1 for s in stamped if record.notes.get(s.note.card_id) != new_record.notes[s.note.card_id])
    # Stage 8: package everything, then write: the record first (the package derives from it).
    media = sorted({m.name: m for m, _ill in state.figures.values()}.values(), key=lambda m: m.name)
    latest = versioning.description_changes(new_record.extra)
    description = markdown_html(config.description) + f"<p>Version {plain(config.version)}</p>"
    if latest:
        description += f"<p>{plain(latest)}</p>"
    counts: dict[str, int] = {}
    data = write_package(
        output_path(project),
        deck_name=config.name,
        deck_description=description,
        namespace=config.namespace,
        notetypes=NOTETYPES,
        notetype_mods=notetype_mods,
        notes=stamped,
        media=media,
        card_ords=state.card_ords,
        counts=counts,
    )
    root = project.root
    out = output_path(project)
    _refuse_outside(root, out)
    try:
        for target in (root / record_stage.RECORD_FILE, out, *(path for path, _data in also)):
            remove_stale_temps(target)
        # Every file reaches a temp file beside it before any is renamed into place, so a
        # failure to write one changes none; the renames follow in this order, and a kill
        # between them leaves a record newer than the package, which the next build's
        # up-to-date check sees (the package's hash differs from the one recorded) and
        # repairs by building the same package again.
        with StagedWrites() as writes:
            for path, content in also:
                writes.stage(path, content)
            writes.stage(root / record_stage.RECORD_FILE, new_record.to_bytes())
            written = writes.stage(out, data)
            writes.commit()
    except OSError as exc:
        where = Path(exc.filename).name if exc.filename else out.name
        raise LocatedError(
            Location(config.output), "E161", f"cannot write {where}: {exc.strerror or exc}; check the folder is writable"
        ) from None
    return BuildResult(out, len(stamped), counts["cards"], len(media), changed, written)


def _refuse_outside(root: Path, out: Path) -> None:
    """deck.yaml keeps `output` inside the project; a symlinked folder must not lead out of it."""
    if not out.parent.resolve().is_relative_to(root.resolve()):
        raise LocatedError(
            Location("deck.yaml"), "E112", f"'output' folder {out.parent.name}/ is a link to a folder outside the project"
        )


def _versioned_deck_yaml(root: Path, version: str) -> bytes:
    """deck.yaml's bytes with its version line set to version, keeping comments and layout."""
    path = root / "deck.yaml"
    text = path.read_text("utf-8")
    new, count = re.subn(r"(?m)^(version:[ \t]*)[\"']?[^\s#\"']+[\"']?", lambda m: m.group(1) + version, text, count=1)
    if count != 1:
        new = text.rstrip("\n") + f"\nversion: {version}\n"
    return new.encode()


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


def _figures(
    project: Project, progress: Progress | None, shipped: Mapping[str, Any], jobs: int | None = None
) -> dict[str, tuple[MediaFile, bool]]:
    images, _problems = check_images(project.root, project.cards, shipped)
    figures = {card_id: (media, False) for card_id, media in images.items()}
    diagram_cards = [c for c in project.cards if c.figure is not None and c.figure.diagram]
    if diagram_cards:
        from deckbuild import diagrams

        specs = [(c.figure.diagram, c.figure.params_dict()) for c in diagram_cards if c.figure and c.figure.diagram]

        def diagram_progress(done: int, total: int, name: str) -> None:
            if progress is not None:
                progress(done, total, f"rendering diagram {name}")

        try:
            paths = diagrams.materialize(specs, project.root / CACHE_DIR / "diagrams", diagram_progress, jobs=jobs)
        except diagrams.DiagramFailures as exc:  # every card whose diagram failed, in source order
            failed = [(c, exc.failures.get(diagrams.cache_key(*spec))) for c, spec in zip(diagram_cards, specs, strict=True)]
            raise ProjectInvalid(
                Problem(c.where("diagram"), "E131", f"card '{c.id}': {why} (check the diagram's params)")
                for c, why in failed
                if why is not None
            ) from None
        for card, (name, params) in zip(diagram_cards, specs, strict=True):
            path = paths[diagrams.cache_key(name, params)]
            figures[card.id] = (MediaFile(path.name, path), diagrams.REGISTRY[name].illustrative)
    return figures
