"""The preview site: every card's front and back exactly as Anki renders them, browsable offline.

The deck is planned and built like `deckbuild build`, imported into a throwaway collection
of the official Anki backend, and each card is rendered there (templates, cloze, CSS), so
what you review in `dist/preview/` is what a learner's Anki shows; what the index shows
about each card (kind, difficulty, topics) comes from the plan.  Pages are static files that work
from file:// with no network: media and MathJax 3 (from the `django-static-mathjax` wheel)
are copied next to them.  Same deck in, same bytes out.
"""

from __future__ import annotations

import html
import re
import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from deckbuild.errors import DeckbuildError

if TYPE_CHECKING:
    from deckbuild.plan import Plan
    from deckbuild.preview.pages import SiteWriter

Progress = Callable[[int, int, str], None]

# A file in every preview folder: lets a rebuild replace the folder without risking other files.
MARKER = ".deckbuild-preview"
# Anki's own MathJax settings (ts/lib/mathjax: \( \) inline, \[ \] display, no $, no escapes),
# with SVG output so no font files have to load from file://.
MATHJAX_CONFIG = """window.MathJax = {
  tex: {
    inlineMath: [["\\\\(", "\\\\)"]],
    displayMath: [["\\\\[", "\\\\]"]],
    processEscapes: false,
    processEnvironments: false,
    processRefs: false,
    packages: {"[+]": ["noerrors", "mathtools", "mhchem"], "[-]": ["textmacros"]},
  },
  loader: {load: ["[tex]/noerrors", "[tex]/mathtools", "[tex]/mhchem"]},
  options: {renderActions: {addMenu: []}, ignoreHtmlClass: "tex2jax_ignore", processHtmlClass: "tex2jax_process"},
  svg: {fontCache: "global"},
};
"""


class PreviewError(DeckbuildError):
    """The preview cannot be written where asked."""


@dataclass(frozen=True)
class CardView:
    """One Anki card as rendered by the backend, ready to become a page."""

    key: str  # page name: the card id, plus ".cN" for each card of a cloze note
    card_id: str
    kind: str  # qa | formula | fact | ...
    difficulty: str
    topics: tuple[str, ...]
    front: str  # Anki's rendered question side (with its <style>)
    back: str  # Anki's rendered answer side
    title: str  # the front as plain text without the difficulty/topic line, for the index


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
    from deckbuild.apply import apply
    from deckbuild.plan import plan

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

        manifest = root / ".deckbuild-cache" / MANIFEST
        if not (incremental and (out_dir / MARKER).exists()):
            manifest.unlink(missing_ok=True)
            _prepare(out_dir)
        writer = SiteWriter(out_dir, manifest if incremental else None)
        _write_site(out_dir, planned.config.name, views, media, progress, writer)
        writer.finish()
    result = PreviewResult(out_dir / "index.html", len(views), len(media), tuple(views), tuple(writer.written), planned.package)
    if check_fit:
        from deckbuild.preview.fitcheck import DoesNotFit, fit_problems

        where = {card_id: f.location for card_id, f in planned.facets.items() if f.location is not None}
        problems = fit_problems(out_dir, [view.key for view in views], where)
        if problems:
            raise DoesNotFit(problems, len({p.message.split("'")[1] for p in problems}))
    return result


Sides = dict[tuple[str, int], tuple[str, str]]
"""(note GUID, card ord) -> the card's question and answer side as Anki renders them."""


def render_cards(package: Path, workdir: Path, progress: Progress | None = None) -> tuple[Sides, list[Path]]:
    """Import `package` into a new collection in `workdir`; every card's sides, and the media files."""
    from anki.collection import Collection, ImportAnkiPackageOptions, ImportAnkiPackageRequest

    col = Collection(str(workdir / "collection.anki2"))
    try:
        request = ImportAnkiPackageRequest(package_path=str(package), options=ImportAnkiPackageOptions())
        col.import_anki_package(request)
        col.models._clear_cache()
        cards = [col.get_card(cid) for cid in col.find_cards("")]
        guids = {card.nid: card.note().guid for card in cards}
        sides: Sides = {}
        for done, card in enumerate(cards, 1):
            sides[(guids[card.nid], card.ord)] = (card.question(), card.answer())
            if progress and (done % 100 == 0 or done == len(cards)):
                progress(done, len(cards), "rendered cards with the Anki backend")
        media_dir = Path(col.media.dir())
        media = sorted((p for p in media_dir.iterdir() if p.is_file()), key=lambda p: p.name)
        kept = workdir / "media"
        kept.mkdir()
        for path in media:
            shutil.copyfile(path, kept / path.name)
        return sides, [kept / p.name for p in media]
    finally:
        col.close()


def card_views(planned: Plan, sides: Sides) -> list[CardView]:
    """Every card in study order (the plan's note order, then each cloze number), with the plan's facets."""
    ords: dict[str, list[int]] = {}
    for guid, ord_ in sorted(sides):
        ords.setdefault(guid, []).append(ord_)
    views = []
    for stamped in planned.notes:
        note = stamped.note
        facets = planned.facets[note.card_id]
        numbers = ords.get(note.guid, [])
        for ord_ in numbers:
            front, back = sides[(note.guid, ord_)]
            views.append(
                CardView(
                    key=note.card_id if len(numbers) == 1 else f"{note.card_id}.c{ord_ + 1}",
                    card_id=note.card_id,
                    kind=facets.kind,
                    difficulty=facets.difficulty,
                    topics=facets.topics,
                    front=front,
                    back=back,
                    title=visible_text(re.sub(r'<div class="db-meta">.*?</div>', " ", front, flags=re.DOTALL)),
                )
            )
    return views


def visible_text(rendered: str) -> str:
    """What a learner reads on a rendered side: style and tags dropped, entities decoded."""
    text = re.sub(r"<(style|script)>.*?</\1>", " ", rendered, flags=re.DOTALL)
    text = re.sub(r"<[^>]+>", " ", text)
    return re.sub(r"\s+", " ", html.unescape(text)).strip()


def mathjax_dir() -> Path:
    """MathJax 3's es5 build inside the django-static-mathjax wheel."""
    try:
        root = Path(str(resources.files("mathjax"))) / "static" / "mathjax" / "es5"
    except ModuleNotFoundError:
        root = Path("/nonexistent")
    if not (root / "tex-svg.js").exists():
        raise PreviewError("MathJax 3 not found: pip install 'django-static-mathjax==3.2.2.1' (or reinstall deckbuild)")
    return root


def _prepare(out_dir: Path) -> None:
    """Empty `out_dir` if it is a previous preview; refuse to clobber any other folder."""
    if out_dir.exists():
        if not (out_dir / MARKER).exists() and any(out_dir.iterdir()):
            raise PreviewError(f"{out_dir} exists and is not a deckbuild preview; choose another --out")
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True)
    (out_dir / MARKER).write_text("Written by `deckbuild preview`; replaced on every run.\n", encoding="utf-8")


def _write_site(
    out_dir: Path, deck: str, views: Sequence[CardView], media: Sequence[Path], progress: Progress | None, writer: SiteWriter
) -> None:
    # MathJax: the SVG component and the TeX extensions it loads on demand (noerrors, mhchem, ...).
    source = mathjax_dir()
    extensions = source / "input" / "tex" / "extensions"
    for path in sorted(p for p in extensions.rglob("*") if p.is_file()):
        writer.write(f"mathjax/input/tex/extensions/{path.relative_to(extensions).as_posix()}", path.read_bytes())
    writer.write("mathjax/tex-svg.js", (source / "tex-svg.js").read_bytes())
    writer.write("mathjax/LICENSE", (source.parent / "LICENSE").read_bytes())
    writer.write("assets/preview.css", CHROME_CSS.encode("utf-8"))
    writer.write("assets/preview.js", (MATHJAX_CONFIG + CHROME_JS).encode("utf-8"))
    for path in media:
        writer.write(f"media/{path.name}", path.read_bytes())
    for index, view in enumerate(views):
        prev_key = views[index - 1].key if index > 0 else None
        next_key = views[index + 1].key if index + 1 < len(views) else None
        page = card_page(deck, view, prev_key, next_key, index + 1, len(views))
        writer.write(f"cards/{view.key}.html", page.encode("utf-8"))
        if progress and ((index + 1) % 100 == 0 or index + 1 == len(views)):
            progress(index + 1, len(views), "wrote card pages")
    writer.write("index.html", index_page(deck, views).encode("utf-8"))


def card_page(deck: str, view: CardView, prev_key: str | None, next_key: str | None, number: int, total: int) -> str:
    """One card, wrapped as Anki's reviewer wraps it (body.card, #qa), plus a small bar.

    Both sides are in the page and "Show answer" swaps #qa and typesets it again, which is
    what Anki's reviewer does; `#answer` in the URL opens the back.
    """

    def link(key: str | None, label: str, rel: str, name: str) -> str:
        if key is None:
            return f'<span class="pv-off pv-step" aria-hidden="true">{label}</span>'
        return f'<a class="pv-step" rel="{rel}" aria-label="{name}" href="../cards/{html.escape(key)}.html">{label}</a>'

    title = html.escape(f"{view.key} · {deck}")
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<base href="../media/">
<link rel="stylesheet" href="../assets/preview.css">
<script src="../assets/preview.js"></script>
<script src="../mathjax/tex-svg.js" defer></script>
</head>
<body class="card card{_ord(view.key)}" data-card="{html.escape(view.key)}">
<script>dbPreview.init();</script>
<nav class="pv-bar">
<a href="../index.html" rel="index">All</a>
{link(prev_key, "‹", "prev", "Previous card")}
<span class="pv-pos">{number}/{total}</span>
{link(next_key, "›", "next", "Next card")}
<button type="button" class="pv-flip" onclick="dbPreview.flip()">Answer</button>
<button type="button" class="pv-night" onclick="dbPreview.toggleNight()">Night</button>
</nav>
<template id="pv-front">
{view.front}
</template>
<template id="pv-back">
{view.back}
</template>
<div id="qa"></div>
<script>dbPreview.show(location.hash === "#answer" ? "back" : "front");</script>
</body>
</html>
"""


def _ord(key: str) -> int:
    match = re.search(r"\.c(\d+)$", key)
    return int(match.group(1)) if match else 1


def index_page(deck: str, views: Sequence[CardView]) -> str:
    """Every card, filterable by difficulty, topic and text (inline script; works offline)."""
    difficulties = sorted({v.difficulty for v in views if v.difficulty}, key=_difficulty_rank)
    topics = sorted({prefix for v in views for t in v.topics for prefix in _prefixes(t)})
    rows = []
    for view in views:
        search = " ".join([view.key, view.title, visible_text(view.back), " ".join(view.topics)]).lower()
        topic_text = " · ".join(t.replace("::", " › ") for t in view.topics)
        rows.append(
            f'<li data-difficulty="{html.escape(view.difficulty)}" data-topics="{html.escape(" ".join(view.topics))}"'
            f' data-text="{html.escape(search)}">'
            f'<a href="cards/{html.escape(view.key)}.html">'
            f'<span class="pv-d pv-d-{html.escape(view.difficulty)}">{html.escape(view.difficulty or "–")}</span>'
            f'<span class="pv-kind">{html.escape(view.kind)}</span>'
            f'<span class="pv-title">{html.escape(shorten_title(view.title, 220))}</span>'
            f'<span class="pv-sub">{html.escape(view.key)} · {html.escape(topic_text)}</span></a></li>'
        )
    diff_options = "".join(f'<option value="{html.escape(d)}">{html.escape(d)}</option>' for d in difficulties)
    topic_options = "".join(
        f'<option value="{html.escape(t)}">{"  " * t.count("::")}{html.escape(t.rsplit("::", 1)[-1])}</option>' for t in topics
    )
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(deck)} · preview</title>
<link rel="stylesheet" href="assets/preview.css">
<script src="assets/preview.js"></script>
<script src="mathjax/tex-svg.js" defer></script>
</head>
<body class="pv-index">
<script>dbPreview.init();</script>
<header>
<h1>{html.escape(deck)}</h1>
<p class="pv-help">{len(views)} cards as Anki renders them. Open one, then use ‹ › (or the arrow keys) to page and
space to flip. <button type="button" class="pv-night" onclick="dbPreview.toggleNight()">Night</button></p>
<form class="pv-filter" onsubmit="return false">
<select id="difficulty" aria-label="Difficulty"><option value="">any difficulty</option>{diff_options}</select>
<select id="topic" aria-label="Topic"><option value="">any topic</option>{topic_options}</select>
<input id="q" type="search" placeholder="search text or id" aria-label="Search">
<output id="count">{len(views)}</output>
</form>
</header>
<ol id="cards">
{chr(10).join(rows)}
</ol>
<script>
(function () {{
  var d = document.getElementById("difficulty"), t = document.getElementById("topic"),
      q = document.getElementById("q"), count = document.getElementById("count"),
      rows = Array.prototype.slice.call(document.querySelectorAll("#cards > li"));
  function apply() {{
    var words = q.value.toLowerCase().split(/\\s+/).filter(Boolean), shown = 0;
    rows.forEach(function (li) {{
      var topics = li.dataset.topics.split(" ");
      var ok = (!d.value || li.dataset.difficulty === d.value) &&
        (!t.value || topics.some(function (x) {{ return x === t.value || x.indexOf(t.value + "::") === 0; }})) &&
        words.every(function (w) {{ return li.dataset.text.indexOf(w) !== -1; }});
      li.hidden = !ok; if (ok) shown++;
    }});
    count.textContent = shown + " of " + rows.length;
    var params = new URLSearchParams(location.search);
    [["difficulty", d.value], ["topic", t.value], ["q", q.value]].forEach(function (p) {{
      if (p[1]) params.set(p[0], p[1]); else params.delete(p[0]);
    }});
    history.replaceState(null, "", location.pathname + (params.toString() ? "?" + params : ""));
  }}
  var start = new URLSearchParams(location.search);
  d.value = start.get("difficulty") || ""; t.value = start.get("topic") || ""; q.value = start.get("q") || "";
  [d, t].forEach(function (el) {{ el.addEventListener("change", apply); }});
  q.addEventListener("input", apply);
  apply();
}})();
</script>
</body>
</html>
"""


def _prefixes(topic: str) -> list[str]:
    parts = topic.split("::")
    return ["::".join(parts[: i + 1]) for i in range(len(parts))]


def _difficulty_rank(value: str) -> tuple[int, str]:
    order = {"easy": 0, "medium": 1, "hard": 2}
    return (order.get(value, 9), value)


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


# \( ... \) and \[ ... \] spans, which MathJax typesets in the index; never cut one in half.
_MATH_SPAN = re.compile(r"\\\(.*?\\\)|\\\[.*?\\\]", re.DOTALL)


def shorten_title(text: str, limit: int) -> str:
    """`text` cut to about `limit` characters at a boundary outside formulas (issue 15).

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


# The preview's own chrome: a quiet bar above the card; never styles the card itself.
CHROME_CSS = """\
.pv-bar { display: flex; flex-wrap: wrap; gap: 4px 10px; align-items: center; padding: 6px 14px;
  font: 13px/1.6 system-ui, sans-serif; background: #f3f3f5; border-bottom: 1px solid #dcdce0; }
.pv-bar a { color: #0a63c2; text-decoration: none; }
.pv-bar .pv-off { color: #b0b0b5; }
.pv-bar .pv-step { font-size: 20px; line-height: 1; padding: 0 8px; }
.pv-bar .pv-pos { color: #6b6b70; }
.pv-flip, .pv-night { font: inherit; font-size: 13px; padding: 1px 10px; border-radius: 12px; border: 1px solid #c5c5cb;
  background: transparent; color: inherit; cursor: pointer; }
.pv-flip { margin-left: auto; font-weight: 600; color: #0a63c2; border-color: #0a63c2; }
.nightMode .pv-flip { color: #7ab7ff; border-color: #7ab7ff; }
.nightMode .pv-bar { background: #2a2a2d; border-bottom-color: #3a3a3f; color: #d0d0d6; }
.nightMode .pv-bar a { color: #7ab7ff; }
.nightMode .pv-bar .pv-off, .nightMode .pv-bar .pv-pos { color: #8a8a90; }
.nightMode .pv-night { border-color: #55555b; }
.pv-index .pv-night { margin-left: auto; }
body.pv-index { font: 16px/1.5 system-ui, sans-serif; margin: 0; color: #1d1d1f; background: #fff; }
.pv-index header { padding: 12px 14px 4px; position: sticky; top: 0; background: inherit; border-bottom: 1px solid #e0e0e4; }
.pv-index h1 { font-size: 20px; margin: 0 0 4px; }
.pv-help { font-size: 13px; color: #6b6b70; margin: 0 0 8px; display: flex; flex-wrap: wrap; gap: 6px; align-items: center; }
.pv-filter { display: flex; flex-wrap: wrap; gap: 6px; align-items: center; margin-bottom: 8px; }
.pv-filter select, .pv-filter input { font: inherit; font-size: 15px; padding: 4px 6px; max-width: 100%;
  border: 1px solid #c5c5cb; border-radius: 6px; background: inherit; color: inherit; }
.pv-filter input { flex: 1 1 10em; min-width: 0; }
.pv-filter output { font-size: 13px; color: #6b6b70; }
#cards { list-style: none; margin: 0; padding: 0; }
#cards li a { display: block; padding: 10px 14px; border-bottom: 1px solid #ececf0; color: inherit; text-decoration: none;
  overflow-wrap: anywhere; }
#cards li a:hover { background: #f5f8ff; }
.pv-d, .pv-kind { font-size: 11px; text-transform: uppercase; font-weight: 600; margin-right: 8px; letter-spacing: .02em; }
.pv-d-easy { color: #2e7d32; } .pv-d-medium { color: #a15c00; } .pv-d-hard { color: #b3261e; }
.pv-kind { color: #6b6b70; }
.pv-title { display: block; margin: 2px 0; }
.pv-sub { display: block; font-size: 12px; color: #8a8a90; }
.pv-index mjx-container { max-width: 100%; overflow-x: auto; overflow-y: hidden; }
body.pv-index.nightMode { background: #1c1c1e; color: #e6e6ea; }
.pv-index.nightMode header { border-bottom-color: #3a3a3f; }
.pv-index.nightMode #cards li a { border-bottom-color: #2f2f33; }
.pv-index.nightMode #cards li a:hover { background: #26262a; }
.pv-index.nightMode .pv-d-easy { color: #81c784; } .pv-index.nightMode .pv-d-medium { color: #ffb74d; }
.pv-index.nightMode .pv-d-hard { color: #ef9a9a; }
"""

# Night mode as Anki sets it (html.night-mode, body.nightMode/.night_mode), kept across pages
# with ?night=1; arrow keys page through cards, space flips.
CHROME_JS = """\
window.dbPreview = (function () {
  function night() { return new URLSearchParams(location.search).get("night") === "1"; }
  // Anki sets these classes on the reviewer's page; the card CSS styles both spellings.
  function setNight(on) {
    document.documentElement.classList.toggle("night-mode", on);
    document.body.classList.toggle("nightMode", on);
    document.body.classList.toggle("night_mode", on);
    var params = new URLSearchParams(location.search);
    if (on) params.set("night", "1"); else params.delete("night");
    history.replaceState(null, "", location.pathname + (params.toString() ? "?" + params : ""));
    document.querySelectorAll("a[href]").forEach(function (a) {
      var href = a.getAttribute("href").split("?")[0];  // keep night mode while paging
      if (/\\.html$/.test(href)) a.setAttribute("href", on ? href + "?night=1" : href);
    });
  }
  function init() {
    // Called first thing in <body>: set the classes before the card paints, fix links once parsed.
    if (night()) {
      document.documentElement.classList.add("night-mode");
      document.body.classList.add("nightMode", "night_mode");
      document.addEventListener("DOMContentLoaded", function () { setNight(true); });
    }
    document.addEventListener("keydown", function (e) {
      if (e.target.closest && e.target.closest("input, select, textarea")) return;
      if (e.key === " " && document.getElementById("qa")) { e.preventDefault(); flip(); return; }
      var rel = {ArrowLeft: "prev", ArrowRight: "next"}[e.key];
      var a = rel && document.querySelector('a[rel="' + rel + '"]');
      if (a) { e.preventDefault(); location.href = a.href; }
    });
  }
  // Like Anki's reviewer (ts/reviewer setInnerHTML): the card's own scripts run, in order.
  function setHtml(qa, content) {
    qa.innerHTML = content;
    qa.querySelectorAll("script").forEach(function (old) {
      var script = document.createElement("script");
      script.textContent = old.textContent;
      old.replaceWith(script);
    });
  }
  // Like Anki's reviewer: replace #qa with the side's HTML, then typeset it again.
  var side = "front";
  function show(which) {
    side = which;
    var qa = document.getElementById("qa");
    var content = document.getElementById("pv-" + which).innerHTML;
    var button = document.querySelector(".pv-flip");
    if (button) button.textContent = which === "front" ? "Answer" : "Question";
    history.replaceState(null, "", location.pathname + location.search + (which === "back" ? "#answer" : ""));
    if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
      // Chained on the start-up promise, MathJax's documented way to serialise typesetting;
      // cleared before the swap, or MathJax keeps the old side's formulas in its list.
      MathJax.startup.promise = MathJax.startup.promise.then(function () {
        MathJax.typesetClear([qa]);
        setHtml(qa, content);
        return MathJax.typesetPromise([qa]);
      });
      return MathJax.startup.promise;
    }
    setHtml(qa, content);
    return Promise.resolve();  // MathJax (deferred) has not started yet: its start-up typesets #qa
  }
  function flip() { return show(side === "front" ? "back" : "front"); }
  return {init: init, setNight: setNight, show: show, flip: flip,
          toggleNight: function () { setNight(!document.body.classList.contains("nightMode")); }};
})();
"""
