"""Anki-safe emission: a formula or a fact written as field HTML with Anki's cloze escaping applied."""

from __future__ import annotations

import html
import re
from collections.abc import Callable

from deckbuild.cloze.scan import Deletion, ParsedCloze, Plain, parse_deletions, scan_math
from deckbuild.mathjax_macros import (
    TEXT_MODE_MACROS,
)
from deckbuild.mathlines import break_lines

_COMMENT = "<!-- -->"


class _Emitter:
    """Writes LaTeX for Anki, tracking math/text mode to choose the safe separator."""

    def __init__(self, text_mode: bool = False) -> None:
        self.out: list[str] = []
        self.modes: list[bool] = [text_mode]  # True = text mode, per brace group
        self.pending_text = False

    def sep(self) -> str:
        """A separator invisible in the current mode (space in math, comment in text)."""
        return _COMMENT if self.modes[-1] else " "

    def last(self) -> str:
        """The last emitted character (ignoring nothing: separators count)."""
        for piece in reversed(self.out):
            if piece:
                return piece[-1]
        return ""

    def latex(self, s: str, in_cloze: bool) -> None:
        """Emit LaTeX, HTML-escaped; inside a deletion never let ``}}`` or ``::`` appear."""
        i = 0
        while i < len(s):
            ch = s[i]
            if ch == "\\":
                m = re.match(r"\\([A-Za-z]+|.?)", s[i:], re.DOTALL)
                assert m is not None
                token = m.group(0)
                self.pending_text = m.group(1) in TEXT_MODE_MACROS
                self.out.append(html.escape(token, quote=False))
                i += len(token)
                continue
            if ch == "{":
                self.modes.append(self.pending_text or self.modes[-1])
                self.pending_text = False
                self.out.append("{")
            elif ch == "}":
                if in_cloze and self.last() == "}":
                    self.out.append(self.sep())
                if len(self.modes) > 1:
                    self.modes.pop()
                self.out.append("}")
            elif ch == ":":
                if in_cloze and self.last() == ":":
                    self.out.append(_COMMENT)
                self.out.append(":")
            else:
                if not ch.isspace():
                    self.pending_text = False
                self.out.append(html.escape(ch, quote=False))
            i += 1

    def deletion(self, d: Deletion) -> None:
        """Emit one deletion with its hint, separated from neighbouring braces."""
        if self.last() == "{":
            self.out.append(self.sep())
        self.out.append(f"{{{{c{d.number}::")
        if self.modes[-1]:
            self.latex(d.body, in_cloze=True)
        else:
            # Anki marks a revealed deletion inside math with nothing, so deckbuild classes it
            # itself; the card CSS colours db-cN on card N only (notetypes.cloze_css).
            self.latex(f"\\class{{db-c{d.number}}}{{{d.body}}}", in_cloze=True)
        if d.hint is not None:
            if self.last() == ":":
                self.out.append(_COMMENT)
            hint = html.escape(d.hint.strip(), quote=False)
            self.out.append("::" + (hint if self.modes[-1] else f"\\text{{{hint}}}"))
        if self.last() in "}:":
            self.out.append(self.sep())
        self.out.append("}}")

    def segments(self, parsed: ParsedCloze) -> None:
        """Emit every segment; a plain part starting with '}' after a deletion is separated."""
        for seg in parsed.segments:
            if isinstance(seg, Plain):
                if seg.text.startswith("}") and self.last() == "}":
                    self.out.append(self.sep())
                self.latex(seg.text, in_cloze=False)
            else:
                self.deletion(seg)

    def text(self) -> str:
        """Everything emitted so far."""
        return "".join(self.out)


def to_anki_formula(formula: str) -> str:
    """The Text field HTML of a ``formula:`` card: ``\\[ ... \\]`` with Anki-safe deletions.

    Assumes :func:`validate_formula` found no problems.
    """
    return "\\[ " + break_lines(_emit_math(formula)) + " \\]"


def _emit_math(latex: str, in_cloze: bool = False) -> str:
    """LaTeX with deletions emitted for Anki; ``in_cloze`` when the whole span is deleted."""
    em = _Emitter()
    parsed = parse_deletions(latex)
    if in_cloze:
        em.latex(latex, in_cloze=True)
    else:
        em.segments(parsed)
    return em.text()


_PH = "zqdbk%s%dkbdqz"
_PH_RE = re.compile(r"zqdbk([OHCM])(\d+)kbdqz")


def render_fact(text: str, markdown_to_html: Callable[[str], str]) -> str:
    """Render ``fact:`` Markdown to field HTML with deletions and math intact.

    Markdown would eat ``\\(`` (an escaped parenthesis) and may rewrite ``{{``/``}}``, so
    math spans and deletion markers are swapped for inert alphanumeric placeholders before
    ``markdown_to_html`` runs and restored afterwards, with Anki's cloze escaping applied.
    Deletion bodies outside math stay Markdown (``{{c1::**Adam**}}`` is bold).
    Assumes :func:`validate_fact` found no problems.
    """
    parsed = parse_deletions(text)
    spans, _ = scan_math(text)
    pieces: dict[str, str] = {}
    edits: list[tuple[int, int, str, str]] = []  # (start, end, kind, value)
    for s in spans:
        in_deletion = any(d.body_start <= s.start and s.end <= d.body_start + len(d.body) for d in parsed.deletions)
        open_, close = ("\\[ ", " \\]") if s.display else ("\\(", "\\)")
        edits.append((s.start, s.end, "M", open_ + _emit_math(s.latex, in_deletion) + close))
    for d in parsed.deletions:
        if any(s.start < d.start and d.end <= s.end for s in spans):
            continue  # emitted with its math span
        body_end = d.body_start + len(d.body)
        edits.append((d.start, d.body_start, "O", f"{{{{c{d.number}::"))
        if d.hint is not None:
            hint = "::" + html.escape(d.hint.strip(), quote=False)
            edits.append((body_end, d.end - 2, "H", hint))
        edits.append((d.end - 2, d.end, "C", "}}"))
    out: list[str] = []
    pos = 0
    for start, end, kind, value in sorted(edits):
        key = _PH % (kind, len(pieces))
        pieces[key] = value
        out.append(text[pos:start])
        out.append(key)
        pos = end
    out.append(text[pos:])
    return _restore(markdown_to_html("".join(out)), pieces)


def _restore(rendered: str, pieces: dict[str, str]) -> str:
    """Put placeholders back; inside deletions break any ``}}`` / ``::`` with a comment."""
    out: list[str] = []
    in_deletion = False
    pos = 0
    for m in _PH_RE.finditer(rendered):
        chunk = rendered[pos : m.start()]
        value = pieces[m.group(0)]
        kind = m.group(1)
        if in_deletion:
            chunk = _break_markers(chunk)
        out.append(chunk)
        if kind == "O":
            in_deletion = True
        elif kind in "HC" and in_deletion:
            if _ends_with(out, "}:"):
                out.append(_COMMENT)
            if kind == "C":
                in_deletion = False
        out.append(value)
        pos = m.end()
    out.append(rendered[pos:])
    return "".join(out)


def _ends_with(out: list[str], chars: str) -> bool:
    """Whether the joined output ends with one of ``chars``."""
    for piece in reversed(out):
        if piece:
            return piece[-1] in chars
    return False


def _break_markers(chunk: str) -> str:
    """Break ``}}`` and ``::`` in deletion HTML with an invisible comment."""
    while "}}" in chunk or "::" in chunk:
        chunk = chunk.replace("}}", "}" + _COMMENT + "}").replace("::", ":" + _COMMENT + ":")
    return chunk
