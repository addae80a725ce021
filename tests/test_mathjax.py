"""Every formula of the deck typesets with MathJax 3 itself, as Anki shows it.

Each cloze card is rendered by the real Anki backend (front of every card and the back),
then all sides plus the math in context/details are typeset in one chromium page with
MathJax 3.2.2.  Any MathJax error or console error fails the test, naming the card.  A
self-check proves the harness catches a broken formula and an unknown macro, and the macro
allow-list of the validator is checked against MathJax too.
"""

from __future__ import annotations

from cloze_support.anki_render import render_cloze
from cloze_support.deck_cards import field_html, load_cards, markdown_stand_in
from cloze_support.mathjax_page import typeset

from deckbuild.cloze.emit import render_fact
from deckbuild.cloze.scan import find_math_spans
from deckbuild.mathjax_macros import ENVIRONMENTS, MACROS


def _deck_snippets() -> dict[str, str]:
    """name -> HTML for every side of every cloze card and all math in context/details."""
    snippets: dict[str, str] = {}
    for card in load_cards("formulas") + load_cards("facts"):
        if "fact" in card and not find_math_spans(card["fact"]):
            continue  # a fact without math has nothing to typeset
        for rendered in render_cloze(field_html(card)):
            if find_math_spans(rendered.front_html):
                # A front whose only math is the hidden deletion has nothing to typeset.
                snippets[f"{card['id']} front c{rendered.ordinal}"] = rendered.front_html
        snippets[f"{card['id']} back"] = rendered.back_html
        for key in ("context", "details"):
            if key in card and find_math_spans(card[key]):
                snippets[f"{card['id']} {key}"] = render_fact(card[key], markdown_stand_in)
    return snippets


def test_every_deck_formula_typesets() -> None:
    snippets = _deck_snippets()
    assert len(snippets) > 150
    problems = typeset(snippets)
    assert problems == {}, "\n".join(f"{k}: {v}" for k, v in problems.items())


def test_harness_fails_for_broken_formulas() -> None:
    problems = typeset(
        {
            "good": r"\[ \frac{a}{b} \]",
            "missing argument": r"\[ \frac{a} \]",
            "unknown macro": r"\( \foo x \)",
            "unbalanced": r"\[ x^{2 \]",
        }
    )
    assert set(problems) == {"missing argument", "unknown macro", "unbalanced"}
    assert any("\\foo" in e for e in problems["unknown macro"])


def test_macro_allow_list_is_known_to_mathjax() -> None:
    """No allow-listed macro or environment is undefined for MathJax 3."""
    snippets = {f"\\{m}": rf"\[ \{m}{{x}}{{y}} \]" for m in sorted(MACROS - {"begin", "end"})}
    snippets |= {f"env {e}": rf"\[ \begin{{{e}}} x \end{{{e}}} \]" for e in sorted(ENVIRONMENTS)}
    problems = typeset(snippets)
    unknown = {
        name: errs
        for name, errs in problems.items()
        if any("Undefined control sequence" in e or "Unknown environment" in e for e in errs)
    }
    assert unknown == {}, sorted(unknown)
