"""Cloze deletions in LaTeX and text: the scanner (scan.py), the checks (checks.py) and Anki-safe
emission (emit.py).

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

This package module imports none of its own modules: importing any of them runs it first, so a
re-export here would close a circle.  Import the names from the module that defines them.
"""

from __future__ import annotations

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
