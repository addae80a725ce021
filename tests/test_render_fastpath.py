"""The fast paths of render.py give exactly Python-Markdown's output.

Whenever `_plain_fast` (plain text) or `_subset_html` (one paragraph or flat `- ` list
with strong, em, code and math) accepts a text, the fast rendering must be byte-equal to
the full Python-Markdown rendering, block and inline.  The texts come from an alphabet of the
characters and tokens Markdown reacts to (emphasis, code, links, escapes, math, entities,
raw HTML, autolinks, list/heading/quote/fence/rule/table starts, indentation, trailing
spaces, blank lines, tabs, odd whitespace, Markdown's own placeholder characters), so the
property test also hunts for texts the fast path wrongly accepts.  Every text of the
shipped deck is checked the same way.  The subset's own texts are built from its edges
(star runs, backticks, underscores, list markers, lazy and indented lines, trailing
spaces, blank lines, entities, `<` and `&`, math), both as free token soup and as
well-formed paragraphs and lists, so that many are accepted and the rest probe the border.

Profiles: default 300 examples per test; ``HYPOTHESIS_PROFILE=long`` runs 20,000.
"""

from __future__ import annotations

import html
import os
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from deckbuild import render
from deckbuild.sources import load_cards

settings.register_profile("fastpath", max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("long", max_examples=20_000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
PROFILE = settings.get_profile(os.environ.get("HYPOTHESIS_PROFILE", "fastpath"))

REPO = Path(__file__).resolve().parent.parent

TOKENS = [
    # plain words and safe punctuation, so that many texts do reach the fast path
    "a", "b", "Z", "word", "é", "ß", "Ω", "中", "٣", "²", "x1", "42", " ", " ", ".", ",", ";", ":",
    "?", "!", "'", '"', "(", ")", "/", "%", "@", "$", "^", "=", "+", "-", "#", "~", "<", ">", "&", "{", "}",
    # line structure
    "\n", "\n\n", "  \n", " \n", "\n ", "\n    ", "\t", "\r\n", "\r", "\xa0", "\u2003", "\u2063", "\x02", "\x03", "\f",
    # Markdown syntax
    "*", "**", "_", "__", "`", "```", "~~~", "[", "]", "](http://x)", "![", "\\", "\\(", "\\)", "\\[", "\\]",
    "|", "| --- |", "- ", "* ", "+ ", "1. ", "2) ", "# ", "## ", "> ", "---", "===", "***", "    ",
    "&amp;", "&#123;", "&lt;", "<b>", "</b>", "<http://x.y>", "<a@b.c>", "http://", "a@b.c", "{{c1::", "}}",
]  # fmt: skip

tokens = st.lists(st.sampled_from(TOKENS), max_size=24).map("".join)
plain_chars = st.text(alphabet=st.sampled_from("abcXYZ019 .,;:?!'\"()/%@$^=+-#~<>&{}\né"), max_size=60)
any_chars = st.text(max_size=40)


def _check(text: str) -> bool:
    """Assert fast == slow where the fast path accepts; True when it did."""
    if render._plain_fast(text.strip()) is None:
        return False
    for inline in (False, True):
        assert render._render(text, inline) == render._render_markdown(text, inline, subset=False), (text, inline)
    return True


def _check_subset(text: str) -> bool:
    """Assert every path == Python-Markdown alone; True when the subset path took the text."""
    for inline in (False, True):
        assert render._render(text, inline) == render._render_markdown(text, inline, subset=False), (text, inline)
    return render._plain_fast(text.strip()) is None and render._subset_html(render._protect(text)[0]) is not None


@settings(PROFILE)
@given(tokens)
@example("1. first")
@example("a\n- b")
@example("a\n===")
@example("a < b and c > d")
@example("x  \ny")
@example("a\n\nb")
def test_fast_equals_markdown_on_markdown_tokens(text: str) -> None:
    _check(text)


@settings(PROFILE)
@given(plain_chars)
def test_fast_equals_markdown_on_plain_texts(text: str) -> None:
    _check(text)


@settings(PROFILE)
@given(any_chars)
def test_fast_equals_markdown_on_any_unicode(text: str) -> None:
    _check(text)


def test_fast_path_takes_plain_text_and_refuses_syntax() -> None:
    """The fast path is really taken for plain text (else the tests above prove nothing)."""
    assert render._plain_fast("What does a learning-rate warmup do (and why)?") is not None
    assert render._plain_fast("Line one\nline two, & {braces} < 3") is not None
    for text in ["a *b*", "`x`", "a\n\nb", "1. a", "- a", "# a", "a\\(x\\)", "<a@b.c>", "a  \nb", "a|b", "[a]"]:
        assert render._plain_fast(text) is None, text


def test_fast_equals_markdown_on_every_shipped_text() -> None:
    """Every Markdown text of the shipped deck renders the same on both paths."""
    cards, problems = load_cards(REPO)
    assert cards and not problems
    taken = 0
    for card in cards:
        for text in (card.question, card.answer, card.details, card.context, card.fact):
            if text.strip():
                taken += _check(text)
    assert taken > 0


SUBSET_TOKENS = [
    "a", "b", "word", "é", "中", "42", " ", " ", ".", ",", ";", ":", "?", "!", "'", '"', "(", ")", "=",
    "+", "-", "#", "~", "/", "%", "$", "{", "}", "<", ">", "&", "&amp;", "&lt;", "&#123;",
    "*", "*", "**", "***", "`", "`", "``", "_", "__", "\\", "\\*", "\\`", "[", "]", "|",
    "\\(x\\)", "\\(a*b\\)", "\\[y_1\\]", "\\(`\\)",
    "\n", "\n", "\n- ", "\n- ", "- ", "\n-", "\n  - ", "\n    ", "\n\n", "  \n", " \n", "\t", "\n* ",
    "\n1. ", "\n# ", "\n> ", "\n---", "\n===", "\n```", "\n`", "\n*", "\n**", "\n_", "\xa0", "\u2063",
]  # fmt: skip
subset_soup = st.lists(st.sampled_from(SUBSET_TOKENS), max_size=30).map("".join)

_WORDS = st.sampled_from(
    [
        "a",
        "word",
        "x1",
        "é",
        "中",
        "a b",
        "a, b",
        "a; b",
        "(c)",
        "d?",
        "e & f",
        "g < h",
        "i > j",
        "{k}",
        "$5",
        "m-n",
        "o/p",
        "q=r",
        "s#t",
        "u~v",
        "\\(x_1\\)",
        "\\[ y \\]",
    ]
)
_CODE = st.sampled_from(
    ["x", "step_4", "lr=3e-4", "a*b", "**", "_a_", "[i]", "x y", "a, b", "{c}", "&", "&amp;", "<", " x", "a`", "\\", "|"]
)


@st.composite
def _inline(draw: st.DrawFn) -> str:
    """One line of inline text: words joined by spaces, with emphasis, strong and code spans."""
    pieces = []
    for _ in range(draw(st.integers(1, 6))):
        word = draw(_WORDS)
        wrap = draw(st.sampled_from(["", "", "", "", "*", "*", "*", "**", "**", "**", "`", "`", "`", "***", "_"]))
        if wrap == "`":
            word = draw(_CODE)
        inner_space = " " if draw(st.integers(0, 15)) == 0 else ""
        pieces.append(wrap + inner_space + word + wrap)
    glue = draw(st.sampled_from([" ", " ", " ", "", "  "]))
    return glue.join(pieces) + draw(st.sampled_from(["", "", "", "", "", " ", "."]))


@st.composite
def _block(draw: st.DrawFn) -> str:
    """A paragraph of lines, or a `- ` list, sometimes with a foreign line or marker mixed in."""
    lines = draw(st.lists(_inline(), min_size=1, max_size=4))
    if draw(st.booleans()):
        markers = st.sampled_from(["- "] * 12 + ["* ", "+ ", "-  ", " - ", "1. ", "", "  "])
        lines = [draw(markers) + line for line in lines]
    separator = draw(st.sampled_from(["\n"] * 8 + ["\n\n", "  \n"]))
    return separator.join(lines)


@settings(PROFILE)
@given(subset_soup)
@example("- a *b* `c`\n- **d** e")
@example("x *a*b and a*b*c `q*`\n**s**")
@example("**a** *b* `c`")
@example("- a\nb")
@example("- a\n  b")
@example("a\n- b")
@example("*a **b** c*")
@example("* a *")
@example("a `` b `` c")
def test_subset_equals_markdown_on_edge_tokens(text: str) -> None:
    _check_subset(text)


@settings(PROFILE)
@given(_block())
def test_subset_equals_markdown_on_paragraphs_and_lists(text: str) -> None:
    _check_subset(text)


def test_subset_path_is_taken_for_the_benchmark_shapes() -> None:
    """The subset really takes bullet lists with math, strong, em and code (else the tests prove nothing)."""
    taken = [
        "- In case 7 it rescales \\( \\sqrt{1 - \\beta_2^{8}} \\), so steps stay small.\n"
        "- It keeps **variance** bounded; see *warmup* and `lr=7e-4`.\n- It costs one buffer.",
        "Why does technique 7 help `step_7` converge when the batch is small?",
        "A *first* line & a **second** one\nwith `a<b` in code.",
        "**Note:** the `x_1` term.",
    ]
    for text in taken:
        assert _check_subset(text), text
    refused = ["- a\n\n- b", "- a\nb", "a\n- b", "*a **b** c*", "a_b_c", "[a](http://x)", "a\\*b", "`a", "- - a", "a  \nb"]
    for text in refused:
        assert not _check_subset(text), text


@settings(PROFILE)
@given(st.text(alphabet=st.sampled_from("ab &<>{}\"'#·"), max_size=20) | any_chars)
def test_plain_escapes_as_html_escape_and_braces(text: str) -> None:
    assert render.plain(text) == render.escape_braces(html.escape(text, quote=False))
