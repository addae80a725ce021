"""The LaTeX macros and environments deckbuild lets through to MathJax.

Anki typesets with MathJax 3. An unknown control sequence does not fail loudly there: the
learner just sees red text on a card months later. So deckbuild refuses, at build time, any
macro that is not on this allow-list. The list is a conservative subset of what MathJax 3's
default TeX packages (base, ams, plus the autoloaded ones Anki can fetch) define; it is
checked by tests/test_mathjax.py, which typesets every formula of the deck with MathJax
itself. Add a macro here only after checking MathJax 3 knows it.
"""

from __future__ import annotations

_GREEK = """
alpha beta gamma delta epsilon varepsilon zeta eta theta vartheta iota kappa varkappa lambda
mu nu xi omicron pi varpi rho varrho sigma varsigma tau upsilon phi varphi chi psi omega
Gamma Delta Theta Lambda Xi Pi Sigma Upsilon Phi Psi Omega
varGamma varDelta varTheta varLambda varXi varPi varSigma varUpsilon varPhi varPsi varOmega
digamma
"""

_SYMBOLS = """
aleph hbar ell wp Re Im partial nabla infty emptyset varnothing forall exists nexists neg lnot
top bot angle triangle backslash prime surd flat natural sharp clubsuit diamondsuit heartsuit
spadesuit imath jmath dagger ddagger checkmark circledR maltese complement eth mho Finv Game
ldots cdots vdots ddots dots dotsc dotsb dotsm dotsi dotso
"""

_BINARY_OPS = """
pm mp times div cdot ast star circ bullet oplus ominus otimes oslash odot bigcirc setminus
cap cup sqcap sqcup uplus wedge vee land lor amalg wr diamond bigtriangleup bigtriangledown
triangleleft triangleright lhd rhd unlhd unrhd boxplus boxminus boxtimes boxdot dotplus
divideontimes ltimes rtimes centerdot intercal barwedge veebar
"""

_RELATIONS = """
le leq ge geq ne neq equiv approx approxeq sim simeq cong propto ll gg prec succ preceq succeq
subset supset subseteq supseteq nsubseteq nsupseteq subsetneq supsetneq sqsubseteq sqsupseteq
in ni notin owns mid nmid parallel nparallel perp models vdash dashv asymp doteq bowtie
lesssim gtrsim lessapprox gtrapprox leqslant geqslant lneq gneq nless ngtr nleq ngeq
triangleq stackrel
"""

_ARROWS = """
to gets leftarrow rightarrow Leftarrow Rightarrow leftrightarrow Leftrightarrow longleftarrow
longrightarrow Longleftarrow Longrightarrow longleftrightarrow Longleftrightarrow mapsto
longmapsto uparrow downarrow updownarrow Uparrow Downarrow Updownarrow nearrow searrow swarrow
nwarrow hookleftarrow hookrightarrow leftharpoonup rightharpoonup rightleftharpoons iff
implies impliedby leadsto rightsquigarrow xrightarrow xleftarrow
"""

_LARGE_OPS = """
sum prod coprod int iint iiint oint bigcup bigcap bigsqcup bigvee bigwedge bigoplus
bigotimes bigodot biguplus lim limsup liminf sup inf max min arg det gcd Pr
"""

_FUNCTIONS = """
log ln lg exp sin cos tan cot sec csc sinh cosh tanh coth arcsin arccos arctan dim ker hom
deg operatorname mod bmod pmod pod
"""

_DELIMITERS = """
left right middle big Big bigg Bigg bigl bigr Bigl Bigr biggl biggr Biggl Biggr bigm Bigm
langle rangle lceil rceil lfloor rfloor lvert rvert lVert rVert vert Vert lbrace rbrace
lbrack rbrack ulcorner urcorner llcorner lrcorner
"""

_STRUCTURE = """
frac dfrac tfrac cfrac binom dbinom tbinom sqrt over choose atop
overline underline overbrace underbrace overset underset overrightarrow overleftarrow
widehat widetilde hat tilde bar vec dot ddot acute grave breve check mathring boxed
substack limits nolimits displaystyle textstyle scriptstyle scriptscriptstyle
begin end hline cr tag notag nonumber label
phantom hphantom vphantom smash
"""

_FONTS = """
mathrm mathit mathbf mathsf mathtt mathcal mathbb mathfrak mathscr mathnormal boldsymbol
text textrm textit textbf textsf texttt textnormal mbox rm it bf sf tt cal
"""

_SPACING = """
quad qquad enspace thinspace negthinspace negmedspace negthickspace
hspace kern mkern mskip hskip space nobreakspace
"""

_COLOR = """
color textcolor colorbox
"""

MACROS: frozenset[str] = frozenset(
    (
        _GREEK
        + _SYMBOLS
        + _BINARY_OPS
        + _RELATIONS
        + _ARROWS
        + _LARGE_OPS
        + _FUNCTIONS
        + _DELIMITERS
        + _STRUCTURE
        + _FONTS
        + _SPACING
        + _COLOR
    ).split()
)
"""Macro names (without the backslash) that MathJax 3 typesets with its default packages."""

SYMBOL_MACROS: frozenset[str] = frozenset(list(",:;!> {}#$%&_|\\") + ["\n"])
"""One-character control symbols: spacing (``\\,``), escaped specials (``\\{``, ``\\%``), ``\\\\``."""

ENVIRONMENTS: frozenset[str] = frozenset(
    [
        "matrix",
        "pmatrix",
        "bmatrix",
        "Bmatrix",
        "vmatrix",
        "Vmatrix",
        "smallmatrix",
        "cases",
        "aligned",
        "gathered",
        "split",
        "array",
        "subarray",
        "align",
        "align*",
        "equation",
        "equation*",
        "gather",
        "gather*",
        "alignat",
        "alignat*",
        "alignedat",
    ]
)
"""Environments allowed in ``\\begin{...}``."""

FORBIDDEN: frozenset[str] = frozenset(
    [
        "href",
        "url",
        "require",
        "class",
        "style",
        "cssId",
        "unicode",
        "data",
        "mmlToken",
        "htmlClass",
        "htmlStyle",
        "htmlId",
        "htmlData",
        "newcommand",
        "renewcommand",
        "newenvironment",
        "def",
        "let",
        "DeclareMathOperator",
    ]
)
"""Macros refused for security or portability: links, loaders, raw HTML/CSS attributes, and
macro definitions (which would leak into every later card in Anki's shared MathJax page)."""

TEXT_MODE_MACROS: frozenset[str] = frozenset(
    [
        "text",
        "textrm",
        "textit",
        "textbf",
        "textsf",
        "texttt",
        "textnormal",
        "mbox",
        "hbox",
    ]
)
"""Macros whose argument MathJax typesets in text mode, where spaces are visible."""
