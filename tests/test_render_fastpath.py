"""The plain-text fast path of render.py gives exactly Python-Markdown's output.

Whenever `_plain_fast` accepts a text, the fast rendering must be byte-equal to the full
Python-Markdown rendering, block and inline.  The texts come from an alphabet of the
characters and tokens Markdown reacts to (emphasis, code, links, escapes, math, entities,
raw HTML, autolinks, list/heading/quote/fence/rule/table starts, indentation, trailing
spaces, blank lines, tabs, odd whitespace, Markdown's own placeholder characters), so the
property test also hunts for texts the fast path wrongly accepts.  Every text of the
shipped deck is checked the same way.

Profiles: default 300 examples per test; ``HYPOTHESIS_PROFILE=long`` runs 20,000.
"""

from __future__ import annotations

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
        assert render._render(text, inline) == render._render_markdown(text, inline), (text, inline)
    return True


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
