"""The scanners that jump between special characters find what a character-by-character scan finds.

cloze/scan.py and cloze/checks.py skip from one backslash, brace or colon to the next
(search/find in C) instead of stepping through every character in Python.  The reference
scanners below step through every character, as the rules are written; on random text
made mostly of the characters that matter, both give the same deletions, spans and
problems at the same offsets.
"""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from deckbuild.cloze import checks, scan
from deckbuild.cloze.scan import Deletion, MathSpan
from deckbuild.errors import TextProblem

_OPEN = re.compile(r"\{\{c(\d+)::")

PIECES = [
    "\\",
    "{",
    "}",
    ":",
    "::",
    "(",
    ")",
    "[",
    "]",
    "{{c1::",
    "{{c2::",
    "}}",
    "\\(",
    "\\)",
    "\\[",
    "\\]",
    "\\{",
    "x",
    " ",
    "c1",
]
texts = st.lists(st.sampled_from(PIECES), max_size=40).map("".join)


def reference_body(text: str, m: re.Match[str], problems: list[TextProblem]) -> tuple[Deletion | None, int]:
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
            depth += 2
            continue
        if ch == "{":
            depth += 1
        elif ch == "}":
            if depth == 0:
                if text.startswith("}}", i):
                    body_end = hint_start - 2 if hint_start is not None else i
                    hint = text[hint_start:i] if hint_start is not None else None
                    return Deletion(number, text[body_start:body_end], hint, m.start(), body_start, i + 2), i + 2
                problems.append(TextProblem(i, "E401", f"unbalanced braces: '}}' closes nothing inside c{number}"))
            else:
                depth -= 1
        elif ch == ":" and depth == 0 and hint_start is None and text.startswith("::", i):
            hint_start = i + 2
            i += 2
            continue
        i += 1
    problems.append(TextProblem(m.start(), "E407", f"deletion c{number} is not closed with '}}}}'"))
    return None, n


def reference_math(text: str) -> tuple[list[MathSpan], list[TextProblem]]:
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


def reference_braces(latex: str, base: int) -> list[TextProblem]:
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
                problems.append(TextProblem(base + i, "E401", "unbalanced braces: expected no '}', found '}'"))
        i += 1
    problems += [TextProblem(base + off, "E401", "unbalanced braces: expected '}', found end") for off in stack]
    return problems


@settings(max_examples=600)
@given(texts)
def test_deletion_bodies_as_a_character_scan_finds_them(text: str) -> None:
    for m in _OPEN.finditer(text):
        found: list[TextProblem] = []
        expected: list[TextProblem] = []
        assert scan._scan_body(text, m, found) == reference_body(text, m, expected)
        assert found == expected


@settings(max_examples=600)
@given(texts)
def test_math_spans_as_a_character_scan_finds_them(text: str) -> None:
    assert scan.scan_math(text) == reference_math(text)


@settings(max_examples=600)
@given(texts, st.integers(0, 50))
def test_brace_problems_as_a_character_scan_finds_them(text: str, base: int) -> None:
    assert checks._check_braces(text, base) == reference_braces(text, base)


def test_the_examples_reach_every_outcome() -> None:
    """The three scanners' outcomes on hand-picked texts: closed, hinted, nested, unclosed, stray."""
    text = "{{c1::a{b}::h}} {{c2::{{c1::x}}}} \\(a\\) \\[b \\(c {{c3::y"
    outcomes = []
    for m in _OPEN.finditer(text):
        found: list[TextProblem] = []
        expected: list[TextProblem] = []
        deletion, end = scan._scan_body(text, m, found)
        assert (deletion, end) == reference_body(text, m, expected) and found == expected
        outcomes.append(((deletion.body, deletion.hint) if deletion else None, [p.code for p in found]))
    # hinted; holding a nested one; the nested one itself; never closed
    assert outcomes == [(("a{b}", "h"), []), (("{{c1::x}}", None), ["E405"]), (("x", None), []), (None, ["E407"])]
    spans, problems = scan.scan_math(text)
    assert [s.latex for s in spans] == ["a"] and [p.code for p in problems] == ["E411", "E411"]
    assert [p.offset for p in checks._check_braces("}{a\\}", 3)] == [3, 4]
