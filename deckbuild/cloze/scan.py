"""The brace-aware scanner: cloze deletions and math spans found in a text, with their offsets."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from deckbuild.errors import TextProblem


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
    """Scan one deletion from its opening match; return it and the offset past ``}}``.

    Only a backslash, a brace or a colon can change the scan, so it jumps from one to the next.
    """
    number = int(m.group(1))
    body_start = i = m.end()
    depth = 0
    hint_start: int | None = None
    n = len(text)
    stop = _BODY_STOP.search
    while True:
        found = stop(text, i)
        if found is None:
            break
        i = found.start()
        ch = text[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "{":
            if _OPEN.match(text, i):
                problems.append(TextProblem(i, "E405", f"nested deletion inside c{number}"))
                i += 2
                depth += 2  # the inner '{{' pairs with its own '}}'
                continue
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
        elif depth == 0 and hint_start is None and text.startswith("::", i):
            hint_start = i + 2
            i += 2
            continue
        i += 1
    problems.append(TextProblem(m.start(), "E407", f"deletion c{number} is not closed with '}}}}'"))
    return None, n


_BODY_STOP = re.compile(r"[\\{}:]")


def cloze_numbers(text: str) -> set[int]:
    """The distinct cloze numbers used: Anki makes exactly one card per number."""
    return {d.number for d in parse_deletions(text).deletions}


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
    spans, _ = scan_math(text)
    return [(s.start, s.end, s.latex, s.display) for s in spans]


def scan_math(text: str) -> tuple[list[MathSpan], list[TextProblem]]:
    """Math spans plus E411 for delimiters that never close.

    Only a backslash can open or close a span, so the scan jumps from one to the next.
    """
    spans: list[MathSpan] = []
    problems: list[TextProblem] = []
    n = len(text)
    i = text.find("\\")
    while 0 <= i < n - 1:
        nxt = text[i + 1]
        if nxt in "([":
            close = "\\)" if nxt == "(" else "\\]"
            j = i + 2
            while j < n:
                j = text.find("\\", j)
                if j < 0:
                    j = n
                elif text.startswith(close, j):
                    break
                else:
                    j += 2
            if j >= n:
                problems.append(TextProblem(i, "E411", f"'\\{nxt}' is never closed"))
                i = text.find("\\", i + 2)
                continue
            spans.append(MathSpan(i, j + 2, text[i + 2 : j], nxt == "["))
            i = text.find("\\", j + 2)
            continue
        i = text.find("\\", i + 2)
    return spans, problems
