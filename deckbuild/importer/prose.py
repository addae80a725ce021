"""Seed prose -> flashcard Markdown: escaping, code spans, sentences, answer and details."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

from deckbuild.importer.curation import Curation
from deckbuild.importer.seeds import FORM_BULLETS, SeedQuestion, normalize_ws

SHORT_GIST = 60
"""A first sentence shorter than this is not a self-contained gist: take two."""

_ABBREVIATIONS = frozenset({"e.g.", "i.e.", "al.", "vs.", "cf.", "approx.", "etc.", "i.i.d."})

# Brackets are not escaped: a backslash before them would make "\\[B, C\\]" display math on
# the card, and Python-Markdown keeps "[B, C]" literal (only "[text](url)" would be a link).
_MD_INLINE = re.compile(r"([\\`*_])")
_MD_LINE_START = re.compile(r"^(#|>|[-+] |\d+[.)] )")


def escape_markdown(text: str) -> str:
    """Escape what Markdown would reinterpret, so the card shows the seed's characters."""
    text = _MD_INLINE.sub(r"\\\1", text)
    match = _MD_LINE_START.match(text)
    if match:
        token = match.group(1)
        if token[0].isdigit():
            text = re.sub(r"^(\d+)([.)])", r"\1\\\2", text)
        else:
            text = "\\" + text
    return text


def code_pattern(identifiers: Iterable[str]) -> re.Pattern[str] | None:
    """One regex for the allow-list, longest first, never inside a longer word."""
    items = sorted(set(identifiers), key=lambda s: (-len(s), s))
    if not items:
        return None
    alternation = "|".join(re.escape(item) for item in items)
    return re.compile(rf"(?<![\w.])(?:{alternation})(?![\w(=])")


def render_inline(text: str, code: re.Pattern[str] | None) -> str:
    """Seed text as Markdown: allow-listed identifiers as `code`, everything else escaped."""
    if code is None:
        return escape_markdown(text)
    parts: list[str] = []
    last = 0
    for match in code.finditer(text):
        parts.append(_MD_INLINE.sub(r"\\\1", text[last : match.start()]))
        parts.append(f"`{match.group(0)}`")
        last = match.end()
    parts.append(_MD_INLINE.sub(r"\\\1", text[last:]))
    rendered = "".join(parts)
    if not rendered.startswith("`"):
        rendered = escape_markdown_line_start(rendered)
    return rendered


def escape_markdown_line_start(text: str) -> str:
    """Escape a block marker (heading, quote, list) at the start of an already-escaped line."""
    match = _MD_LINE_START.match(text)
    if not match:
        return text
    if match.group(1)[0].isdigit():
        return re.sub(r"^(\d+)([.)])", r"\1\\\2", text)
    return "\\" + text


def split_sentences(paragraph: str) -> list[str]:
    """Sentences of seed prose; knows e.g./i.e./et al. and lower-case starts like model.eval()."""
    sentences: list[str] = []
    start = 0
    for match in re.finditer(r"[.!?][\"”’)]?\s+", paragraph):
        before = paragraph[start : match.start() + 1]
        last_word = before.split()[-1].lstrip('(["“') if before.split() else ""
        if last_word.lower() in _ABBREVIATIONS or last_word.endswith(".."):
            continue  # "e.g." / "et al." / an ellipsis in ASCII math ("w1*x1 + ... + b")
        following = paragraph[match.end() : match.end() + 1]
        if following and not (following.isalnum() or following in "\"“‘`('"):
            continue  # the next "sentence" would start with an operator, e.g. "+ wn*xn"
        sentences.append(paragraph[start : match.end()].strip())
        start = match.end()
    tail = paragraph[start:].strip()
    if tail:
        sentences.append(tail)
    return sentences


_LABEL = re.compile(r"^([^:=]{1,40}?): (?=\S)")


def _is_label(text: str) -> bool:
    """A short lead-in like "Pitfall" or "Linear rule (Goyal et al., 2017)", not a clause."""
    return len(re.sub(r"\([^)]*\)", "", text).split()) <= 3


def _apply_replacements(text: str, replacements: dict[str, str]) -> str:
    """Curated whole-token fixes (subscripts the captured page glued to their symbol, like LRmax); never generic:
    a generic rule would also change words that only look glued."""
    for wrong, right in replacements.items():
        text = re.sub(rf"(?<!\w){re.escape(wrong)}(?!\w)", right, text)
    return text


LONG_BULLETS = 600
"""Bullet answers longer than this (characters) keep only their first bullet as the answer."""


def _bullet_lines(blocks: list[str], code: re.Pattern[str] | None) -> list[str]:
    lines = []
    for bullet in blocks:
        label = _LABEL.match(bullet)
        if label and _is_label(label.group(1)):
            rest = bullet[label.end() :]
            lines.append(f"- **{render_inline(label.group(1), code)}:** {render_inline(rest, code) if rest else ''}".rstrip())
        else:
            lines.append(f"- {render_inline(bullet, code)}")
    return lines


def render_full(seed_q: SeedQuestion, curation: Curation, code: re.Pattern[str] | None) -> str:
    """The seed's whole answer as Markdown (the bullet list, or every paragraph): a card's `details`."""
    fixes = curation.replacements.get(seed_q.document, {})
    blocks = [_apply_replacements(block, fixes) for block in seed_q.answer]
    if seed_q.form == FORM_BULLETS:
        return "\n".join(_bullet_lines(blocks, code)) + "\n"
    return "\n\n".join(render_inline(p, code) for p in blocks) + "\n"


def render_answer(seed_q: SeedQuestion, curation: Curation, code: re.Pattern[str] | None) -> tuple[str, str | None]:
    """(answer, details) for a new card: the gist (first sentence(s) or bullet), and the full text.

    details is None when the gist already is the whole answer (no repeat under "More").
    """
    fixes = curation.replacements.get(seed_q.document, {})
    blocks = [_apply_replacements(block, fixes) for block in seed_q.answer]
    full = render_full(seed_q, curation, code)
    if seed_q.form == FORM_BULLETS:
        lines = _bullet_lines(blocks, code)
        if sum(len(b) for b in blocks) > LONG_BULLETS and len(lines) > 2:
            # Prose chopped into bullets (000-q40..q43): the first bullet is the gist to
            # recall, the rest is explanation a phone should not show all at once.
            return lines[0][2:] + "\n", full
        return "\n".join(lines) + "\n", None
    sentences = split_sentences(blocks[0])
    take = 2 if len(sentences) > 2 and len(sentences[0]) < SHORT_GIST else 1
    answer = render_inline(" ".join(sentences[:take]), code)
    return answer, details_for(answer, full)


def details_for(answer: str, full: str) -> str | None:
    """The seed's full text as details, unless it only repeats the answer."""
    return None if " ".join(full.split()) == " ".join(str(answer).split()) else full


def answer_sha(seed_q: SeedQuestion) -> str:
    """A short hash of the seed's answer: tells whether the seed text changed since import."""
    text = "\n".join(normalize_ws(block) for block in seed_q.answer)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]
