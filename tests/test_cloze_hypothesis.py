"""Property test of the cloze escaping against the real Anki backend.

Random LaTeX from a small grammar (symbols, fractions, sub/superscripts, nested groups,
``\\text`` with nested ``\\textbf``), with deletions on any disjoint balanced subtrees at any
depth, is emitted with to_anki_formula and rendered by Anki's own cloze code.  The back must
equal the original formula and the front the formula with exactly that card's deletions
replaced by ``[...]`` / ``[hint]``, both up to whitespace.

Profiles: default 200 examples; ``HYPOTHESIS_PROFILE=long`` runs 10,000.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from cloze_support.anki_render import render_cloze, strip_math_wrapper, visible_text
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deckbuild.cloze.checks import validate_formula
from deckbuild.cloze.emit import to_anki_formula
from deckbuild.cloze.scan import Deletion, parse_deletions

settings.register_profile("ci", max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile(
    "long",
    max_examples=10_000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@dataclass(frozen=True)
class Node:
    """A LaTeX subtree; ``mark`` is (cloze number, hint) when the author deletes it."""

    kind: str
    children: tuple[Node, ...] = ()
    leaf: str = ""
    mark: tuple[int, str | None] | None = None


MATH_SYMBOLS = [
    "x",
    "y",
    "1",
    "2",
    " ",
    "+",
    "-",
    "<",
    ">",
    "&",
    ":",
    "::",
    "\\alpha ",
    "\\{",
    "\\}",
    "\\,",
    "(",
    ")",
    "=",
    "\\cdot ",
]
TEXT_WORDS = [
    "a",
    "base",
    " ",
    "of",
    "1",
    ":",
    "::",
    "<",
    ">",
    "&",
    "(x)",
    "\\{",
    "\\}",
]
HINTS = st.none() | st.text(alphabet="abcdefgh ", min_size=1, max_size=8).filter(str.strip)
MARKS = st.none() | st.none() | st.tuples(st.integers(1, 3), HINTS)


def _text_tree() -> st.SearchStrategy[Node]:
    """Contents of ``\\text{..}``: words, nested groups and ``\\textbf``."""
    leaf = st.builds(Node, st.just("leaf"), leaf=st.sampled_from(TEXT_WORDS), mark=MARKS)
    return st.recursive(
        leaf,
        lambda inner: st.builds(
            Node,
            st.sampled_from(["seq", "group", "textbf"]),
            st.lists(inner, min_size=1, max_size=3).map(tuple),
            mark=MARKS,
        ),
        max_leaves=5,
    )


def _math_tree() -> st.SearchStrategy[Node]:
    """Math: symbols, groups, fractions, sub/superscripts and ``\\text`` at any depth."""
    leaf = st.builds(Node, st.just("leaf"), leaf=st.sampled_from(MATH_SYMBOLS), mark=MARKS)
    text = st.builds(
        Node,
        st.just("text"),
        st.lists(_text_tree(), min_size=1, max_size=2).map(tuple),
        mark=MARKS,
    )

    def extend(inner: st.SearchStrategy[Node]) -> st.SearchStrategy[Node]:
        return st.one_of(
            st.builds(
                Node,
                st.sampled_from(["seq", "group", "sub", "sup", "sqrt"]),
                st.lists(inner, min_size=1, max_size=3).map(tuple),
                mark=MARKS,
            ),
            st.builds(Node, st.just("frac"), st.tuples(inner, inner), mark=MARKS),
        )

    return st.recursive(leaf | text, extend, max_leaves=12)


def plain(node: Node) -> str:
    """The LaTeX of a tree without deletion markers."""
    inner = "".join(plain(c) for c in node.children)
    return _wrap(node, inner, [plain(c) for c in node.children])


def _wrap(node: Node, inner: str, parts: list[str]) -> str:
    """Put the children's LaTeX into this node's syntax."""
    match node.kind:
        case "leaf":
            return node.leaf
        case "seq":
            return inner
        case "group":
            return "{" + inner + "}"
        case "sub":
            return "x_{" + inner + "}"
        case "sup":
            return "y^{" + inner + "}"
        case "sqrt":
            return "\\sqrt{" + inner + "}"
        case "frac":
            return "\\frac{" + parts[0] + "}{" + parts[1] + "}"
        case "text":
            return "\\text{" + inner + "}"
        case "textbf":
            return "\\textbf{" + inner + "}"
    raise AssertionError(node.kind)


def marked(node: Node, inside: bool = False) -> str:
    """The LaTeX with ``{{cN::..}}`` around marked subtrees not inside another deletion."""
    deleting = node.mark is not None and not inside and plain(node).strip() != ""
    parts = [marked(c, inside or deleting) for c in node.children]
    latex = _wrap(node, "".join(parts), parts)
    if not deleting:
        return latex
    assert node.mark is not None
    number, hint = node.mark
    hint_part = "" if hint is None else "::" + hint
    wrapped = "{{c" + str(number) + "::" + latex + hint_part + "}}"
    # A '::' at depth 0 of a body is the hint separator by the source contract, so such a
    # subtree cannot be deleted as written; leave it plain.
    parsed = parse_deletions(wrapped).deletions
    if len(parsed) != 1 or parsed[0].body != latex or parsed[0].hint != hint:
        return latex
    return wrapped


def renumber(source: str) -> str:
    """Make cloze numbers contiguous from c1 (the validator requires it)."""
    used = sorted({int(n) for n in re.findall(r"\{\{c(\d+)::", source)})
    mapping = {old: new for new, old in enumerate(used, start=1)}
    return re.sub(r"\{\{c(\d+)::", lambda m: "{{c" + str(mapping[int(m.group(1))]) + "::", source)


def squash(s: str) -> str:
    """Compare up to whitespace."""
    return re.sub(r"\s+", "", s)


def expected_front(source: str, ordinal: int, text_mode_hint: set[int]) -> str:
    """The formula with this card's deletions replaced by Anki's placeholder."""
    out = []
    for seg in parse_deletions(source).segments:
        if isinstance(seg, Deletion):
            if seg.number != ordinal:
                out.append(seg.body)
            elif seg.hint is None:
                out.append("[...]")
            elif seg.start in text_mode_hint:
                out.append("[" + seg.hint.strip() + "]")
            else:
                out.append("[\\text{" + seg.hint.strip() + "}]")
        else:
            out.append(seg.text)
    return "".join(out)


def _text_mode_starts(source: str) -> set[int]:
    """Offsets of deletions that sit inside a ``\\text{..}`` argument."""
    return {d.start for d in parse_deletions(source).deletions if _inside_text(source[: d.start])}


def _inside_text(before: str) -> bool:
    """Whether the end of ``before`` lies inside a ``\\text``/``\\textbf`` argument."""
    stack: list[bool] = []
    i = 0
    while i < len(before):
        if before.startswith("{{c", i) and re.match(r"\{\{c\d+::", before[i:]):
            i = before.index("::", i) + 2
            continue
        if before[i] == "\\":
            m = re.match(r"\\(text(?:bf)?)\{", before[i:])
            if m:
                stack.append(True)
                i += len(m.group(0))
                continue
            i += 2
            continue
        if before[i] == "{":
            stack.append(bool(stack and stack[-1]))
        elif before[i] == "}" and before.startswith("}}", i) and _closing_deletion(before, i):
            i += 2
            continue
        elif before[i] == "}" and stack:
            stack.pop()
        i += 1
    return bool(stack and stack[-1])


def _closing_deletion(before: str, i: int) -> bool:
    """Whether the ``}}`` at ``i`` closes a deletion (per the real parser)."""
    return any(d.end == i + 2 for d in parse_deletions(before).deletions)


@given(_math_tree())
def test_back_equals_formula_and_front_hides_deletions(tree: Node) -> None:
    source = renumber(marked(tree))
    parsed = parse_deletions(source)
    assert squash(parsed.revealed()) == squash(plain(tree))
    numbers = {d.number for d in parsed.deletions}
    if not numbers:
        return
    assert validate_formula(source) == []
    field = to_anki_formula(source)
    cards = render_cloze(field)
    assert len(cards) == len(numbers), field
    hint_in_text = _text_mode_starts(source)
    for card in cards:
        back = strip_math_wrapper(card.back)
        front = strip_math_wrapper(card.front)
        assert squash(back) == squash(plain(tree)), (source, field, card.back_html)
        assert squash(front) == squash(expected_front(source, card.ordinal, hint_in_text)), (source, field, card.front_html)
        for side in (card.front_html, card.back_html):
            assert "{{" not in visible_text(side) or "{{" in plain(tree)
