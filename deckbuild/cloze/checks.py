"""The checks of a formula, a fact and their LaTeX: problems with character offsets (E401-E412)."""

from __future__ import annotations

import re

from deckbuild.cloze.scan import MathSpan, ParsedCloze, Plain, parse_deletions, scan_math
from deckbuild.errors import TextProblem
from deckbuild.mathjax_macros import (
    ENVIRONMENTS,
    FORBIDDEN,
    MACROS,
    SYMBOL_MACROS,
)

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
    """E401 for every '}' that closes nothing and every '{' never closed.

    Only a backslash or a brace matters, so the scan jumps from one to the next.
    """
    problems: list[TextProblem] = []
    stack: list[int] = []
    stop = _BRACE_STOP.search
    i = 0
    while (found := stop(latex, i)) is not None:
        i = found.start()
        ch = latex[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "{":
            stack.append(i)
        elif stack:
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


_BRACE_STOP = re.compile(r"[\\{}]")


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


def math_problems(text: str, base: int = 0) -> list[TextProblem]:
    """Problems of the math in Markdown text (answer, details, context).

    ``$...$`` (E402), unclosed spans (E411) and :func:`validate_math` on every span.
    """
    spans, problems = scan_math(text)
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
    spans, span_problems = scan_math(text)
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
