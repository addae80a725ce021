"""The package stage of a plan: the deck's .apkg (and its variants') from the stamped notes.

plan.py calls it as its last stage; serve, which shows a save's pages from a plan made
without the package (`package=False`), packages that same plan afterwards (`with_package`)
instead of planning again.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from deckbuild.errors import DeckbuildError
from deckbuild.layout import CACHE_DIR, CONFIG_FILE, RECORD_FILE
from deckbuild.plan_result import Output, Plan, Summary, package_path

if TYPE_CHECKING:
    from deckbuild.apkg.notetypes import NoteType
    from deckbuild.apkg.row_copy import Collection
    from deckbuild.incremental.cache import BuildCache
    from deckbuild.model import DeckConfig, MediaFile, RenderedNote, StampedNote
    from deckbuild.release.record import Record


class Abandoned(DeckbuildError):
    """Raised by a package's checkpoint to abandon it (serve: a newer save made it outdated)."""


def with_package(planned: Plan, checkpoint: Callable[[], None] | None = None) -> Plan:
    """A build plan made with `package=False`, with the packages `package=True` would have
    added (the deck's and its variants'), computed from what the plan holds: serve shows a
    save's pages from the plan, then writes the package of that same plan.  `checkpoint`
    (apkg/package.py's) raises Abandoned to abandon it."""
    from deckbuild import variants as variant_stage
    from deckbuild.incremental.cache import open_cache
    from deckbuild.variant_selection import Source

    config, record = planned.config, planned.record
    assert planned.goal == "build" and planned.only_variant is None and config is not None and record is not None
    root = planned.root
    declared = {k: nt for k, nt in planned.notetypes.items() if nt.declared}
    stamped = list(planned.notes)
    media_files = package_media(root, planned.figures, [s.note for s in stamped], declared)
    out = package_path(root, config)
    counts: dict[str, int] = {}
    cache = open_cache(root, writable=(root / CONFIG_FILE).is_file())  # the card ordinals of the last package
    try:
        data = deck_package(
            out,
            config,
            stamped,
            planned.notetype_mods,
            planned.notetypes,
            media_files,
            record,
            cache,
            counts,
            root / CACHE_DIR,
            checkpoint,
            len(planned.cards),
        )
        if checkpoint is not None:
            checkpoint()
        source = Source(root, config, planned.cards, planned.notetypes)
        keys = [v.key for v in config.variants]
        packages = variant_stage.build_packages(
            source, stamped, planned.notetype_mods, media_files, record.extra, keys, {}, checkpoint
        )
    except BaseException:
        cache.drop()
        raise
    assert planned.record_base is not None  # planned with package=False: the record is written here
    outputs = [
        *planned.outputs,
        Output(root / RECORD_FILE, record.to_bytes(), config.output, planned.record_base),
        Output(out, data, config.output),
        *(Output(v.path, v.data, config.output) for v in packages),
    ]
    return dataclasses.replace(
        planned,
        outputs=tuple(outputs),
        summary=Summary(out, len(stamped), counts.get("cards", 0), len(media_files)),
        record_base=None,
        variants=tuple((v.path, v.notes) for v in packages),
        cache=cache,
    )


def last_collection(work_dir: Path) -> Collection | None:
    """The last package's collection in `work_dir` for deck_package to copy rows from, its bytes
    checked from now on (incremental/last_package.py: load)."""
    from deckbuild.incremental import last_package

    return last_package.load(work_dir, check_now=True)


def deck_package(
    out: Path,
    config: DeckConfig,
    stamped: Sequence[StampedNote],
    notetype_mods: Mapping[str, int],
    notetypes: Mapping[str, NoteType],
    media: Sequence[MediaFile],
    record: Record,
    cache: BuildCache,
    counts: dict[str, int],
    work_dir: Path | None = None,
    checkpoint: Callable[[], None] | None = None,
    copyable: int = 0,
    last: Collection | None = None,
    description: str | None = None,
) -> bytes:
    """The package's bytes; `counts` receives its numbers of notes and cards; `work_dir`:
    where the collection may be built (apkg/package.py), and kept for the next build, whose
    package copies the rows of the first `copyable` notes (the rendered ones, not the retired
    ones after them) where they did not change (apkg/row_copy.py).  `last`: the last
    package's collection in `work_dir`, if read already (last_collection).  `description`: the
    deck description's Markdown as HTML, if the caller rendered it already (a plan, through
    the build cache's renderings)."""
    from deckbuild.apkg.package import write_package
    from deckbuild.release import versioning
    from deckbuild.render import markdown_html, plain

    latest = versioning.description_changes(record.extra)
    if description is None:
        description = markdown_html(config.description)
    description += f"<p>Version {plain(config.version)}</p>"
    if latest:
        description += f"<p>{plain(latest)}</p>"
    if config.description_html is not None:  # as written: an import replaces the learner's description
        description = config.description_html
    card_ords = cache.card_ords()
    keeper = None
    if work_dir is None:
        last = None
    else:  # the last package's rows, copied where unchanged
        from deckbuild.incremental import last_package

        last, keeper = last or last_package.load(work_dir), last_package.Keeper(work_dir)
        cache.hold(keeper.keep, keeper.drop)
    data = write_package(
        out,
        deck_name=config.name,
        deck_description=description,
        namespace=config.namespace,
        notetypes=notetypes,
        notetype_mods=notetype_mods,
        notes=stamped,
        media=media,
        card_ords=card_ords,
        counts=counts,
        work_dir=work_dir,
        checkpoint=checkpoint,
        last=last,
        keep=keeper.take if keeper is not None else None,
        copyable=copyable,
    )
    cache.store_card_ords(card_ords)  # which cards each note gets, for the next build
    return data


def package_media(
    root: Path,
    figures: Mapping[str, tuple[MediaFile, bool]],
    notes: Sequence[RenderedNote],
    declared: Mapping[str, NoteType],
) -> list[MediaFile]:
    """Every file the package carries, by name: figures, and what declared notes and templates name."""
    files = [m for m, _ill in figures.values()]
    if declared:
        from deckbuild.notetypes.media import notes_media

        files += notes_media(root, [n.fields for n in notes if n.notetype in declared], declared)
    return sorted({m.name: m for m in files}.values(), key=lambda m: m.name)
