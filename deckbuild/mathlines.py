"""Author-marked line breaks in display math: a top-level ``\\\\`` makes a multi-line display.

MathJax 3 (Anki desktop, AnkiDroid, AnkiMobile) never breaks a long formula by itself, and a
bare ``\\\\`` outside an environment does nothing, so a formula too wide for a 360-px phone
would scroll.  The author marks where it may break; deckbuild wraps the formula in
``gathered`` (lines centred) or, when a line holds a top-level ``&``, in ``aligned`` (lines
aligned at the ``&``, e.g. before each ``=``).  Formulas that already use an environment,
and ``\\\\`` inside braces or inside an environment, are left exactly as written.
"""

from __future__ import annotations

import re

_TOKEN = re.compile(r"\\begin\{[^}]*\}|\\end\{[^}]*\}|\\\\|\\.|[{}&]", re.DOTALL)


def _top_level(latex: str) -> tuple[bool, bool]:
    """(has a top-level ``\\\\``, has a top-level ``&``), outside braces and environments."""
    depth = 0
    breaks = amps = False
    for match in _TOKEN.finditer(latex):
        token = match.group(0)
        if token == "{" or token.startswith("\\begin{"):
            depth += 1
        elif token == "}" or token.startswith("\\end{"):
            depth = max(0, depth - 1)
        elif depth == 0 and token == "\\\\":
            breaks = True
        elif depth == 0 and token == "&":
            amps = True
    return breaks, amps


def break_lines(latex: str) -> str:
    """Display LaTeX with its author-marked ``\\\\`` breaks made real (unchanged without any)."""
    breaks, amps = _top_level(latex)
    if not breaks:
        return latex
    env = "aligned" if amps else "gathered"
    return f"\\begin{{{env}}} {latex.strip()} \\end{{{env}}}"
