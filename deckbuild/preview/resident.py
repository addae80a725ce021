"""The resident edit loop of `deckbuild serve`: what the last save left, kept for the next one.

Between saves it keeps the plan the site shows, an Anki collection holding that plan's notes
(in a temp folder), every card's rendered sides and the site's manifest.  A save re-plans the
deck without the package, takes the changeset between the notes the site shows and the new
ones (redraw.py says what that changeset redraws), replaces exactly those notes in the
collection through the backend, renders only their cards, and writes only the files whose
bytes change.  A change of a note type or of deck.yaml redraws everything from the package.
The package is written after the pages (`write_package`), so the download link always
serves a complete package.  The site stays byte-identical to what `deckbuild preview` writes.
"""

from __future__ import annotations

import gc
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from deckbuild.apply import apply, settle
from deckbuild.incremental.memo import Memo
from deckbuild.layout import CACHE_DIR, RECORD_FILE
from deckbuild.packaging import Abandoned, package_media, with_package
from deckbuild.plan import plan
from deckbuild.preview.pages import MANIFEST, SiteWriter, save_manifest
from deckbuild.preview.redraw import Redraw, media_digests, redraw, shown_changes
from deckbuild.preview.site import (
    INDEX_CHUNK,
    MARKER,
    CardView,
    IndexRows,
    Sides,
    card_page,
    card_views,
    index_file_name,
    index_page,
    open_render_collection,
    prepare_site,
    render_sides,
    write_site,
)
from deckbuild.release.record import remember_written
from deckbuild.writer import atomic_write_bytes, remove_file

if TYPE_CHECKING:
    from anki.cards import CardId
    from anki.collection import Collection
    from anki.notes import NoteId

    from deckbuild.model import MediaFile, Progress, RenderedNote
    from deckbuild.plan_result import Plan


@dataclass(frozen=True)
class Drawn:
    """What one save did to the site: its cards, the files it wrote, whether it redrew everything."""

    cards: int
    written: tuple[str, ...]
    full: bool
    saved: tuple[str, ...] = ()  # the page keys of the cards the save changed (none for a full redraw)


class Resident:
    """The site of one project kept up to date save after save; `close` when serving stops."""

    def __init__(self, root: Path, out: Path, progress: Progress | None = None) -> None:
        self.root = root
        self.out = out
        self.progress = progress  # for a full redraw: the diagrams drawn, the cards rendered, the pages written
        self.manifest = root / CACHE_DIR / MANIFEST
        self.tmp: tempfile.TemporaryDirectory[str] | None = None
        self.col: Collection | None = None
        self.shown: Plan | None = None  # the plan the site shows
        self.by_card: dict[str, RenderedNote] = {}  # ... its notes by card id
        self.media: dict[str, MediaFile] = {}  # the site's media by name
        self.digests: dict[str, str] = {}  # ... and their sha256
        self.sides: Sides = {}
        self.nids: dict[str, NoteId] = {}  # GUID -> note id in the collection
        self.mids: dict[str, int] = {}  # note type key -> its id in the collection
        self.dids: dict[str, int] = {}  # subdeck ("" = the deck) -> its id in the collection
        self.views: list[CardView] = []
        self.keys: list[str] = []  # ... their page keys
        self.note_views: dict[str, list[CardView]] = {}  # ... by card id
        self.entries = IndexRows()  # the index entries of `views`
        self.files: dict[str, list[object]] | None = None  # the site's files, as the writer left them
        self.pending: Plan | None = None  # the plan whose package write_package writes
        self.manifest_owed = False  # the manifest does not yet list the files' latest hashes
        self.memo = Memo()  # the cache entries the last plan used, kept in memory for the next

    def close(self) -> None:
        self._save_manifest()
        if self.col is not None:
            self.col.close()
            self.col = None
        if self.tmp is not None:
            self.tmp.cleanup()
            self.tmp = None

    def redraw_site(self) -> Drawn:
        """Bring the site up to date with the sources; raise a DeckbuildError (site unchanged) if they do not build."""
        # The cycle collector paused, as plan.py does: a large deck's objects are all alive and
        # acyclic, and the collector walked every one of them again while the views were made.
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            drawn = self._redraw_site()
        finally:
            if was_enabled:
                gc.enable()
        # What the save kept (the deck's cards, notes, views, sides) lives until a later save
        # replaces it and is freed by reference counting then: frozen, the collector never walks
        # it again.  Unfrozen, a full collection (1.5 s at 100,000 cards, finding nothing) ran in
        # the package's thread or a page request's, and the next save waited.  (A failed save's
        # objects are not frozen: serve collects them, cycles included.)
        gc.freeze()
        return drawn

    def _redraw_site(self) -> Drawn:
        settle(self.root, writing=True)  # a write killed half-way is rolled back before the plan reads the project
        if self.shown is None or self.col is None:
            return self._full(plan(self.root, "build", memo=self.memo, progress=self.progress))
        planned = plan(self.root, "build", package=False, memo=self.memo, progress=self.progress)
        planned.keep_cache()  # the sources build: what it parsed is kept, and the cache is free for the next plan
        media = _media(self.root, planned)
        digests = media_digests(media)
        changed = shown_changes(self.by_card, self.shown, planned, self.digests, digests)
        todo = redraw(changed, config_changed=planned.config != self.shown.config)
        now = {s.note.card_id: s.note for s in planned.notes}
        try:
            if todo.full or not self._replace_notes(now, todo):
                return self._full(plan(self.root, "build", memo=self.memo, progress=self.progress))
            self.pending = planned  # its package: write_package
            drawn = self._write_changes(planned, todo, media)
        except BaseException:
            self.shown = None  # the collection may be half-updated: the next save redraws everything
            raise
        self.digests, self.by_card = digests, now
        return drawn

    def write_package(self, checkpoint: Callable[[], None] | None = None) -> Path:
        """Write the package (and the record) of the sources the site shows, from the plan it shows.

        `checkpoint` is called while the package is made (with_package), last before anything
        is written; if it raises Abandoned, nothing is written and the package stays owed (`pending`)."""
        planned = self.pending if self.pending is not None else plan(self.root, "build", memo=self.memo)
        self.pending = None
        if planned.package not in {o.path for o in planned.outputs}:  # planned without the package
            try:
                planned = with_package(planned, checkpoint)
            except Abandoned:
                self.pending = planned
                raise
        apply(planned)
        record = next((o.data for o in planned.outputs if o.path == self.root / RECORD_FILE), None)
        if record is not None and planned.record is not None:  # the next save reads it back from memory
            remember_written(self.memo, record, planned.record)
        self._save_manifest()
        assert planned.package is not None
        return planned.package

    def _save_manifest(self) -> None:
        if self.manifest_owed and self.files is not None:
            save_manifest(self.manifest, self.out, self.files)
            self.manifest_owed = False

    def _full(self, planned: Plan) -> Drawn:
        """Everything again: the package imported into a new collection, every card rendered."""
        planned.keep_cache()  # the plan is kept (shown, pending): its cache must not stay held
        assert planned.config is not None and planned.package is not None
        package = next(o.data for o in planned.outputs if o.path == planned.package)
        tmp = tempfile.TemporaryDirectory(prefix="deckbuild-preview-")
        try:
            work = Path(tmp.name)
            atomic_write_bytes(work / "render.apkg", package)
            col = open_render_collection(work / "render.apkg", work)
        except BaseException:
            tmp.cleanup()
            raise
        self.close()
        self.tmp, self.col, self.shown = tmp, col, None
        self.sides = render_sides(col, col.find_cards(""), self.progress)
        self._map_collection(planned)
        self.media = _media(self.root, planned)
        self.digests = media_digests(self.media)
        self.note_views = {}
        views = card_views(planned, self.sides, self.note_views)
        if self.files is None and not (self.out / MARKER).exists():
            remove_file(self.manifest)
            prepare_site(self.out)
        writer = SiteWriter(self.out, self.manifest, known=self.files)
        if self.files is not None:
            writer.start_over()  # a full redraw: the files it does not write again go
        media = [(name, m.path) for name, m in sorted(self.media.items())]
        write_site(self.out, planned.config.name, views, media, self.progress, writer, self.entries)
        writer.finish()
        self.manifest_owed = False
        self.files, self.views, self.shown, self.pending = writer.seen, views, planned, planned
        self.keys = [v.key for v in views]
        self.by_card = {s.note.card_id: s.note for s in planned.notes}
        return Drawn(len(views), tuple(writer.written), True)

    def _map_collection(self, planned: Plan) -> None:
        assert self.col is not None and self.col.db is not None
        keys = {s.note.guid: s.note for s in planned.notes}
        self.nids, self.mids, self.dids = {}, {}, {}
        for nid, guid, mid in self.col.db.all("select id, guid, mid from notes"):
            self.nids[guid] = nid
            if guid in keys:
                self.mids[keys[guid].notetype] = mid
        by_nid = {nid: guid for guid, nid in self.nids.items()}
        for nid, did in self.col.db.all("select nid, did from cards"):
            note = keys.get(by_nid.get(nid, ""))
            if note is not None:
                self.dids.setdefault(note.deck, did)

    def _replace_notes(self, now: Mapping[str, RenderedNote], todo: Redraw) -> bool:
        """The notes `todo` names (`now`: the new plan's notes by card id), replaced in the collection
        and their cards rendered; False when one needs what the collection lacks (a note type or
        subdeck no note used yet)."""
        assert self.col is not None and self.shown is not None
        col = self.col
        before = self.by_card
        added = [now[card_id] for card_id in todo.notes if card_id in now]
        if any(n.notetype not in self.mids or n.deck not in self.dids for n in added):
            return False
        guids = {before[c].guid for c in (*todo.gone, *todo.notes) if c in before} | {n.guid for n in added}
        leaving = [self.nids.pop(g) for g in sorted(guids) if g in self.nids]
        if leaving:
            col.remove_notes(leaving)
        for guid in guids:
            self.sides.pop(guid, None)
        cards: list[CardId] = []
        for rendered in added:
            note = col.new_note(col.models.get(self.mids[rendered.notetype]))  # type: ignore[arg-type]
            note.guid = rendered.guid
            note.fields = list(rendered.fields)
            note.tags = list(rendered.tags)
            col.add_note(note, self.dids[rendered.deck])  # type: ignore[arg-type]
            self.nids[rendered.guid] = note.id
            cards += note.card_ids()
        self.sides.update(render_sides(col, cards))
        return True

    def _write_changes(self, planned: Plan, todo: Redraw, media: Mapping[str, MediaFile]) -> Drawn:
        assert planned.config is not None
        for card_id in (*todo.notes, *todo.gone):  # an unchanged note shows the same cards: its views are kept
            self.note_views.pop(card_id, None)
        made: list[int] = []
        views = card_views(planned, self.sides, self.note_views, made)
        deck = planned.config.name
        writer = SiteWriter(self.out, self.manifest, known=self.files)
        keys = [v.key for v in views]
        old_keys = self.keys
        if keys == old_keys:  # the same cards in the same order: only the redrawn ones' pages change
            indices: Sequence[int] = made
        else:  # each page shows its number, the total and its neighbours
            indices = range(len(views))
            for key in sorted(set(old_keys) - set(keys)):
                writer.drop(f"cards/{key}.html")
        for i in indices:
            prev_key = keys[i - 1] if i > 0 else None
            next_key = keys[i + 1] if i + 1 < len(keys) else None
            writer.write(f"cards/{keys[i]}.html", card_page(deck, views[i], prev_key, next_key, i + 1, len(views)).encode())
        for name in todo.media:
            writer.write(f"media/{name}", media[name].path.read_bytes())
        for name in todo.media_gone:
            writer.drop(f"media/{name}")
        files = self.entries.files(views)
        for name, data, fresh in files:
            if fresh:
                writer.write(name, data)
        for number in range(len(files), (len(old_keys) + INDEX_CHUNK - 1) // INDEX_CHUNK):
            writer.drop(index_file_name(number))
        writer.write("index.html", index_page(deck, views, self.entries.facets).encode("utf-8"))
        # The manifest waits for the package (a line per file, 120,000 at 100,000 cards), unless
        # files were added or dropped: a manifest left behind then would not name them.
        writer.finish(manifest=writer.renamed)
        self.manifest_owed = not writer.renamed
        self.files, self.views, self.keys, self.shown, self.media = writer.seen, views, keys, planned, dict(media)
        saved = tuple(views[i].key for i in made)
        return Drawn(len(views), tuple(writer.written), False, saved)


def _media(root: Path, planned: Plan) -> dict[str, MediaFile]:
    """The files the package carries, by name: what the site's media/ holds."""
    declared = {k: nt for k, nt in planned.notetypes.items() if nt.declared}
    files = package_media(root, planned.figures, [s.note for s in planned.notes], declared)
    return {m.name: m for m in files}
