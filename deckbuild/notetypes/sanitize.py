"""HTML fields (`{html: ...}`) made safe for a card: no script, no event handlers, no remote loads.

A field kept as HTML (typically one adopted from an existing deck) is re-emitted tag by
tag: markup that is already safe comes out byte for byte as written, so an adopted
field keeps its text; what could run script or load from the network is dropped, and
each removal is reported so the build can say so.
"""

from __future__ import annotations

import html
import html.entities
import re
from html.parser import HTMLParser

DROPPED_WITH_CONTENT = frozenset(
    {
        "script", "style", "iframe", "frame", "frameset", "object", "embed", "applet", "noscript",
        "template", "noembed", "noframes", "xmp", "plaintext", "title", "textarea", "select",
    }
)  # fmt: skip
"""Elements removed with everything inside them."""

DROPPED_TAGS = frozenset({"base", "meta", "link", "form", "input", "button", "html", "head", "body", "svg", "math"})
"""Elements whose tags are removed (their text stays): they load, submit or escape the card."""

_URL_ATTRIBUTES = frozenset(
    {
        "href",
        "src",
        "xlink:href",
        "action",
        "formaction",
        "data",
        "poster",
        "background",
        "srcset",
        "cite",
        "longdesc",
        "lowsrc",
        "dynsrc",
        "ping",
    }
)
_LOADING_ATTRIBUTES = frozenset({"src", "srcset", "poster", "background", "data", "lowsrc", "dynsrc", "xlink:href", "ping"})
_BAD_SCHEME = re.compile(r"^(javascript|vbscript|data|file|livescript):", re.IGNORECASE)
_REMOTE = re.compile(r"^([a-z][a-z0-9+.-]*:)?//", re.IGNORECASE)
_CSS_LOAD = re.compile(r"url\s*\(|expression\s*\(|@import|behavior\s*:|-moz-binding", re.IGNORECASE)
_SPACE_OR_CONTROL = re.compile(r"[\x00-\x20\x7f]+")
_PLAIN_TAG = re.compile(
    r"""<[A-Za-z][A-Za-z0-9-]*(?:[ \t\n]+[A-Za-z_:][A-Za-z0-9_.:-]*(?:[ \t\n]*=[ \t\n]*(?:"[^"<]*"|'[^'<]*'|[^\s"'=<>`/]+))?)*[ \t\n]*/?>"""
)
"""A start tag in the plain form every parser (Python's, browsers') splits into the same attributes."""


def _scheme_text(value: str) -> str:
    """A URL as a browser reads its scheme: entities decoded, spaces and control characters gone."""
    return _SPACE_OR_CONTROL.sub("", html.unescape(value))


def unsafe_attribute(tag: str, name: str, value: str | None) -> str | None:
    """Why this attribute must go (a short reason), or None if it may stay."""
    if name.startswith("on"):
        return f"event handler '{name}'"
    if value is None:
        return None
    if name == "style" and _CSS_LOAD.search(html.unescape(value)):
        return "style that loads or runs something"
    if name in _URL_ATTRIBUTES:
        url = _scheme_text(value)
        if name == "srcset":
            urls = [part.strip().split(" ")[0] for part in html.unescape(value).split(",")]
        else:
            urls = [url]
        for one in urls:
            one = _SPACE_OR_CONTROL.sub("", one)
            if _BAD_SCHEME.match(one) and not (tag == "img" and name == "src" and one.lower().startswith("data:image/")):
                return f"{name}={one.split(':', 1)[0]}: URL"
            if (name in _LOADING_ATTRIBUTES or (tag == "link" and name == "href")) and _REMOTE.match(one):
                return f"remote load {name}={one[:60]!r}"
    return None


class _Sanitizer(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=False)
        self.out: list[str] = []
        self.removed: list[str] = []
        self._skip: list[str] = []  # open elements dropped with their content

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._start(tag, attrs, self.get_starttag_text() or "", closed=False)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._start(tag, attrs, self.get_starttag_text() or "", closed=True)

    def _start(self, tag: str, attrs: list[tuple[str, str | None]], raw: str, closed: bool) -> None:
        if self._skip:
            if tag == self._skip[-1] and not closed:
                self._skip.append(tag)
            return
        if tag in DROPPED_WITH_CONTENT:
            self.removed.append(f"<{tag}>")
            if not closed:
                self._skip.append(tag)
            return
        if tag in DROPPED_TAGS or not re.fullmatch(r"[a-z][a-z0-9-]*", tag):
            self.removed.append(f"<{tag}>")
            return
        kept: list[tuple[str, str | None]] = []
        for name, value in attrs:
            why = unsafe_attribute(tag, name, value)
            if why is None and re.fullmatch(r"[a-z_:][a-z0-9_.:-]*", name):
                kept.append((name, value))
            else:
                self.removed.append(why or f"attribute {name!r}")
        if len(kept) == len(attrs) and _PLAIN_TAG.fullmatch(raw):
            self.out.append(raw)  # a tag every HTML parser reads alike: kept byte for byte
            return
        parts = [tag] + [name if value is None else f'{name}="{html.escape(value)}"' for name, value in kept]
        self.out.append("<" + " ".join(parts) + ("/>" if closed else ">"))

    def handle_endtag(self, tag: str) -> None:
        if self._skip:
            if tag == self._skip[-1]:
                self._skip.pop()
            return
        if tag in DROPPED_WITH_CONTENT or tag in DROPPED_TAGS or not re.fullmatch(r"[a-z][a-z0-9-]*", tag):
            return
        self.out.append(f"</{tag}>")

    def handle_data(self, data: str) -> None:
        if not self._skip:
            # A '<' the parser read as text is written as an entity, so no browser can read a tag there.
            self.out.append(data.replace("<", "&lt;"))

    def handle_entityref(self, name: str) -> None:
        if not self._skip:
            self.out.append(f"&{name};")

    def handle_charref(self, name: str) -> None:
        if not self._skip:
            self.out.append(f"&#{name};")

    def handle_comment(self, data: str) -> None:
        if self._skip:
            return
        if "<" in data or ">" in data:  # old IE conditional comments hold markup
            self.removed.append("comment with markup")
        else:
            self.out.append(f"<!--{data}-->")

    def handle_decl(self, decl: str) -> None:
        self.removed.append("declaration")

    def handle_pi(self, data: str) -> None:
        self.removed.append("processing instruction")

    def unknown_decl(self, data: str) -> None:
        self.removed.append("declaration")


# Named references a browser decodes without a ';' (HTML's legacy ones: &amp &lt &copy ...).
_LEGACY_NAMES = tuple(sorted((k for k in html.entities.html5 if not k.endswith(";")), key=len, reverse=True))
_NAMED_WITH_SEMICOLON = re.compile(r"[A-Za-z][A-Za-z0-9]*;")


def escape_bare_ampersands(field_html: str) -> str:
    """`&` that starts no character reference written as `&amp;`: a browser shows both alike.

    Anki's editor writes `&amp;`, but fields made by other tools hold a bare `&` ("AT&T"),
    which an HTML parser may read as an unfinished reference (Python's drops or completes
    it).  A `&` that does start a reference (`&#..`, `&name;`, a legacy `&lt`), or is followed
    by no letter, is left alone.
    """
    if "&" not in field_html:
        return field_html
    parts = field_html.split("&")
    out = [parts[0]]
    for part in parts[1:]:
        # Only a letter after it makes a parser take a bare '&' for a reference ("& b", "&&" are text).
        bare = part[:1].isascii() and part[:1].isalpha()
        if bare and (_NAMED_WITH_SEMICOLON.match(part) is not None or part.startswith(_LEGACY_NAMES)):
            bare = False
        out.append(("&amp;" if bare else "&") + part)
    return "".join(out)


def sanitize_html(text: str) -> tuple[str, list[str]]:
    """The field's HTML with everything unsafe removed, and what was removed (empty: unchanged).

    Bare ampersands are escaped first (escape_bare_ampersands): the parser would otherwise
    drop the '&' of "AT&T" and the learner would read "ATT".
    """
    parser = _Sanitizer()
    parser.feed(escape_bare_ampersands(text))
    parser.close()
    return "".join(parser.out), parser.removed
