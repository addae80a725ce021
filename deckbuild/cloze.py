"""Cloze deletions in LaTeX and text: parsing, validation and Anki-safe emission.

Authors write ordinary, balanced LaTeX with ``{{cN::body}}`` / ``{{cN::body::hint}}``
deletions.  Anki's cloze parser is a plain text scanner: a deletion ends at the first ``}}``
and ``::`` starts a hint, so LaTeX like ``\\frac{B}{B_{\\text{base}}}`` breaks a card.  This
module finds deletions with a brace-aware scanner (so the author never escapes anything) and
writes the field HTML with Anki's escaping applied.  Every rule below was checked against the
real Anki backend (tests/test_cloze_cards.py and tests/test_cloze_hypothesis.py):

* inside a deletion, ``}}`` never appears: a space is put between the braces in math mode
  (TeX ignores it) and an HTML comment ``<!-- -->`` in text mode (``\\text{..}``, where a
  space would show; Anki strips HTML inside math before MathJax sees it);
* a deletion body or hint ending in ``}`` gets the same separator before the closing ``}}``;
* ``::`` inside a body becomes ``:<!-- -->:``;
* ``<``, ``>``, ``&`` are HTML-escaped (Anki strips tags inside math, so a bare ``<`` would
  eat the formula);
* hints inside math are wrapped in ``\\text{..}`` so that MathJax shows their spaces.

Everything here is pure (no I/O): problems carry character offsets into the checked text,
and validate.py maps them to file:line:col.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from deckbuild.errors import TextProblem
from deckbuild.mathjax_macros import (
    ENVIRONMENTS,
    FORBIDDEN,
    MACROS,
    SYMBOL_MACROS,
    TEXT_MODE_MACROS,
)
from deckbuild.mathlines import break_lines

ERROR_CODES: dict[str, str] = {
    "E401": "Unbalanced braces in LaTeX: a '{' is never closed or a '}' closes nothing.",
    "E402": "$...$ math: Anki does not treat it as math; write \\( \\) in text or use formula:.",
    "E403": "Cloze numbering must start at c1 and have no gaps (c1, c2, ...).",
    "E404": "Empty deletion: {{cN::}} hides nothing.",
    "E405": "Nested deletion: a {{cN::...}} inside another one; use c1, c2 on disjoint parts.",
    "E406": "Unknown LaTeX macro or environment: MathJax would show it as an error.",
    "E407": "Deletion not closed: '{{cN::' without its '}}'.",
    "E408": "Refused macro (links, loaders, HTML/CSS hooks, macro definitions).",
    "E409": "Hint must be plain text: no '\\', '$', '{', '}' or '::'.",
    "E410": "A deletion and a \\( \\) / \\[ \\] math span overlap without nesting.",
    "E411": "Unclosed math span: '\\(' without '\\)' or '\\[' without '\\]'.",
    "E412": "No deletion: a cloze card needs at least one {{cN::...}}.",
}
"""Cloze/math error codes with one line of documentation each (for the README)."""


@dataclass(frozen=True)
class Plain:
    """Text outside any deletion, ``text[start:end]`` of the parsed input."""

    text: str
    start: int
    end: int


@dataclass(frozen=True)
class Deletion:
    """One ``{{cN::body::hint}}``; offsets point at ``{{``, the body, and past ``}}``."""

    number: int
    body: str
    hint: str | None
    start: int
    body_start: int
    end: int


Segment = Plain | Deletion


@dataclass
class ParsedCloze:
    """The input split into plain text and deletions, plus problems found while scanning."""

    segments: list[Segment] = field(default_factory=list)
    problems: list[TextProblem] = field(default_factory=list)

    @property
    def deletions(self) -> list[Deletion]:
        """The deletions only, in source order."""
        return [s for s in self.segments if isinstance(s, Deletion)]

    def revealed(self) -> str:
        """The text with every deletion shown: what the back of every card displays."""
        return "".join(s.text if isinstance(s, Plain) else s.body for s in self.segments)


_OPEN = re.compile(r"\{\{c(\d+)::")


def parse_deletions(text: str) -> ParsedCloze:
    """Split ``text`` into plain parts and deletions, scanning bodies with brace depth.

    Inside a body, ``\\{``/``\\}`` are skipped, ``::`` at depth 0 starts the hint and ``}}``
    at depth 0 closes the deletion, so bodies hold any balanced LaTeX.
    """
    parsed = ParsedCloze()
    pos = 0
    plain_start = 0
    while True:
        m = _OPEN.search(text, pos)
        if m is None:
            break
        if m.start() > plain_start:
            parsed.segments.append(Plain(text[plain_start : m.start()], plain_start, m.start()))
        deletion, pos = _scan_body(text, m, parsed.problems)
        if deletion is None:  # not closed: the rest is reported and kept as plain text
            plain_start = m.start()
            pos = len(text)
            break
        parsed.segments.append(deletion)
        plain_start = pos
    if plain_start < len(text):
        parsed.segments.append(Plain(text[plain_start:], plain_start, len(text)))
    return parsed


def _scan_body(text: str, m: re.Match[str], problems: list[TextProblem]) -> tuple[Deletion | None, int]:
    """Scan one deletion from its opening match; return it and the offset past ``}}``."""
    number = int(m.group(1))
    body_start = i = m.end()
    depth = 0
    hint_start: int | None = None
    n = len(text)
    while i < n:
        ch = text[i]
        if ch == "\\":
            i += 2
            continue
        if _OPEN.match(text, i):
            problems.append(TextProblem(i, "E405", f"nested deletion inside c{number}"))
            i += 2
            depth += 2  # the inner '{{' pairs with its own '}}'
            continue
        if ch == "{":
            depth += 1
        elif ch == "}":
            if depth == 0:
                if text.startswith("}}", i):
                    body_end = hint_start - 2 if hint_start is not None else i
                    body = text[body_start:body_end]
                    hint = text[hint_start:i] if hint_start is not None else None
                    return (
                        Deletion(number, body, hint, m.start(), body_start, i + 2),
                        i + 2,
                    )
                problems.append(
                    TextProblem(
                        i,
                        "E401",
                        f"unbalanced braces: '}}' closes nothing inside c{number}",
                    )
                )
            else:
                depth -= 1
        elif ch == ":" and depth == 0 and hint_start is None and text.startswith("::", i):
            hint_start = i + 2
            i += 2
            continue
        i += 1
    problems.append(TextProblem(m.start(), "E407", f"deletion c{number} is not closed with '}}}}'"))
    return None, n


def cloze_numbers(text: str) -> set[int]:
    """The distinct cloze numbers used: Anki makes exactly one card per number."""
    return {d.number for d in parse_deletions(text).deletions}


# --------------------------------------------------------------------------- validation


_MACRO = re.compile(r"\\([A-Za-z]+|.|\n|$)", re.DOTALL)
_BEGIN_END = re.compile(r"\\(begin|end)\s*\{([^{}]*)\}")


def validate_math(latex: str, base: int = 0) -> list[TextProblem]:
    """Problems in one LaTeX math string (no delimiters, no deletions).

    Checks brace balance (E401), stray ``$`` (E402), unknown macros/environments (E406) and
    refused macros (E408).  ``base`` is added to every offset.
    """
    problems: list[TextProblem] = []
    problems += _check_braces(latex, base)
    for m in _MACRO.finditer(latex):
        name = m.group(1)
        off = base + m.start()
        if name == "":
            problems.append(TextProblem(off, "E401", "a lone '\\' ends the formula"))
        elif len(name) == 1 and not name.isalpha():
            if name not in SYMBOL_MACROS and not name.isspace():
                problems.append(TextProblem(off, "E406", f"unknown control symbol '\\{name}'"))
        elif name in FORBIDDEN or name.startswith("html"):
            problems.append(TextProblem(off, "E408", f"macro '\\{name}' is refused"))
        elif name not in MACROS:
            problems.append(TextProblem(off, "E406", f"unknown macro '\\{name}' for MathJax"))
    for m in _BEGIN_END.finditer(latex):
        if m.group(2).strip() not in ENVIRONMENTS:
            problems.append(TextProblem(base + m.start(), "E406", f"unknown environment '{m.group(2)}'"))
    for m in re.finditer(r"(?<!\\)\$", latex):
        problems.append(TextProblem(base + m.start(), "E402", "'$' in math: use \\$ for a dollar sign"))
        break
    return problems


def _check_braces(latex: str, base: int) -> list[TextProblem]:
    """E401 for every '}' that closes nothing and every '{' never closed."""
    problems: list[TextProblem] = []
    stack: list[int] = []
    i = 0
    while i < len(latex):
        ch = latex[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "{":
            stack.append(i)
        elif ch == "}":
            if stack:
                stack.pop()
            else:
                problems.append(
                    TextProblem(
                        base + i,
                        "E401",
                        "unbalanced braces: expected no '}', found '}'",
                    )
                )
        i += 1
    for off in stack:
        problems.append(TextProblem(base + off, "E401", "unbalanced braces: expected '}', found end"))
    return problems


def _check_deletions(parsed: ParsedCloze) -> list[TextProblem]:
    """Numbering (E403), empty bodies (E404), hints (E409), at least one deletion (E412)."""
    problems: list[TextProblem] = []
    dels = parsed.deletions
    if not dels and not any(p.code == "E407" for p in parsed.problems):
        problems.append(TextProblem(0, "E412", "no {{c1::...}} deletion"))
    for d in dels:
        if not d.body.strip():
            problems.append(TextProblem(d.start, "E404", f"deletion c{d.number} is empty"))
        if d.hint is not None and (not d.hint.strip() or re.search(r"[\\${}]|::", d.hint)):
            problems.append(
                TextProblem(
                    d.body_start + len(d.body) + 2,
                    "E409",
                    f"hint {d.hint!r} is not plain text",
                )
            )
    numbers = sorted({d.number for d in dels})
    if numbers and numbers != list(range(1, len(numbers) + 1)):
        first_bad = next((d for d in dels if d.number > len(numbers) or d.number < 1), dels[0])
        problems.append(
            TextProblem(
                first_bad.start,
                "E403",
                "cloze numbers {}: must be c1..cN without gaps".format(", ".join(f"c{n}" for n in numbers)),
            )
        )
    return problems


def _dollar_problems(text: str) -> list[TextProblem]:
    """E402 for ``$...$`` pairs in Markdown text (a single currency '$' is fine)."""
    m = re.search(r"(?<!\\)\$[^$\n]+?(?<!\\)\$", text)
    if m:
        return [
            TextProblem(
                m.start(),
                "E402",
                "$...$ is not math in Anki: write \\( ... \\) instead",
            )
        ]
    return []


def validate_formula(text: str) -> list[TextProblem]:
    """All problems of a ``formula:`` value (LaTeX with deletions), offsets into ``text``."""
    parsed = parse_deletions(text)
    problems = list(parsed.problems) + _check_deletions(parsed)
    if re.search(r"(?<!\\)\$", text):
        off = re.search(r"(?<!\\)\$", text).start()  # type: ignore[union-attr]
        problems.append(TextProblem(off, "E402", "$ in a formula: write plain LaTeX, deckbuild adds \\[ \\]"))
    if re.search(r"\\[\[\]()]", _mask_escapes(text)):
        off = re.search(r"\\[\[\]()]", _mask_escapes(text)).start()  # type: ignore[union-attr]
        problems.append(
            TextProblem(
                off,
                "E402",
                "math delimiters in a formula: deckbuild adds \\[ \\] itself",
            )
        )
    if any(p.code in ("E407",) for p in problems):
        return _sorted(problems)
    revealed, offsets = _revealed_with_offsets(parsed)
    for p in validate_math(revealed):
        if p.code != "E402":
            problems.append(TextProblem(offsets[p.offset], p.code, p.message))
    for d in parsed.deletions:  # every body must be a balanced subtree on its own
        for p in _check_braces(d.body, d.body_start):
            problems.append(p)
    return _sorted(problems)


def _mask_escapes(text: str) -> str:
    """Blank out ``\\\\`` pairs so ``\\\\[2pt]`` is not taken for a delimiter."""
    return text.replace("\\\\", "  ")


def _revealed_with_offsets(parsed: ParsedCloze) -> tuple[str, list[int]]:
    """The revealed text and, per character, its offset in the original (plus end)."""
    out: list[str] = []
    offsets: list[int] = []
    end = 0
    for s in parsed.segments:
        if isinstance(s, Plain):
            out.append(s.text)
            offsets.extend(range(s.start, s.end))
            end = s.end
        else:
            out.append(s.body)
            offsets.extend(range(s.body_start, s.body_start + len(s.body)))
            end = s.end
    offsets.append(end)
    return "".join(out), offsets


def _sorted(problems: list[TextProblem]) -> list[TextProblem]:
    """Problems in source order, duplicates removed."""
    return sorted(set(problems), key=lambda p: (p.offset, p.code, p.message))


# ----------------------------------------------------------------------------- math spans


@dataclass(frozen=True)
class MathSpan:
    """``text[start:end]`` is ``\\(latex\\)`` or ``\\[latex\\]``."""

    start: int
    end: int
    latex: str
    display: bool


def find_math_spans(text: str) -> list[tuple[int, int, str, bool]]:
    """``(start, end, latex, display)`` for every ``\\( \\)`` / ``\\[ \\]`` span in text.

    ``text[start:end]`` includes the delimiters.  ``\\\\`` pairs are skipped so a LaTeX line
    break never opens a span.  An unclosed span is not returned (see :func:`math_problems`).
    """
    spans, _ = _scan_math(text)
    return [(s.start, s.end, s.latex, s.display) for s in spans]


def _scan_math(text: str) -> tuple[list[MathSpan], list[TextProblem]]:
    """Math spans plus E411 for delimiters that never close."""
    spans: list[MathSpan] = []
    problems: list[TextProblem] = []
    i = 0
    n = len(text)
    while i < n:
        if text[i] == "\\" and i + 1 < n:
            nxt = text[i + 1]
            if nxt in "([":
                close = "\\)" if nxt == "(" else "\\]"
                j = i + 2
                while j < n:
                    if text[j] == "\\" and text.startswith(close, j):
                        break
                    j += 2 if text[j] == "\\" else 1
                if j >= n:
                    problems.append(TextProblem(i, "E411", f"'\\{nxt}' is never closed"))
                    i += 2
                    continue
                spans.append(MathSpan(i, j + 2, text[i + 2 : j], nxt == "["))
                i = j + 2
                continue
            i += 2
            continue
        i += 1
    return spans, problems


def math_problems(text: str, base: int = 0) -> list[TextProblem]:
    """Problems of the math in Markdown text (answer, details, context).

    ``$...$`` (E402), unclosed spans (E411) and :func:`validate_math` on every span.
    """
    spans, problems = _scan_math(text)
    problems = [TextProblem(p.offset + base, p.code, p.message) for p in problems]
    masked = _blank_spans(text, spans)
    problems += [TextProblem(p.offset + base, p.code, p.message) for p in _dollar_problems(masked)]
    for s in spans:
        problems += validate_math(s.latex, base + s.start + 2)
    return _sorted(problems)


def _blank_spans(text: str, spans: list[MathSpan]) -> str:
    """Text with math spans replaced by spaces (same length, so offsets stay valid)."""
    chars = list(text)
    for s in spans:
        chars[s.start : s.end] = " " * (s.end - s.start)
    return "".join(chars)


def validate_fact(text: str) -> list[TextProblem]:
    """All problems of a ``fact:`` value: Markdown with deletions and ``\\( \\)`` math."""
    parsed = parse_deletions(text)
    problems = list(parsed.problems) + _check_deletions(parsed)
    if any(p.code == "E407" for p in problems):
        return _sorted(problems)
    spans, span_problems = _scan_math(text)
    problems += span_problems
    for s in spans:
        for d in parsed.deletions:
            inside_span = s.start < d.start and d.end <= s.end
            span_inside = d.body_start <= s.start and s.end <= d.body_start + len(d.body)
            disjoint = d.end <= s.start or s.end <= d.start
            if not (inside_span or span_inside or disjoint):
                problems.append(TextProblem(d.start, "E410", f"deletion c{d.number} crosses a math span"))
        inner = parse_deletions(s.latex)
        revealed, offsets = _revealed_with_offsets(inner)
        for p in validate_math(revealed):
            problems.append(TextProblem(s.start + 2 + offsets[p.offset], p.code, p.message))
    problems += _dollar_problems(_blank_spans(text, spans))
    return _sorted(problems)


# -------------------------------------------------------------------------------- emission


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
    spans, _ = _scan_math(text)
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
