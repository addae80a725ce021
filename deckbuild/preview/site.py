"""The preview site: every card's front and back exactly as Anki renders them, browsable offline.

The deck is planned and built like `deckbuild build`, imported into a throwaway collection
of the official Anki backend, and each card is rendered there (templates, cloze, CSS), so
what you review in `dist/preview/` is what a learner's Anki shows; what the index shows
about each card (kind, difficulty, topics) comes from the plan.  Pages are static files
that work from file:// with no network: media, the site's own assets/ (preview.css,
preview.js) and MathJax 3 (from the `django-static-mathjax` wheel) are copied next to
them.  Same deck in, same bytes out.
"""

from __future__ import annotations

import functools
import html
import json
import operator
import re
import shutil
import string
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from deckbuild.errors import PreviewError
from deckbuild.layout import CACHE_DIR
from deckbuild.model import DIFFICULTIES, Progress
from deckbuild.plan_result import tag_facets
from deckbuild.writer import atomic_write_bytes, make_folder, remove_file, remove_tree

if TYPE_CHECKING:
    from anki.cards import CardId
    from anki.collection import Collection

    from deckbuild.plan_result import Plan
    from deckbuild.preview.pages import SiteWriter


# A file in every preview folder: lets a rebuild replace the folder without risking other files.
MARKER = ".deckbuild-preview"


@dataclass(frozen=True)
class CardView:
    """One Anki card as rendered by the backend, ready to become a page."""

    key: str  # page name: the card id, plus ".cN" for each card of a cloze note
    card_id: str
    kind: str  # qa | formula | fact | ...
    difficulty: str
    topics: tuple[str, ...]
    # Anki's rendered question and answer sides, each as its leading <style> block, its own part
    # and its trailing <script> block (split_side: the blocks shared by every card showing them).
    front_style: str
    front_body: str
    back_style: str
    back_body: str
    title: str  # the front as plain text without the difficulty/topic line, for the index
    front_script: str = ""
    back_script: str = ""

    @property
    def front(self) -> str:
        return self.front_style + self.front_body + self.front_script

    @property
    def back(self) -> str:
        return self.back_style + self.back_body + self.back_script


@dataclass(frozen=True)
class PreviewResult:
    index: Path
    cards: int
    media: int
    views: tuple[CardView, ...]  # every card in study order, as rendered
    written: tuple[str, ...] = ()  # the files (relative to the site) this run wrote
    package: Path | None = None  # the package the site shows


def write_preview(
    root: Path,
    out_dir: Path | None = None,
    progress: Progress | None = None,
    *,
    incremental: bool = False,
    check_fit: bool = False,
) -> PreviewResult:
    """Build the deck, render every card with the Anki backend, write the static site to `out_dir`.

    `out_dir` defaults to <output>/preview.  `incremental` (deckbuild serve): keep a previous
    site and rewrite only the files whose bytes changed, tracked in .deckbuild-cache/ (same
    result as a full run).  `check_fit`: then open every card at phone width (fitcheck.py).
    """
    from deckbuild.apply import apply, settle
    from deckbuild.plan import plan

    settle(root, writing=True)  # a write killed half-way is rolled back before the plan reads the project
    # Stage 1: the package, through the same plan (and checks) as `deckbuild build`.
    planned = plan(root, "build", progress=progress)
    apply(planned)
    assert planned.config is not None and planned.package is not None
    out_dir = out_dir if out_dir is not None else planned.package.parent / "preview"
    # Stage 2: render every card with the official backend; gather media.  Nothing written yet.
    with tempfile.TemporaryDirectory(prefix="deckbuild-preview-") as tmp:
        sides, media = render_cards(planned.package, Path(tmp), progress)
        views = card_views(planned, sides)
        # Stage 3: now that all data is gathered, write the site.
        from deckbuild.preview.pages import MANIFEST, SiteWriter

        manifest = root / CACHE_DIR / MANIFEST
        if not (incremental and (out_dir / MARKER).exists()):
            remove_file(manifest)
            prepare_site(out_dir)
        writer = SiteWriter(out_dir, manifest if incremental else None)
        write_site(out_dir, planned.config.name, views, [(p.name, p) for p in media], progress, writer)
        writer.finish()
    result = PreviewResult(out_dir / "index.html", len(views), len(media), tuple(views), tuple(writer.written), planned.package)
    if check_fit:
        from deckbuild.preview.fitcheck import DoesNotFit, fit_problems

        where = {card_id: f.location for card_id, f in planned.facets.items() if f.location is not None}
        problems = fit_problems(out_dir, [view.key for view in views], where)
        if problems:
            raise DoesNotFit(problems, len({p.message.split("'")[1] for p in problems}))
    return result


Sides = dict[str, dict[int, tuple[str, str, str, str, str, str]]]
"""Note GUID -> card ord -> the card's question and answer side as Anki renders them, each split
into its leading <style> block, its own part and its trailing <script> block (split_side)."""


def render_cards(package: Path, workdir: Path, progress: Progress | None = None) -> tuple[Sides, list[Path]]:
    """Import `package` into a new collection in `workdir`; every card's sides, and the media files."""
    col = open_render_collection(package, workdir)
    try:
        sides = render_sides(col, col.find_cards(""), progress)
        media_dir = Path(col.media.dir())
        media = sorted((p for p in media_dir.iterdir() if p.is_file()), key=lambda p: p.name)
        kept = workdir / "media"
        kept.mkdir()
        for path in media:
            shutil.copyfile(path, kept / path.name)
        return sides, [kept / p.name for p in media]
    finally:
        col.close()


def open_render_collection(package: Path, workdir: Path) -> Collection:
    """A new Anki collection in `workdir` holding `package`: where the backend renders its cards."""
    from anki.collection import Collection, ImportAnkiPackageOptions, ImportAnkiPackageRequest

    col = Collection(str(workdir / "collection.anki2"))
    try:
        request = ImportAnkiPackageRequest(package_path=str(package), options=ImportAnkiPackageOptions())
        col.import_anki_package(request)
        col.models._clear_cache()
    except BaseException:
        col.close()
        raise
    return col


def render_sides(col: Collection, card_ids: Sequence[CardId], progress: Progress | None = None) -> Sides:
    """The question and answer sides of the cards `card_ids` of `col`, as the backend renders them."""
    cards = [col.get_card(cid) for cid in card_ids]
    guids: dict[int, str] = {}
    sides: Sides = {}
    for done, card in enumerate(cards, 1):
        guid = guids.get(card.nid)
        if guid is None:
            guid = guids[card.nid] = card.note().guid
        sides.setdefault(guid, {})[card.ord] = (*split_side(card.question()), *split_side(card.answer()))
        if progress and (done % 100 == 0 or done == len(cards)):
            progress(done, len(cards), "rendered cards with the Anki backend")
    return sides


def card_views(
    planned: Plan, sides: Sides, kept: dict[str, list[CardView]] | None = None, made: list[int] | None = None
) -> list[CardView]:
    """Every card in study order (the plan's note order, then each cloze number), with its note's
    facets.  `kept` (serve): the views of notes known to be unchanged, by card id, used as they
    are; the views made here are added to it, and their places in the list to `made`."""
    views: list[CardView] = []
    for stamped in planned.notes:
        note = stamped.note
        same = kept.get(note.card_id) if kept is not None else None
        if same is not None:
            views += same
            continue
        kind, difficulty, topics = tag_facets(note.tags)
        cards = sides.get(note.guid, {})
        numbers = sorted(cards)
        start = len(views)
        for ord_ in numbers:
            front_style, front_body, front_script, back_style, back_body, back_script = cards[ord_]
            views.append(
                CardView(
                    key=note.card_id if len(numbers) == 1 else f"{note.card_id}.c{ord_ + 1}",
                    card_id=note.card_id,
                    kind=kind,
                    difficulty=difficulty,
                    topics=topics,
                    front_style=front_style,
                    front_body=front_body,
                    back_style=back_style,
                    back_body=back_body,
                    title=card_title(front_body),
                    front_script=front_script,
                    back_script=back_script,
                )
            )
        if kept is not None:
            kept[note.card_id] = views[start:]
        if made is not None:
            made += range(start, len(views))
    return views


# A <style> or <script> block up to its first closing tag, written so that each character is
# looked at once (a lazy `.*?` retried the closing tag at every character of a side's CSS).
_BLOCK = re.compile(r"<style>[^<]*(?:<(?!/style>)[^<]*)*</style>|<script>[^<]*(?:<(?!/script>)[^<]*)*</script>")
_TAG = re.compile(r"<[^>]+>")
_SPACE = re.compile(r"\s+")


def split_side(side: str) -> tuple[str, str, str]:
    """A rendered side as its leading <style> block, the rest, and its trailing <script> block
    (their concatenation is the side); the blocks interned, so the 120,000 cards of a large
    deck share one string of each of their note type's: its CSS (12 KB in the shipped deck's)
    and the script that fits formulas to the screen (2.5 KB, most of a side's own part)."""
    style = script = ""
    if side.startswith("<style>"):
        end = side.find("</style>")
        if end >= 0:
            end += len("</style>")
            style, side = sys.intern(side[:end]), side[end:]
    if side.endswith("</script>"):
        start = side.rfind("<script>")
        if start >= 0:
            side, script = side[:start], sys.intern(side[start:])
    return style, side, script


@functools.lru_cache(maxsize=1 << 16)
def card_title(front: str) -> str:
    """A rendered front as the index lists it: its text without the difficulty/topic line (a
    side's body gives the same text as the whole side: its <style> block reads as nothing)."""
    # Not through visible_text's memo: it would keep this copy of the side as its key.
    return _visible_text(re.sub(r'<div class="db-meta">.*?</div>', " ", front, flags=re.DOTALL))


def _visible_text(rendered: str) -> str:
    """What a learner reads on a rendered side: style and tags dropped, entities decoded."""
    text = _TAG.sub(" ", _BLOCK.sub(" ", rendered))
    return _SPACE.sub(" ", html.unescape(text)).strip()


# Remembered (serve asks again after every save for every card; the sides of unchanged cards
# are the same strings).
visible_text = functools.lru_cache(maxsize=1 << 16)(_visible_text)


def mathjax_dir() -> Path:
    """MathJax 3's es5 build inside the django-static-mathjax wheel."""
    try:
        root = Path(str(resources.files("mathjax"))) / "static" / "mathjax" / "es5"
    except ModuleNotFoundError:
        root = Path("/nonexistent")
    if not (root / "tex-svg.js").exists():
        raise PreviewError("MathJax 3 not found: pip install 'django-static-mathjax==3.2.2.1' (or reinstall deckbuild)")
    return root


def prepare_site(out_dir: Path) -> None:
    """Empty `out_dir` if it is a previous preview; refuse to clobber any other folder."""
    if out_dir.exists():
        if not (out_dir / MARKER).exists() and any(out_dir.iterdir()):
            raise PreviewError(f"{out_dir} exists and is not a deckbuild preview; choose another --out")
        remove_tree(out_dir)
    make_folder(out_dir)
    atomic_write_bytes(out_dir / MARKER, b"Written by `deckbuild preview`; replaced on every run.\n")


def write_site(
    out_dir: Path,
    deck: str,
    views: Sequence[CardView],
    media: Sequence[tuple[str, Path]],
    progress: Progress | None,
    writer: SiteWriter,
    entries: IndexRows | None = None,
) -> None:
    """Every file of the site: MathJax, the site's assets, `media` (name, file), the pages, the index
    (its entries kept in `entries`, if given, for the next save's index)."""
    # MathJax: the SVG component and the TeX extensions it loads on demand (noerrors, mhchem, ...).
    source = mathjax_dir()
    extensions = source / "input" / "tex" / "extensions"
    for path in sorted(p for p in extensions.rglob("*") if p.is_file()):
        writer.write(f"mathjax/input/tex/extensions/{path.relative_to(extensions).as_posix()}", path.read_bytes())
    writer.write("mathjax/tex-svg.js", (source / "tex-svg.js").read_bytes())
    writer.write("mathjax/LICENSE", (source.parent / "LICENSE").read_bytes())
    assets = resources.files("deckbuild.preview") / "assets"
    for name in ("preview.css", "preview.js"):
        writer.write(f"assets/{name}", (assets / name).read_bytes())
    for name, path in media:
        writer.write(f"media/{name}", path.read_bytes())
    for index, view in enumerate(views):
        prev_key = views[index - 1].key if index > 0 else None
        next_key = views[index + 1].key if index + 1 < len(views) else None
        page = card_page(deck, view, prev_key, next_key, index + 1, len(views))
        writer.write(f"cards/{view.key}.html", page.encode("utf-8"))
        if progress and ((index + 1) % 100 == 0 or index + 1 == len(views)):
            progress(index + 1, len(views), "wrote card pages")
    entries = entries or IndexRows()
    for name, data, _fresh in entries.files(views):
        writer.write(name, data)
    writer.write("index.html", index_page(deck, views, entries.facets).encode("utf-8"))


def card_page(deck: str, view: CardView, prev_key: str | None, next_key: str | None, number: int, total: int) -> str:
    """One card, wrapped as Anki's reviewer wraps it (body.card, #qa), plus a small bar.

    Both sides are in the page and "Show answer" swaps #qa and typesets it again, which is
    what Anki's reviewer does; `#answer` in the URL opens the back.
    """

    def link(key: str | None, label: str, rel: str, name: str) -> str:
        if key is None:
            return f'<span class="pv-off pv-step" aria-hidden="true">{label}</span>'
        return f'<a class="pv-step" rel="{rel}" aria-label="{name}" href="../cards/{html.escape(key)}.html">{label}</a>'

    return _template("card.html").substitute(
        title=html.escape(f"{view.key} · {deck}"),
        ord=_ord(view.key),
        key=html.escape(view.key),
        prev=link(prev_key, "‹", "prev", "Previous card"),
        number=number,
        total=total,
        next=link(next_key, "›", "next", "Next card"),
        front=view.front,
        back=view.back,
    )


@functools.cache
def _template(name: str) -> string.Template:
    """A page of the site from deckbuild/preview/templates/ ($name placeholders, no other syntax)."""
    return string.Template((resources.files("deckbuild.preview") / "templates" / name).read_text("utf-8"))


def _ord(key: str) -> int:
    match = re.search(r"\.c(\d+)$", key)
    return int(match.group(1)) if match else 1


INDEX_CHUNK = 1000
"""Index entries per file of index/: a save rewrites the file holding the entries it changed
(the index of 100,000 cards is about 100 MB; one file of it about 1 MB)."""


class IndexRows:
    """The index's files of entries (index/NNNN.js), kept from one save to the next (serve): a save
    makes the entries of its new views only, and the files whose views changed (a bounded cache
    of entries missed every one once a deck outgrew it: 6 s of a save at 100,000 cards)."""

    def __init__(self) -> None:
        self._files: list[_EntryFile] = []
        self.facets: IndexFacets | None = None  # of the views of the last call: what the index's filters offer

    def files(self, views: Sequence[CardView]) -> list[tuple[str, bytes, bool]]:
        """Every file of entries of `views`: (path in the site, bytes, whether new or changed since the
        last call); a file of the very view objects of the last call's is kept whole."""
        old = self._files
        everywhere: dict[int, _Row] | None = None  # the last call's rows of every file, made once a view moved
        out: list[tuple[str, bytes, bool]] = []
        files: list[_EntryFile] = []
        for number, start in enumerate(range(0, len(views), INDEX_CHUNK)):
            chunk = tuple(views[start : start + INDEX_CHUNK])
            last = old[number] if number < len(old) else None
            if last is not None and len(last.views) == len(chunk) and all(map(operator.is_, last.views, chunk)):
                files.append(last)
                out.append((index_file_name(number), last.data, False))
                continue
            rows: dict[int, _Row] = {}
            for view in chunk:
                kept = last.rows.get(id(view)) if last is not None else None
                if kept is None or kept[0] is not view:  # moved from another file, or new
                    everywhere = everywhere or {key: row for file in old for key, row in file.rows.items()}
                    kept = everywhere.get(id(view))
                rows[id(view)] = kept if kept is not None and kept[0] is view else (view, index_row(view))
            files.append(_EntryFile(chunk, rows, index_file([row[1] for row in rows.values()]), index_facets(chunk)))
            out.append((index_file_name(number), files[-1].data, True))
        self._files = files
        self.facets = (set().union(*(f.facets[0] for f in files)), set().union(*(f.facets[1] for f in files)))
        return out


_Row = tuple["CardView", str]  # a view and its entry, by the view's id (hashing every view's sides cost a third of the index)


class _EntryFile(NamedTuple):  # one file of index/: its views (held: no id in `rows` is reused), rows, bytes, facets
    views: tuple[CardView, ...]
    rows: dict[int, _Row]
    data: bytes
    facets: IndexFacets


IndexFacets = tuple[set[str], set[str]]
"""The difficulties and the topics of some views (the index's filters offer them all)."""


def index_facets(views: Sequence[CardView]) -> IndexFacets:
    return {v.difficulty for v in views if v.difficulty}, {t for v in views for t in v.topics}


def index_file_name(number: int) -> str:
    return f"index/{number:04d}.js"


def index_file(entries: Sequence[str]) -> bytes:
    """A file of index entries: a script that adds them to the index's list as it loads."""
    text = json.dumps("\n".join(entries), ensure_ascii=False).replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    return f"dbPreview.entries({text});\n".encode()


def index_page(deck: str, views: Sequence[CardView], facets: IndexFacets | None = None) -> str:
    """Every card, filterable by difficulty, topic and text (inline script; works offline); its
    entries are in the files of index/ (IndexRows.files), loaded in order by script tags.
    `facets`: index_facets(views), if known (IndexRows.facets)."""
    present, used = facets if facets is not None else index_facets(views)
    difficulties = sorted(present, key=_difficulty_rank)
    topics = sorted({prefix for t in used for prefix in _prefixes(t)})  # the few distinct topics, split once each
    diff_options = "".join(f'<option value="{html.escape(d)}">{html.escape(d)}</option>' for d in difficulties)
    topic_options = "".join(
        f'<option value="{html.escape(t)}">{"  " * t.count("::")}{html.escape(t.rsplit("::", 1)[-1])}</option>' for t in topics
    )
    files = (len(views) + INDEX_CHUNK - 1) // INDEX_CHUNK
    return _template("index.html").substitute(
        deck=html.escape(deck),
        count=len(views),
        difficulties=diff_options,
        topics=topic_options,
        entries="\n".join(f'<script src="{index_file_name(n)}"></script>' for n in range(files)),
    )


def index_row(view: CardView) -> str:
    """One card's entry in the index."""
    search = " ".join([view.key, view.title, visible_text(view.back_body), " ".join(view.topics)]).lower()
    topic_text = " · ".join(t.replace("::", " › ") for t in view.topics)
    return (
        f'<li data-difficulty="{html.escape(view.difficulty)}" data-topics="{html.escape(" ".join(view.topics))}"'
        f' data-text="{html.escape(search)}">'
        f'<a href="cards/{html.escape(view.key)}.html">'
        f'<span class="pv-d pv-d-{html.escape(view.difficulty)}">{html.escape(view.difficulty or "–")}</span>'
        f'<span class="pv-kind">{html.escape(view.kind)}</span>'
        f'<span class="pv-title">{html.escape(shorten_title(view.title, 220))}</span>'
        f'<span class="pv-sub">{html.escape(view.key)} · {html.escape(topic_text)}</span></a></li>'
    )


def _prefixes(topic: str) -> list[str]:
    parts = topic.split("::")
    return ["::".join(parts[: i + 1]) for i in range(len(parts))]


def _difficulty_rank(value: str) -> tuple[int, str]:
    order = {difficulty: rank for rank, difficulty in enumerate(DIFFICULTIES)}
    return (order.get(value, 9), value)


# \( ... \) and \[ ... \] spans, which MathJax typesets in the index; never cut one in half.
_MATH_SPAN = re.compile(r"\\\(.*?\\\)|\\\[.*?\\\]", re.DOTALL)


def shorten_title(text: str, limit: int) -> str:
    """`text` cut to about `limit` characters at a boundary outside formulas.

    A cut that would fall inside a formula keeps the whole formula if it ends within
    `limit // 2` more characters, else cuts before it; an unclosed delimiter is dropped.
    """
    if len(text) <= limit:
        return text
    cut = limit - 1
    for span in _MATH_SPAN.finditer(text):
        if span.start() < cut < span.end():
            cut = span.end() if span.end() <= limit + limit // 2 else span.start()
            break
    head = text[:cut]
    opened = max(head.rfind("\\("), head.rfind("\\["))
    if opened >= 0 and not _MATH_SPAN.search(head, opened):
        head = head[:opened]  # an opening delimiter without its closing one
    return head.rstrip() + "…" if cut < len(text) else head
