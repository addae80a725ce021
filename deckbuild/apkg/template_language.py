"""Anki's card-template language, as Anki itself reads it: field references and which cards a note gets.

genanki decides a note's cards from a `req` list it computes by rendering the front with
chevron, which gets negated sections (`{{^Field}}`) wrong (genanki #151) and accepts
templates naming fields that do not exist (#78).  This module follows Anki's own rules
(rslib/src/template.rs: `template_is_empty`, `renders_with_fields`; rslib's
`field_is_empty`) so the cards deckbuild writes are the cards Anki would generate.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

SPECIAL_FIELDS = frozenset({"FrontSide", "Tags", "Deck", "Subdeck", "Card", "CardFlag", "Type", "CardID"})
"""Names a template may use that are not fields of the note type."""

CLOZE_FILTERS = ("cloze", "cloze-only")


@dataclass(frozen=True)
class Replacement:
    """`{{filter:...:Key}}`: `offset` is where its `{{` starts in the template text."""

    key: str
    filters: tuple[str, ...]
    offset: int


@dataclass(frozen=True)
class Conditional:
    """`{{#Key}}...{{/Key}}` (or `{{^Key}}` when negated)."""

    key: str
    negated: bool
    children: tuple[Node, ...]
    offset: int


Node = Replacement | Conditional


@dataclass(frozen=True)
class TemplateProblem:
    offset: int
    code: str
    message: str


@dataclass
class Parsed:
    nodes: list[Node] = field(default_factory=list)
    problems: list[TemplateProblem] = field(default_factory=list)


_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)


def parse(text: str) -> Parsed:
    """Parse a template into replacements and conditionals (text between them is dropped).

    HTML comments are skipped like Anki does (a `{{` inside one is not a reference).
    Problems (E206): a `{{` never closed, an empty `{{}}`, a section closed by another
    name or never closed, a `{{/X}}` closing nothing, a delimiter change `{{=...=}}`.
    """
    parsed = Parsed()
    stack: list[tuple[str, bool, int, list[Node]]] = []
    current = parsed.nodes
    pos = 0
    comments = [(m.start(), m.end()) for m in _COMMENT.finditer(text)]
    while True:
        start = text.find("{{", pos)
        if start < 0:
            break
        inside = next((end for begin, end in comments if begin <= start < end), None)
        if inside is not None:
            pos = inside
            continue
        end = text.find("}}", start + 2)
        if end < 0:
            parsed.problems.append(TemplateProblem(start, "E206", "'{{' is never closed with '}}'"))
            break
        pos = end + 2
        inner = text[start + 2 : end].strip()
        if not inner:
            parsed.problems.append(TemplateProblem(start, "E206", "empty '{{}}': expected a field name"))
            continue
        if inner.startswith("="):
            parsed.problems.append(TemplateProblem(start, "E206", f"'{{{{{inner}}}}}': delimiter changes are not supported"))
            continue
        sigil, rest = inner[0], inner[1:].strip()
        if sigil in "#^":
            if not rest:
                parsed.problems.append(
                    TemplateProblem(start, "E206", f"'{{{{{inner}}}}}': expected a field name after '{sigil}'")
                )
                continue
            stack.append((rest, sigil == "^", start, current))
            current = []
        elif sigil == "/":
            if not stack:
                parsed.problems.append(
                    TemplateProblem(start, "E206", f"'{{{{/{rest}}}}}' closes a section that was never opened")
                )
                continue
            key, negated, opened, parent = stack[-1]
            if key != rest:
                opener = "^" if negated else "#"
                parsed.problems.append(
                    TemplateProblem(start, "E206", f"'{{{{/{rest}}}}}' closes '{{{{{opener}{key}}}}}'; expected '{{{{/{key}}}}}'")
                )
                continue
            stack.pop()
            node = Conditional(key, negated, tuple(current), opened)
            current = parent
            current.append(node)
        else:
            parts = [p.strip() for p in inner.split(":")]
            current.append(Replacement(parts[-1], tuple(parts[:-1]), start))
    for key, negated, opened, _parent in stack:
        opener = "^" if negated else "#"
        parsed.problems.append(TemplateProblem(opened, "E206", f"'{{{{{opener}{key}}}}}' is never closed with '{{{{/{key}}}}}'"))
    return parsed


def walk(nodes: Iterable[Node]) -> Iterable[Node]:
    """Every node, depth first, in template order."""
    for node in nodes:
        yield node
        if isinstance(node, Conditional):
            yield from walk(node.children)


def is_cloze_conditional(key: str) -> bool:
    """`{{#c1}}`: a section on a cloze number, allowed on cloze note types."""
    return key.startswith("c") and key[1:].isdigit()


def cloze_fields(nodes: Sequence[Node]) -> list[str]:
    """Fields the template shows through a cloze filter (`{{cloze:Text}}`), in order."""
    out: list[str] = []
    for node in walk(nodes):
        if isinstance(node, Replacement) and any(f in CLOZE_FILTERS for f in node.filters) and node.key not in out:
            out.append(node.key)
    return out


def _is_empty(nonempty: frozenset[str], nodes: Sequence[Node]) -> bool:
    """rslib's template_is_empty(check_negated = true)."""
    for node in nodes:
        if isinstance(node, Replacement):
            if node.key in nonempty:
                return False
        elif node.negated:
            if node.key in nonempty:
                continue
            if not _is_empty(nonempty, node.children):
                return False
        else:
            if node.key not in nonempty:
                continue
            if not _is_empty(nonempty, node.children):
                return False
    return True


def renders_with_fields(nodes: Sequence[Node], nonempty: frozenset[str]) -> bool:
    """Whether a front template shows any field with these non-empty fields: Anki makes the card then."""
    return not _is_empty(nonempty, nodes)


_EMPTY_FIELD = re.compile(r"^(?:[ \t\n\x0b\x0c\r]|</?(?:br|div) ?/?>)*$", re.IGNORECASE | re.DOTALL)


def field_is_empty(field_html: str) -> bool:
    """Anki's rule (rslib template.rs): only ASCII whitespace and bare <br>/<div> tags.

    Anything else counts as content: `&nbsp;`, `<p></p>`, an image.
    """
    return _EMPTY_FIELD.match(field_html) is not None


_CLOZE_NUMBERS = re.compile(r"\{\{c(\d+(?:,\d+)*)::")


def cloze_ords(texts: Iterable[str]) -> list[int]:
    """Card ords (number - 1) of every `{{cN::` (or `{{cN,M::`) in the texts, sorted; c0 makes no card."""
    numbers: set[int] = set()
    for text in texts:
        for match in _CLOZE_NUMBERS.finditer(text):
            numbers.update(int(n) for n in match.group(1).split(","))
    return sorted(n - 1 for n in numbers if n > 0)


def card_ords(fields: Sequence[str], values: Sequence[str], fronts: Sequence[Sequence[Node]], is_cloze: bool) -> list[int]:
    """The ords of the cards Anki generates for a note with these field values (HTML)."""
    if is_cloze:
        names = cloze_fields(fronts[0]) if fronts else []
        by_name = dict(zip(fields, values, strict=True))
        return cloze_ords(by_name.get(name, "") for name in names)
    nonempty = frozenset(name for name, value in zip(fields, values, strict=True) if not field_is_empty(value))
    return [ord_ for ord_, nodes in enumerate(fronts) if renders_with_fields(nodes, nonempty)]


def legacy_req(fields: Sequence[str], fronts: Sequence[Sequence[Node]]) -> list[list[object]]:
    """The note type's `req` list for old clients, computed as Anki's `requirements` does.

    Current Anki ignores it (it reads the templates); it is written so no client falls back
    to genanki's version of it, which is wrong for negated sections.
    """
    out: list[list[object]] = []
    for ord_, nodes in enumerate(fronts):
        any_of = [i for i, name in enumerate(fields) if _renders_for_reqs(nodes, frozenset({name}))]
        if any_of:
            out.append([ord_, "any", any_of])
            continue
        everything = frozenset(fields)
        needed = [i for i, name in enumerate(fields) if not _renders_for_reqs(nodes, everything - {name})]
        if needed and _renders_for_reqs(nodes, everything):
            out.append([ord_, "all", needed])
        else:
            out.append([ord_, "none", []])
    return out


def _renders_for_reqs(nodes: Sequence[Node], nonempty: frozenset[str]) -> bool:
    """rslib's template_is_empty(check_negated = false): negated sections resolve to their children."""

    def empty(children: Sequence[Node]) -> bool:
        for node in children:
            if isinstance(node, Replacement):
                if node.key in nonempty:
                    return False
            elif (node.negated or node.key in nonempty) and not empty(node.children):
                return False
        return True

    return not empty(nodes)
