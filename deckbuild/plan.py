"""The plan: the one place that knows the order of the stages, and everything a command would write.

`plan()` reads the project and runs every stage in order -- config and note types, cards,
the record and the last release, every problem, figures, rendered notes, the release
decision, stamps, the package -- and returns a frozen `Plan` holding all of it and the exact bytes of every file to write.  It
writes no project file (only `.deckbuild-cache/`: parses, Markdown, drawn diagrams);
`apply.apply(plan)` does, all together.  So a command that fails anywhere before apply
has changed nothing.  Every command is this plan plus a small consumer (commands.py,
preview/site.py).

This module is imported by every build, even one that is up to date: heavy modules
(YAML, Markdown, genanki, matplotlib) are imported inside the stages that need them.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from deckbuild.deck_checks import Checked, checked
from deckbuild.errors import LocatedError, Location, Problem, ProjectInvalid, has_errors, problem_order
from deckbuild.layout import CACHE_DIR, CONFIG_FILE, RECORD_FILE
from deckbuild.model import Progress
from deckbuild.packaging import deck_package, last_collection, package_media
from deckbuild.plan_result import Goal, Output, Plan, Summary, file_digest, package_path

if TYPE_CHECKING:
    from deckbuild.apkg.notetypes import NoteType
    from deckbuild.apkg.row_copy import Collection
    from deckbuild.incremental.cache import BuildCache
    from deckbuild.incremental.memo import Memo
    from deckbuild.model import Card, DeckConfig, MediaFile, RenderedNote, StampedNote
    from deckbuild.release.decision import ReleaseDecision
    from deckbuild.release.identity import Known
    from deckbuild.release.record import Clock, Record
    from deckbuild.release.variants import VariantDecision
    from deckbuild.release.versioning import Snapshot


def plan(
    root: Path,
    goal: Goal = "build",
    *,
    force: bool = True,
    strict: bool = False,
    allow_identity_change: bool = False,
    jobs: int | None = None,
    bump: str | None = None,
    allow_schema_change: bool = False,
    seeds: Sequence[Path] = (),
    progress: Progress | None = None,
    variant: str | None = None,
    package: bool = True,
    memo: Memo | None = None,
) -> Plan:
    """Run the stages for `goal` and return what it would write; raise a DeckbuildError if it must not.

    check: stops after the problems (all of them, in the plan; the cache is only read).
    build: `force=False` first asks whether the last build is still current (then the plan
    says `up_to_date` and holds nothing else).  release: the release decision too.
    import: the seed importer's new cards/*.yaml (`seeds`).  `jobs`: worker processes for
    parsing card files and drawing diagrams (None = every core, 1 = this process).  `variant`:
    build or release only that variant of deck.yaml (not the full deck's package).
    `package=False` (serve, which shows the pages before it writes the package): a build plan
    without the package's bytes, never to be applied.  `memo`: cache entries kept in memory
    by a process that plans again and again (serve; incremental/memo.py).
    """
    if goal == "import":
        return _import_plan(root, seeds)
    from deckbuild.incremental import uptodate

    # Stage 0: is the last build still current?  The fingerprint is taken before anything is
    # read, so an edit made during this build makes the next build a real one.
    inputs = uptodate.inputs_fingerprint(root) if goal == "build" else ""
    if goal == "build" and not force and variant is None:
        current = uptodate.up_to_date(root, strict=strict, inputs=inputs)
        if current is not None:
            path, counts = current
            return Plan(root, goal, inputs, up_to_date=True, summary=Summary(path, **counts))
    if goal in ("build", "release"):  # a first build's diagram workers import matplotlib while the cards are parsed
        from deckbuild.figures import start_early

        start_early(root)

    from deckbuild.incremental.cache import open_cache

    # The cache is written only inside a deck project (never a stray folder in the wrong place),
    # and kept only once the plan's outputs are written (apply); a failed plan drops its entries.
    cache = open_cache(root, writable=goal != "check" and (root / CONFIG_FILE).is_file(), memo=memo)
    try:
        with _no_cycle_collection():
            planned = _plan(
                root,
                goal,
                inputs,
                cache,
                strict=strict,
                allow_identity_change=allow_identity_change,
                jobs=jobs,
                bump=bump,
                allow_schema_change=allow_schema_change,
                progress=progress,
                variant=variant,
                package=package,
                memo=memo,
            )
    except BaseException:
        cache.drop()
        raise
    if goal == "check" or planned.up_to_date:
        cache.drop()
        return planned
    return dataclasses.replace(planned, cache=cache)


@contextlib.contextmanager
def _no_cycle_collection() -> Iterator[None]:
    """Python's cycle collector paused while the stages run.

    A build holds one object per card, note and location, and allocates them all at once:
    the collector then walks everything alive again and again while finding almost nothing
    (the model is acyclic), a tenth or more of a rebuild's time.  Memory freed by reference
    counting is unaffected; the collector runs again once the stages are done.
    """
    import gc

    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _plan(
    root: Path,
    goal: Goal,
    inputs: str,
    cache: BuildCache,
    *,
    strict: bool,
    allow_identity_change: bool,
    jobs: int | None,
    bump: str | None,
    allow_schema_change: bool,
    progress: Progress | None,
    variant: str | None = None,
    package: bool = True,
    memo: Memo | None = None,
) -> Plan:
    from deckbuild.apkg.notetypes import NOTETYPES
    from deckbuild.config import load_config
    from deckbuild.figures import diagram_problems
    from deckbuild.media import check_images
    from deckbuild.notetypes.load import load_notetypes
    from deckbuild.release import record as record_stage
    from deckbuild.sources import load_cards

    # Stage 1: the deck's configuration and the note types it declares (notetypes/<key>/).
    config, problems = load_config(root)
    declared, notetype_problems = load_notetypes(root)
    problems += notetype_problems
    notetypes = {**NOTETYPES, **declared}
    # Stage 2: every card file, each card checked on its own, LaTeX and cloze rules included
    # (unchanged files come from the cache; the others are parsed by `jobs` worker processes,
    # which also render their Markdown for stage 7: incremental/parallel.py).
    card_list, card_problems = load_cards(root, cache, jobs=jobs, prerender=goal != "check", progress=progress)
    problems += card_problems
    cards = tuple(card_list)
    # Stage 3: what earlier builds left: the build record and the last release, whose
    # retired notes keep shipping (unreadable ones are reported once the sources are known
    # to be valid, before any write).
    from deckbuild.release import identity, versioning

    record: Record | None = None
    previous: Snapshot | None = None
    past: identity.Known | None = None
    unreadable: LocatedError | None = None
    try:
        record = record_stage.load_record(root, memo)
        previous = versioning.latest_snapshot(root, record.extra)
        past = identity.known_from(record, previous, memo)
    except LocatedError as exc:
        unreadable = exc
    # Stage 4: checks across the deck: ids, references, text rules, diagram specs, images
    # (named as they shipped, checked by content), and identity against what shipped.  The
    # checks of the cards in memory (deck_checks.py) run in a forked child beside the rest of
    # the plan when the deck is large and nothing has failed yet (checked); their problems
    # then decide, once in, exactly as they would have before the later stages.
    invalid = {p.subject for p in card_problems if p.subject}
    ok = goal == "build" and variant is None and package and config is not None and unreadable is None
    to_check = Checked(root, config, cards, declared, invalid, record, previous, past, allow_identity_change, goal == "release")
    # Unchanged card files' facts (their cards' own problems) come from the cache.
    own, found, beside = checked(to_check, cache, jobs if ok and not strict and not has_errors(problems) else 0)
    # The last package's collection, for stage 11 to copy unchanged rows from: its bytes are
    # checked by a thread meanwhile (no process is forked from here on).
    last = last_collection(root / CACHE_DIR) if goal != "check" and variant is None and package else None
    shipped = (record.extra.get("media") or {}) if record is not None else {}
    images, image_problems = check_images(root, cards, shipped)
    read = image_problems + diagram_problems(root, cards, cache)  # the project's diagrams/, read without running it

    def all_problems(deck: list[Problem], notetype: list[Problem], then: list[Problem]) -> list[Problem]:
        return sorted([*problems, *deck, *own, *notetype, *read, *then], key=problem_order)

    rest = functools.partial(
        _after_checks, root, goal, inputs, cache, config, cards, notetypes, declared, record, previous, past, images,
        last, progress=progress, jobs=jobs, memo=memo, variant=variant, package=package, bump=bump,
        allow_schema_change=allow_schema_change,
    )  # fmt: skip
    if found is not None:
        everything = all_problems(*found)
        if goal == "check":
            return Plan(root, goal, config=config, cards=cards, notetypes=notetypes, problems=tuple(everything))
        _refuse_invalid(config, everything, strict, unreadable)
        return rest(everything)
    assert beside is not None
    try:
        planned = rest([])
    except Exception:
        _refuse_invalid(config, all_problems(*beside.result()), strict, None)  # the checks' errors come first
        raise
    except BaseException:
        beside.cancel()
        raise
    everything = all_problems(*beside.result())
    _refuse_invalid(config, everything, strict, None)
    return dataclasses.replace(planned, problems=tuple(everything))


def _refuse_invalid(config: DeckConfig | None, problems: list[Problem], strict: bool, unreadable: LocatedError | None) -> None:
    """Raise what stops a build or release once its problems are known (ProjectInvalid), or
    the record or release that could not be read."""
    if config is None or has_errors(problems) or (strict and problems):
        raise ProjectInvalid(problems)
    if unreadable is not None:
        raise unreadable


def _after_checks(
    root: Path,
    goal: Goal,
    inputs: str,
    cache: BuildCache,
    config: DeckConfig | None,
    cards: tuple[Card, ...],
    notetypes: Mapping[str, NoteType],
    declared: Mapping[str, NoteType],
    record: Record | None,
    previous: Snapshot | None,
    past: Known | None,
    images: Mapping[str, MediaFile],
    last: Collection | None,
    problems: list[Problem],
    *,
    progress: Progress | None,
    jobs: int | None,
    memo: Memo | None,
    variant: str | None,
    package: bool,
    bump: str | None,
    allow_schema_change: bool,
) -> Plan:
    """Stages 5 to 12 of a valid project: everything the plan writes."""
    from deckbuild import variants as variant_stage
    from deckbuild.release import record as record_stage
    from deckbuild.variant_selection import Source

    assert config is not None and record is not None
    _refuse_outside(root, package_path(root, config))
    if variant is not None:
        from deckbuild.release.variants import require_variant

        require_variant(config, variant)

    # Stage 5: note types the last release shipped must still ship, unchanged unless released so.
    from deckbuild.release.kept_notetypes import refuse_missing_notetypes, refuse_schema_change

    refuse_missing_notetypes(previous, notetypes)
    if goal == "build":
        refuse_schema_change(previous, notetypes)
    # Stage 6: figures -- hand-made images and generated diagrams (drawn only if not cached).
    from deckbuild.figures import figures as figure_stage

    figures = figure_stage(root, cards, images, progress, jobs, draws_again=memo is not None)  # memo: serve
    # Stage 7: render every card to a note (fields, tags, GUID, study order); a note whose
    # inputs did not change since the last build comes from the cache, and the others use
    # the Markdown renderings of the last build and of the parse workers.
    rendered, description = _render(config, cards, figures, declared, cache)
    clock = record_stage.Clock()
    before, last_release = record, previous
    # Stage 8 (release): the next version, what changed, the snapshot; the record remembers it.
    decision = None
    if goal == "release" and variant is None:
        from deckbuild.release.decision import decide

        media = [m.name for m in package_media(root, figures, rendered, declared)]
        decision = decide(
            root,
            config,
            rendered,
            previous,
            media,
            clock,
            notetypes,
            bump=bump,
            allow_schema_change=allow_schema_change,
            past=past,
            cards=cards,
        )
        config = dataclasses.replace(config, version=decision.version)
        record = dataclasses.replace(record, extra={**record.extra, "release": dict(decision.info)})
        previous = decision.snapshot
    # Stage 9: notes retired in the last release keep shipping as they last shipped.
    retired = _retired(root, cards, rendered, previous, dict(config.sources))
    source = Source(root, config, cards, notetypes)
    variant_decision = None
    if goal == "release" and variant is not None:
        # Stage 9b (release --variant): the variant's next version, changes and files.
        from deckbuild.release.variants import decide_variant, require_variant

        media = [m.name for m in package_media(root, figures, rendered, declared)]
        variant_decision = decide_variant(
            source,
            require_variant(config, variant),
            rendered,
            retired,
            previous,
            record.extra,
            media,
            clock,
            bump=bump,
            allow_schema_change=allow_schema_change,
        )
        config = variant_stage.with_variant(config, variant_decision.variant)
        source = dataclasses.replace(source, config=config)
        record = dataclasses.replace(record, extra=variant_decision.extra)
    # Stage 10: stamp each note with its mod from the record; the clock is read only for changes.
    stamped, notetype_mods, new_record = _stamp(config, rendered + retired, figures, notetypes, record, clock)
    # Stage 11: the package, in memory, with every file its notes and note types name.
    out = package_path(root, config)
    media_files = package_media(root, figures, rendered + retired, declared)
    counts: dict[str, int] = {}
    package_bytes = None
    if variant is None and package:
        package_bytes = deck_package(
            out,
            config,
            stamped,
            notetype_mods,
            notetypes,
            media_files,
            new_record,
            cache,
            counts,
            root / CACHE_DIR,
            copyable=len(rendered),
            last=last,
            description=description,
        )
    # Stage 11b: the variants' packages, each a subset of these stamped notes under its own deck
    # name (a full-deck release leaves them to the next build).
    keys = [variant] if variant is not None else [v.key for v in config.variants] if goal == "build" and package else []
    chosen = {variant_decision.variant.key: variant_decision.chosen} if variant_decision is not None else {}
    variant_packages = variant_stage.build_packages(source, stamped, notetype_mods, media_files, new_record.extra, keys, chosen)
    # Stage 12: every file to write, in the order that keeps a consistent pair after a kill
    # at any moment: the release's files, then the record, then the package (which derives
    # from the record; a record newer than the package is repaired by the next build).
    outputs = [
        Output(path, data, path.relative_to(root).as_posix(), file_digest(path))
        for path, data in _release_files(decision, variant_decision)
    ]
    record_base = file_digest(root / RECORD_FILE)
    # Without the package (serve), the record's bytes are made with it (with_package): a large
    # deck's record is a line per note, and serve shows a save's pages first.
    deferred = goal == "build" and variant is None and not package
    if not deferred:
        outputs.append(Output(root / RECORD_FILE, new_record.to_bytes(), config.output, record_base))
    if package_bytes is not None:
        outputs.append(Output(out, package_bytes, config.output))
    outputs += [Output(v.path, v.data, config.output) for v in variant_packages]
    media_count = len(media_files)
    if variant is None:
        summary = Summary(out, len(stamped), counts.get("cards", 0), media_count)  # cards: the package's card rows
    else:  # the one variant is what this build or release wrote
        one = variant_packages[0]
        summary = Summary(one.path, one.notes, one.cards, one.media)
    return Plan(
        root,
        goal,
        inputs,
        config=config,
        cards=cards,
        notetypes=notetypes,
        problems=tuple(problems),
        figures=figures,
        notes=tuple(stamped),
        notetype_mods=notetype_mods,
        record=new_record,
        before=before,
        last_release=last_release,
        release=decision,
        outputs=tuple(outputs),
        summary=summary,
        variants=tuple((v.path, v.notes) for v in variant_packages),
        only_variant=variant,
        variant_release=variant_decision,
        record_base=record_base if deferred else None,
    )


def _release_files(decision: ReleaseDecision | None, variant_decision: VariantDecision | None) -> tuple[tuple[Path, bytes], ...]:
    """The files a release adds: the deck's, or with --variant that variant's (release/variants.py)."""
    if decision is not None:
        return decision.files
    return variant_decision.files if variant_decision is not None else ()


def _import_plan(root: Path, seeds: Sequence[Path]) -> Plan:
    """Stage by stage: every seed parsed, matched to the cards, and the card files to rewrite."""
    from deckbuild.importer.update import plan_import

    report, files = plan_import(root, list(seeds))
    outputs = tuple(Output(path, data, path.relative_to(root).as_posix(), file_digest(path)) for path, data in files)
    return Plan(root, "import", imported=report, outputs=outputs)


def _refuse_outside(root: Path, out: Path) -> None:
    """deck.yaml keeps `output` inside the project; a symlinked folder must not lead out of it."""
    if not out.parent.resolve().is_relative_to(root.resolve()):
        raise LocatedError(
            Location(CONFIG_FILE), "E112", f"'output' folder {out.parent.name}/ is a link to a folder outside the project"
        )


def _render(
    config: DeckConfig,
    cards: Sequence[Card],
    figures: Mapping[str, tuple[MediaFile, bool]],
    declared: Mapping[str, NoteType],
    cache: BuildCache,
) -> tuple[list[RenderedNote], str]:
    """The notes, and the deck description's Markdown as HTML: both through the cache's
    renderings, so that a rebuild renders (and loads Python-Markdown for) only what changed."""
    from deckbuild import notes as notes_stage
    from deckbuild.incremental.note_reuse import NoteReuse
    from deckbuild.render import RenderMemo

    memo = RenderMemo(cache.markdown(), cache.markdown_lookup)
    reuse = NoteReuse(cache, config.namespace, figures, config.sources)
    rendered = notes_stage.render_notes(config.namespace, cards, figures, memo, reuse, declared, dict(config.sources))
    description = memo.markdown_html(config.description)
    cache.store_markdown(memo.fresh, memo.used, len(cards))
    cache.save_notes()
    return rendered, description


def _retired(
    root: Path,
    cards: Sequence[Card],
    rendered: Sequence[RenderedNote],
    snapshot: Snapshot | None,
    titles: Mapping[str, str],
) -> list[RenderedNote]:
    if snapshot is None:
        return []
    from deckbuild.release import retirement

    gone = retirement.shipped(root, cards, rendered, snapshot, titles)
    return [n.as_rendered(len(rendered) + i) for i, n in enumerate(gone)]


def _stamp(
    config: DeckConfig,
    notes: Sequence[RenderedNote],
    figures: Mapping[str, tuple[MediaFile, bool]],
    notetypes: Mapping[str, NoteType],
    record: Record,
    clock: Clock,
) -> tuple[list[StampedNote], dict[str, int], Record]:
    """Stamped notes, note type mods and the new record (what changed since the old one is the changeset's)."""
    from deckbuild import variants
    from deckbuild.release import identity
    from deckbuild.release.record import stamp_notes

    hashes = {key: nt.content_hash() for key, nt in notetypes.items()}
    stamped, notetype_mods, new_record = stamp_notes(notes, hashes, record, clock)
    new_record = identity.remember(new_record, config, [m for m, _ill in figures.values()])
    new_record = variants.remember(new_record, config)  # the variants' deck names
    return stamped, notetype_mods, new_record
