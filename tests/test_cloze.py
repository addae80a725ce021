"""Unit tests of deckbuild.cloze: parsing, validation codes, emission (no Anki needed)."""

from __future__ import annotations

import markdown
import pytest

from deckbuild.cloze import ERROR_CODES
from deckbuild.cloze.checks import math_problems, validate_fact, validate_formula, validate_math
from deckbuild.cloze.emit import render_fact, to_anki_formula
from deckbuild.cloze.scan import Deletion, Plain, cloze_numbers, find_math_spans, parse_deletions


def codes(problems: list) -> list[str]:
    return [p.code for p in problems]


def test_parse_balanced_body_with_hint_and_offsets() -> None:
    text = r"\eta = {{c1::\frac{B}{B_{\text{base}}}::ratio}} + x"
    parsed = parse_deletions(text)
    assert parsed.problems == []
    plain1, deletion, plain2 = parsed.segments
    assert isinstance(plain1, Plain) and plain1.text == r"\eta = "
    assert isinstance(deletion, Deletion)
    assert deletion.number == 1
    assert deletion.body == r"\frac{B}{B_{\text{base}}}"
    assert deletion.hint == "ratio"
    assert text[deletion.start : deletion.end] == r"{{c1::\frac{B}{B_{\text{base}}}::ratio}}"
    assert text[deletion.body_start :].startswith(r"\frac")
    assert isinstance(plain2, Plain) and plain2.text == " + x"
    assert parsed.revealed() == r"\eta = \frac{B}{B_{\text{base}}} + x"


def test_escaped_braces_do_not_count() -> None:
    parsed = parse_deletions(r"{{c1::\{0..C-1\}^{B}}}")
    assert parsed.problems == []
    assert parsed.deletions[0].body == r"\{0..C-1\}^{B}"


def test_double_colon_inside_group_is_not_a_hint() -> None:
    (d,) = parse_deletions(r"{{c1::\text{a::b}}}").deletions
    assert d.body == r"\text{a::b}" and d.hint is None


def test_cloze_numbers() -> None:
    assert cloze_numbers("{{c1::a}} {{c2::b}} {{c1::c}}") == {1, 2}
    assert cloze_numbers("nothing") == set()


@pytest.mark.parametrize(
    ("formula", "code"),
    [
        (r"\frac{a}{ {{c1::b}}", "E401"),
        (r"{{c1::a}} }", "E401"),
        (r"$x$ + {{c1::a}}", "E402"),
        (r"\( x \) {{c1::a}}", "E402"),
        (r"{{c2::a}}", "E403"),
        (r"{{c1::a}} {{c3::b}}", "E403"),
        (r"{{c1::  }}", "E404"),
        (r"{{c1::a {{c2::b}} }}", "E405"),
        (r"\foo + {{c1::a}}", "E406"),
        (r"\begin{foo} x \end{foo} {{c1::a}}", "E406"),
        (r"{{c1::a", "E407"),
        (r"{{c1::\frac{a}{b}", "E407"),
        (r"\href{http://x}{y} {{c1::a}}", "E408"),
        (r"\require{action} {{c1::a}}", "E408"),
        (r"\htmlClass{x}{y} {{c1::a}}", "E408"),
        (r"{{c1::a::\text{h}}}", "E409"),
        (r"x + y", "E412"),
    ],
)
def test_validate_formula_codes(formula: str, code: str) -> None:
    assert code in codes(validate_formula(formula))


def test_problem_offsets_point_at_the_culprit() -> None:
    text = r"a + {{c1::\oops{x}}}"
    (p,) = validate_formula(text)
    assert p.code == "E406" and text[p.offset :].startswith(r"\oops")


def test_valid_formula_has_no_problems() -> None:
    assert validate_formula(r"\eta = \eta_{\text{base}} \cdot {{c1::\frac{B}{B_{\text{base}}}}}") == []


def test_every_code_is_documented_in_one_line() -> None:
    assert sorted(ERROR_CODES) == [f"E4{n:02d}" for n in range(1, 13)]
    assert all("\n" not in doc and doc.endswith(".") for doc in ERROR_CODES.values())


def test_validate_fact() -> None:
    assert validate_fact(r"Decay is \(\alpha \sim {{c1::0.999}}\).") == []
    assert validate_fact(r"Costs $5 and {{c1::3}} more.") == []  # a lone '$' is currency
    assert "E402" in codes(validate_fact(r"Use $x$ and {{c1::3}}."))
    assert "E410" in codes(validate_fact(r"Cross {{c1::a \(x}} \) y"))
    assert "E411" in codes(validate_fact(r"Open \(x {{c1::a}}"))
    assert "E406" in codes(validate_fact(r"Bad \(\nope\) {{c1::a}}"))


def test_find_math_spans_and_validate_math() -> None:
    text = r"Inline \(a^{2}\) and display \[\frac{1}{2}\] and \\( not math"
    spans = find_math_spans(text)
    assert [(s[2], s[3]) for s in spans] == [("a^{2}", False), (r"\frac{1}{2}", True)]
    assert text[spans[0][0] : spans[0][1]] == r"\(a^{2}\)"
    assert validate_math(r"\frac{1}{2}") == []
    assert codes(validate_math(r"\frac{1}{2")) == ["E401"]
    assert codes(math_problems(r"Answer \(\url{x}\) here")) == ["E408"]


@pytest.mark.parametrize(
    ("formula", "expected"),
    [
        # Every math deletion is wrapped in \class{db-cN}{...}: card N's CSS highlights it on the back.
        # '}}' inside a body is split by a space in math mode; a trailing '}' is separated.
        (
            r"x = {{c1::\frac{B}{B_{\text{base}}}}}",
            r"\[ x = {{c1::\class{db-c1}{\frac{B}{B_{\text{base} } } } }} \]",
        ),
        # Text mode: a space would show, so an HTML comment (Anki strips it in math).
        (
            r"\text{x {{c1::\textbf{a}}} b}",
            r"\[ \text{x {{c1::\textbf{a}<!-- -->}} b} \]",
        ),
        # '::' in a body (inside a group, so not a hint) is split by a comment.
        (r"{{c1::\text{a::b}}}", r"\[ {{c1::\class{db-c1}{\text{a:<!-- -->:b} } }} \]"),
        # Hints in math are wrapped in \text so their spaces show.
        (r"{{c1::a::two words}}", r"\[ {{c1::\class{db-c1}{a}::\text{two words} }} \]"),
        # <, >, & are HTML-escaped (Anki strips tags inside math).
        (r"a < {{c1::b & c}}", r"\[ a &lt; {{c1::\class{db-c1}{b &amp; c} }} \]"),
        # A deletion right after '{' is separated from it.
        (r"\sqrt{{{c1::x}}}", r"\[ \sqrt{ {{c1::\class{db-c1}{x} }} } \]"),
        # Author-marked breaks: a top-level \\ makes a multi-line display, aligned at a top-level &.
        (r"a &= {{c1::b}} \\ &= c", r"\[ \begin{aligned} a &amp;= {{c1::\class{db-c1}{b} }} \\ &amp;= c \end{aligned} \]"),
        (r"a = b \\ {{c2::c}}", r"\[ \begin{gathered} a = b \\ {{c2::\class{db-c2}{c} }} \end{gathered} \]"),
        # \\ inside an environment is the environment's own.
        (r"\begin{cases} a \\ b \end{cases}", r"\[ \begin{cases} a \\ b \end{cases} \]"),
    ],
)
def test_to_anki_formula(formula: str, expected: str) -> None:
    assert to_anki_formula(formula) == expected


def test_render_fact_protects_math_and_deletions_from_markdown() -> None:
    text = r"**Decay** \(\alpha \sim {{c1::0.999}}\), {{c2::*x*::hint & co}} and {{c3::\(a^{2}\)}}"
    # Bodies stay Markdown; '*' (not '_', which is intraword next to a placeholder).
    out = render_fact(text, markdown.markdown)
    assert out == (
        r"<p><strong>Decay</strong> \(\alpha \sim {{c1::\class{db-c1}{0.999} }}\), "
        r"{{c2::<em>x</em>::hint &amp; co}} and {{c3::\(a^{2}\)}}</p>"
    )


def test_render_fact_breaks_double_braces_in_deletions() -> None:
    out = render_fact(r"Set {{c1::\(\{a^{b^{c}}\}\)}} here", markdown.markdown)
    assert "{{c1::\\(\\{a^{b^{c} }\\}\\)}}" in out
