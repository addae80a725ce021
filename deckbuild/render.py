"""Card text -> field HTML: Markdown, escaping, math.  The rule for raw HTML lives here.

The rule (documented in the README): sources are Markdown, and raw HTML is never passed
through -- `<b>` shows as `<b>`.  `<`, `>`, `&`, `{{` and `}}` always show literally.
Math between `\\( \\)` or `\\[ \\]` is kept exactly as written (HTML-escaped) for MathJax.
Links keep only http(s)/mailto targets; Markdown images are refused in validation and
never rendered, so a card can neither run script nor load anything from the network.
"""

from __future__ import annotations

import hashlib
import html
import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from deckbuild.mathlines import break_lines

if TYPE_CHECKING:
    import markdown

MATH_SPAN = re.compile(r"\\\((.+?)\\\)|\\\[(.+?)\\\]", re.DOTALL)
_MARK = "\u2063"  # INVISIBLE SEPARATOR: brackets our placeholders; dropped from card text
_PLACEHOLDER = _MARK + "DBMATH{}" + _MARK
_AMP = _MARK + "DBAMP" + _MARK
_MATH_DELIMITERS = (("\\(", "\\)"), ("\\[", "\\]"))


_md: markdown.Markdown | None = None


def memo_key(text: str, inline: bool) -> bytes:
    return hashlib.blake2b((b"\1" if inline else b"\0") + text.encode(), digest_size=16).digest()


class RenderMemo:
    """Renderings of one build, passed explicitly to whatever renders its notes.

    markdown_html is a pure function of (text, inline) for a given deckbuild, so its
    results are memoised: texts repeat within a build (a related card shows its question
    again), the build carries renderings over from the last build through the on-disk
    cache (incremental/cache.py), and worker processes hand theirs back to the parent.
    `fresh` (rendered by this memo) and `used` (looked up) tell the cache what to keep.
    """

    def __init__(self, known: Mapping[bytes, str] | None = None, lookup: Callable[[bytes], str | None] | None = None) -> None:
        """`known`: renderings at hand; `lookup`: asked for the others before rendering (the
        on-disk cache, which a rebuild needs for a few notes only, so it is not loaded whole)."""
        self.entries: dict[bytes, str] = dict(known or {})
        self.fresh: dict[bytes, str] = {}
        self.used: set[bytes] = set()
        self._lookup = lookup

    def _known(self, key: bytes) -> str | None:
        out = self.entries.get(key)
        if out is None and self._lookup is not None:
            out = self._lookup(key)
            if out is not None:
                self.entries[key] = out
        return out

    def preload(self, entries: Mapping[bytes, str]) -> None:
        """Add renderings made earlier (the caller vouches they came from this code)."""
        self.entries.update(entries)

    def markdown_html(self, text: str, *, inline: bool = False) -> str:
        """Like the module's markdown_html, through the memo."""
        if not text.strip():
            return ""
        key = memo_key(text, inline)
        self.used.add(key)
        out = self._known(key)
        if out is None:
            out = self.entries[key] = self.fresh[key] = _render(text, inline)
        return out

    def memoized(self, kind: str, text: str, render: Callable[[str], str]) -> str:
        """Another pure text -> HTML function (cloze formulas, facts) through the same memo,
        so its output is carried over between builds like Markdown's."""
        key = hashlib.blake2b(b"\2" + kind.encode() + b"\0" + text.encode(), digest_size=16).digest()
        self.used.add(key)
        out = self._known(key)
        if out is None:
            out = self.entries[key] = self.fresh[key] = render(text)
        return out


def markdown_html(text: str, *, inline: bool = False) -> str:
    """Render one field's Markdown to HTML under the rule above; '' stays ''."""
    if not text.strip():
        return ""
    return _render(text, inline)


# The plain-text fast path.  Python-Markdown turns a text that uses none of its syntax into
# one paragraph of the text with `&`, `<`, `>` escaped; such texts (most questions) need not
# pay for its block parser, inline patterns and serializer (about half a first build).
# Accepted: letters, digits, spaces and the punctuation below, which no enabled Markdown
# rule reacts to except at the start of a line (headings, lists, quotes, fences, rules,
# setext underlines), so line starts are checked too.  Left out on purpose: the emphasis,
# code, link, escape and table characters (`*_`[]\|`), tabs and every other whitespace but
# a lone newline between two non-blank lines (indentation = code, trailing spaces = <br>,
# blank line = new paragraph), `<` together with `>` (autolinks), and Markdown's own
# placeholder control characters.  tests/test_render_fastpath.py checks fast == slow on
# random texts of exactly these characters and of the excluded ones.
_PLAIN_PUNCTUATION = frozenset(" .,;:?!'\"()/%@$^=+-#~<>&{}")
_BLOCK_START = re.compile(r"[#>\-+*=|~` \d]")
_ASCII_PLAIN = re.compile(r"[A-Za-z0-9 .,;:?!'\"()/%@$^=+\-#~<>&{}\n]*")


def _plain_fast(text: str) -> str | None:
    """Python-Markdown's output for a stripped text without Markdown syntax; None otherwise."""
    if not _ASCII_PLAIN.fullmatch(text):  # the common case decided by one regex; else char by char
        if not _beyond_ascii(_ASCII_PLAIN, text):
            return None
        for char in text:
            if not (char.isalnum() and char.isprintable()) and char not in _PLAIN_PUNCTUATION and char != "\n":
                return None
    if "<" in text and ">" in text:
        return None
    for line in text.split("\n"):
        if not line or _BLOCK_START.match(line) or line.endswith(" "):
            return None
    return "<p>" + html.escape(text, quote=False) + "</p>"


def _beyond_ascii(allowed: re.Pattern[str], text: str) -> bool:
    """Whether the first character `allowed` (every allowed ASCII character) stops at is
    beyond ASCII -- else it is an ASCII character the text may not have."""
    match = allowed.match(text)
    end = match.end() if match is not None else 0
    return end < len(text) and ord(text[end]) >= 128


def is_plain_text(text: str) -> bool:
    """Whether the text (stripped) uses no Markdown syntax: Markdown would make it one paragraph of itself."""
    return _plain_fast(text.strip()) is not None


def _render(text: str, inline: bool) -> str:
    fast = _plain_fast(text.strip())
    if fast is None:
        return _render_markdown(text, inline)
    return escape_braces(fast[3:-4] if inline else fast)


# The subset fast path.  Most Markdown on cards is one paragraph or one flat `- ` list of
# lines using only `**strong**`, `*em*`, `` `code` `` and math: for such a text (after
# math and `&` are hidden, as for Python-Markdown) _subset_html writes Python-Markdown's
# output itself, several times faster; anything outside the subset -- blank lines, other
# block starts, lazy or indented lines, unpaired or nested or adjacent `*` runs, `_`
# outside code, backslashes, brackets, pipes, `<` with `>`, double backticks, spaces
# inside the ends of a span -- returns None and goes to Python-Markdown.  The subset is
# deliberately narrower than what Python-Markdown renders the same way;
# tests/test_render_fastpath.py checks subset == Python-Markdown on random texts built
# from the subset's edges.
# besides letters and digits: the plain punctuation, our placeholders' mark, newline, and
# the subset's syntax (`_`, `[` and `]` only inside code, checked per part)
_SUBSET_CHARS = frozenset(_PLAIN_PUNCTUATION | {_MARK, "\n", "*", "`", "_", "[", "]"})
_ASCII_SUBSET = re.compile(r"[A-Za-z0-9 .,;:?!'\"()/%@$^=+\-#~<>&{}\n*`_\[\]\u2063]*")
_STAR_RUNS = re.compile(r"(\*+)")
# block starts (as in _BLOCK_START) except `*` before text, and backtick fences
_SUBSET_LINE_START = re.compile(r"[#>\-+=|~ \d_]|\*(?:\s|$)|\*\*(?:[\s*]|$)|``")


def _subset_html(protected: str) -> str | None:
    """Python-Markdown's HTML for a protected text inside the subset above; None otherwise."""
    if "<" in protected and ">" in protected:
        return None
    if not _ASCII_SUBSET.fullmatch(protected):  # the common case decided by one regex; else char by char
        if not _beyond_ascii(_ASCII_SUBSET, protected):
            return None
        for char in protected:
            if not (char.isalnum() and char.isprintable()) and char not in _SUBSET_CHARS:
                return None
    lines = protected.split("\n")
    if lines[0].startswith("- "):
        items: list[str] = []
        for line in lines:
            if not line.startswith("- "):
                return None
            item = _subset_inline(line[2:]) if _line_ok(line[2:]) else None
            if item is None:
                return None
            items.append("<li>" + item + "</li>")
        return "<ul>\n" + "\n".join(items) + "\n</ul>"
    for line in lines:
        if not _line_ok(line):
            return None
    body = _subset_inline(protected)
    return None if body is None else "<p>" + body + "</p>"


def _line_ok(line: str) -> bool:
    return bool(line) and not _SUBSET_LINE_START.match(line) and not line[-1].isspace()


def _subset_inline(text: str) -> str | None:
    """Inline HTML of one paragraph or list item (of _SUBSET_CHARS): code spans, then `*` pairs, else escaped text."""
    if "``" in text:
        return None
    parts = text.split("`")
    if len(parts) % 2 == 0:  # an unpaired backtick
        return None
    out: list[str] = []
    for index, part in enumerate(parts):
        if index % 2:
            if not part or part != part.strip() or "\n" in part:
                return None
            out.append("<code>" + html.escape(part, quote=False) + "</code>")
            continue
        if "_" in part or "[" in part or "]" in part:  # only inside code
            return None
        if "*" not in part:
            out.append(html.escape(part, quote=False))
            continue
        pieces = _STAR_RUNS.split(part)  # text, run, text, run, ..., text
        if len(pieces) % 4 != 1:  # runs must pair up
            return None
        out.append(html.escape(pieces[0], quote=False))
        for at in range(1, len(pieces), 4):
            opener, inner, closer, after = pieces[at : at + 4]
            if opener != closer or len(opener) > 2 or not inner or inner != inner.strip() or "\n" in inner:
                return None
            tag = "strong" if len(opener) == 2 else "em"
            out.append(f"<{tag}>{html.escape(inner, quote=False)}</{tag}>{html.escape(after, quote=False)}")
    return "".join(out)


def _render_markdown(text: str, inline: bool, subset: bool = True) -> str:
    """Python-Markdown's rendering with math and `&` hidden from it (through _subset_html
    when the text is inside its subset, unless `subset` is False)."""
    protected, spans = _protect(text)
    out = _subset_html(protected) if subset else None
    if out is None:
        out = _convert(protected)
    if inline and out.startswith("<p>") and out.endswith("</p>") and out.count("<p>") == 1:
        out = out[3:-4]
    out = escape_braces(out).replace(_AMP, "&amp;")
    for index, span in enumerate(spans):
        out = out.replace(_PLACEHOLDER.format(index), html.escape(span, quote=False))
    return out


def _protect(text: str) -> tuple[str, list[str]]:
    """The stripped text with its math spans and `&` replaced by placeholders, and the spans."""
    spans: list[str] = []

    def protect(match: re.Match[str]) -> str:
        display = match.group(2)
        spans.append(match.group(0) if display is None else "\\[" + break_lines(display) + "\\]")
        return _PLACEHOLDER.format(len(spans) - 1)

    # Markdown keeps `&lt;`-style entities as entities; an `&` typed on a card must show
    # literally, so every `&` is hidden from Markdown and written back as `&amp;`.
    return _protect_math(text.strip().replace(_MARK, ""), protect).replace("&", _AMP), spans


def _convert(protected: str) -> str:
    global _md
    if _md is None:  # the first text outside the fast paths loads Python-Markdown
        from deckbuild.safe_markdown import new_markdown

        _md = new_markdown()
    _md.reset()
    out: str = _md.convert(protected)
    return out


def _protect_math(text: str, protect: Callable[[re.Match[str]], str]) -> str:
    """MATH_SPAN.sub(protect, text) in linear time.

    The regex alone is quadratic on many unclosed `\\(` (every opener scans to the end of
    the text): a 64 KB field took 19 s.  An opener whose closer is missing means every
    later opener of that kind is unclosed too, so that kind is dropped from the search.
    """
    parts: list[str] = []
    pos = 0
    live = list(_MATH_DELIMITERS)
    while live:
        starts = [(text.find(opener, pos), opener, closer) for opener, closer in live]
        found = [item for item in starts if item[0] >= 0]
        if not found:
            break
        start, opener, closer = min(found)
        end = text.find(closer, start + len(opener) + 1)  # at least one character of math
        if end < 0:
            live.remove((opener, closer))
            continue
        end += len(closer)
        match = MATH_SPAN.fullmatch(text, start, end)
        if match is None:  # cannot happen: the span is an opener, text, a closer
            live.remove((opener, closer))
            continue
        parts.append(text[pos:start])
        parts.append(protect(match))
        pos = end
    parts.append(text[pos:])
    return "".join(parts)


def escape_braces(html_text: str) -> str:
    """Write braces as entities so no `{{` ever reaches Anki's template or cloze parser."""
    return html_text.replace("{", "&#123;").replace("}", "&#125;")


_PLAIN_SPECIAL = re.compile(r"[&<>{}]")


def plain(text: str) -> str:
    """Escape plain text (names, ids, topics) for a field."""
    if _PLAIN_SPECIAL.search(text) is None:  # nothing to escape (most values): one scan, not five
        return text
    return escape_braces(html.escape(text, quote=False))


def markdown_images(text: str) -> list[str]:
    """Markdown image syntax in a text (refused by validation: use the `image:` key)."""
    return re.findall(r"!\[[^\]]*\]\([^)]*\)", text)


def figure_html(file_name: str, alt: str, caption: str) -> str:
    """The Figure field: an image that scales to the card and its visible caption."""
    return (
        f'<figure class="db-figure"><img class="diagram" src="{html.escape(file_name)}" '
        f'alt="{html.escape(alt)}"><figcaption>{plain(caption)}</figcaption></figure>'
    )


def related_html(questions: list[tuple[str, str]], label: str, memo: RenderMemo | None = None) -> str:
    """A quiet list of related questions (their text, never bare ids)."""
    if not questions:
        return ""
    render = memo.markdown_html if memo is not None else markdown_html
    items = "".join(f"<li>{render(q, inline=True)}</li>" for _cid, q in questions)
    return f'<div class="db-related-label">{plain(label)}</div><ul class="db-related">{items}</ul>'
