"""Fuzzing the stages that read untrusted text: the YAML loader, the card loader, the
Markdown/escaping renderer and the cloze handling.  None may raise; HTML stays inert.

CI runs 200 examples per target; `HYPOTHESIS_PROFILE=long python -m pytest tests/test_fuzz.py`
runs 10,000 (profiles are registered in conftest.py).
"""

from __future__ import annotations

import html
import re
import tempfile
from pathlib import Path
from typing import Any

import yaml
from htmlcheck import active_html
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from images import png

from deckbuild.card_entry import CARD_KEYS
from deckbuild.cloze.checks import validate_fact, validate_formula
from deckbuild.cloze.emit import render_fact, to_anki_formula
from deckbuild.errors import Problem
from deckbuild.media import check_images
from deckbuild.notes import render_notes
from deckbuild.render import markdown_html
from deckbuild.sources import load_cards
from deckbuild.validate import validate_cards
from deckbuild.yamlload import parse_yaml

CODE = re.compile(r"^E\d{3}$")

# --- YAML-ish text: the tokens that steer PyYAML's scanner and our event builder ---------
YAML_TOKENS = st.sampled_from(
    [
        "- ", "  ", "\t", "\n", ": ", "? ", "[", "]", "{", "}", ",", "&a ", "*a", "!!str ", "!!python/name:os.system ",
        "!x ", "<<: ", '"', "'", "|", ">", "#", "---\n", "...\n", "%YAML 1.1\n", "id", "question", "0x1F", "1e999",
        "~", "null", "true", "2024-02-30", "\\u0000", "\ufeff", "\r\n", "\x00", "\u2028", "é", "9" * 5000,
    ]
)  # fmt: skip
YAMLISH = st.lists(st.one_of(YAML_TOKENS, st.text(max_size=8)), max_size=60).map("".join)


def _assert_problems(problems: list[Problem]) -> None:
    assert isinstance(problems, list)
    for problem in problems:
        assert isinstance(problem, Problem) and CODE.match(problem.code), problem
        problem.format()


@given(st.one_of(st.text(), YAMLISH))
def test_parse_yaml_never_raises(text: str) -> None:
    value, problems = parse_yaml(text, "cards/x.yaml")
    _assert_problems(problems)
    if problems and any(p.severity == "error" for p in problems) and value is not None:
        # E101 (a key given twice) keeps the value; every other problem drops it
        assert {p.code for p in problems} == {"E101"}


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
        lambda c: st.lists(c) | st.dictionaries(st.text(), c),
        max_leaves=30,
    )
)
def test_parse_yaml_reads_what_yaml_dumps(data: Any) -> None:
    """What PyYAML writes, we read as PyYAML's safe loader does (keys as text, no anchors)."""
    text = yaml.safe_dump(data, allow_unicode=True)
    value, problems = parse_yaml(text, "x.yaml")
    assert problems == []
    assert _plain(value) == _plain(_stringify_keys(yaml.safe_load(text)))


def _stringify_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _stringify_keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_stringify_keys(v) for v in value]
    return value


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, float) and value != value:
        return "nan"
    return value


# --- Markdown and escaping ---------------------------------------------------------------
MARKDOWNISH = st.lists(
    st.one_of(
        st.sampled_from(
            [
                "<script>", "</script>", "<img src=x onerror=alert(1)>", "<a href='javascript:x'>", "[l](javascript:alert(1))",
                "[l]( JAVASCRIPT:x)", "[l](data:text/html,x)", "<javascript:x>", "<http://a.b/?c&d>", "![i](x.png)", "[r]: javascript:x",
                "[r]", "{{", "}}", "{{c1::", "::", "&lt;", "&#x3c;", "&amp;", "&", "\\(", "\\)", "\\[", "\\]", "`", "```", "\n",
                "\n\n", "    ", "*", "_", "#", "> ", "- ", "1. ", "|", "---", "\u2063", "DBMATH0", "\\", '"', "'", "onload=", "=",
            ]
        ),
        st.text(max_size=6),
    ),
    max_size=40,
).map("".join)  # fmt: skip


@given(st.one_of(st.text(), MARKDOWNISH), st.booleans())
def test_markdown_html_is_inert(text: str, inline: bool) -> None:
    out = markdown_html(text, inline=inline)
    assert isinstance(out, str)
    assert "<script" not in out.lower()
    # Outside math, braces are entities.  Inside \( \) and \[ \] LaTeX is kept as written
    # (`\frac{a}{b_{c}}` needs its `}}`); a QA field is never parsed for templates or clozes.
    outside_math = re.sub(r"\\\(.+?\\\)|\\\[.+?\\\]", "", out, flags=re.DOTALL)
    assert "{{" not in outside_math and "}}" not in outside_math
    assert active_html(out) == []


# Text without Markdown syntax but with every character that needs escaping.
PLAIN_ALPHABET = st.sampled_from(list("abcXYZ019 \n<>&\"'{}/;?%$^ä€😀"))  # no '@': <a@b> is a Markdown mail link


@given(st.lists(PLAIN_ALPHABET, max_size=80).map("".join))
def test_escaping_round_trips(text: str) -> None:
    """What the learner reads is what the author typed (tags dropped, entities decoded)."""
    if re.search(r"^\s*>", text, re.MULTILINE):  # a quote: Markdown, not plain text
        return
    out = markdown_html(text)
    shown = html.unescape(re.sub(r"<[^>]+>", " ", out))
    assert shown.split() == text.split()


# --- Card files: generated cards dumped to YAML, loaded, validated, rendered -----------
SCALARS = st.none() | st.booleans() | st.integers(-(10**6), 10**6) | st.floats(allow_nan=False) | st.text(max_size=30)
VALUES = st.recursive(
    SCALARS, lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=5), c, max_size=3), max_leaves=8
)
GOOD = {
    "id": st.from_regex(r"\A[a-z0-9][a-z0-9._-]{0,10}[a-z0-9]\Z"),
    "question": MARKDOWNISH,
    "answer": MARKDOWNISH,
    "details": MARKDOWNISH,
    "difficulty": st.sampled_from(["easy", "medium", "hard", "mediun"]),
    "topics": st.lists(st.sampled_from(["a::b", "optimization::lr", "Bad Topic", ""]), max_size=3),
    "tags": st.lists(st.sampled_from(["x", "framework::pytorch", "bad tag"]), max_size=2),
    "related": st.lists(st.sampled_from(["c0", "c1", "nope"]), max_size=2),
    "fact": st.text(max_size=30).map(lambda t: t + " {{c1::x}}"),
    "formula": st.sampled_from(["a = {{c1::b}}", "\\frac{a}{b}", "{{c1::", "x"]),
    "of": st.sampled_from(["c0", "c1", "x"]),
    "image": st.fixed_dictionaries({"file": st.sampled_from(["axes.png", "../x.png", "/etc/passwd", "a\x00.png", "x.txt"]), "alt": st.text(max_size=5)}),
    "missing_code": st.booleans(),
}  # fmt: skip
CARD = st.dictionaries(
    st.sampled_from([*CARD_KEYS, "hint"]).filter(lambda k: k != "diagram"),  # diagrams are another branch's stage
    VALUES,
    max_size=6,
).flatmap(lambda base: st.fixed_dictionaries({k: GOOD.get(k, st.just(v)) if k in GOOD else st.just(v) for k, v in base.items()}))
CARDS = st.lists(
    st.one_of(CARD, st.builds(lambda i, q: {"id": f"c{i}", "question": q, "answer": "A", "difficulty": "easy", "topics": ["a::b"]}, st.integers(0, 2), MARKDOWNISH), VALUES),
    max_size=5,
)  # fmt: skip


@settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(CARDS)
def test_load_cards_never_raises(cards: list[Any]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "cards").mkdir()
        (root / "media").mkdir()
        (root / "media" / "axes.png").write_bytes(png())
        (root / "cards" / "fuzz.yaml").write_text(yaml.safe_dump(cards, allow_unicode=True), encoding="utf-8")
        loaded, problems = load_cards(root)
        problems += validate_cards(loaded)
        _images, image_problems = check_images(root, loaded)
        _assert_problems(problems + image_problems)
        if not problems and not image_problems:
            for note in render_notes("fuzz", loaded, {}):
                for field in note.fields:
                    assert active_html(field) == [], field


# --- Cloze and math -----------------------------------------------------------------------
CLOZEISH = st.lists(
    st.one_of(
        st.sampled_from(
            [
                "{{c1::", "{{c2::", "{{c10::", "}}", "::", "{", "}", "\\frac", "\\text{", "\\href{javascript:x}", "\\(", "\\)", "\\[",
                "\\]", "$", "\\$", "<", ">", "&", "<!-- -->", "\\", "x", " ", "^", "_", "\\begin{pmatrix}", "\\end{pmatrix}",
            ]
        ),
        st.text(max_size=4),
    ),
    max_size=30,
).map("".join)  # fmt: skip


@given(st.one_of(st.text(), CLOZEISH))
def test_cloze_formula_never_raises(text: str) -> None:
    problems = validate_formula(text)
    assert isinstance(problems, list)
    if problems:
        return
    out = to_anki_formula(text)
    assert isinstance(out, str)
    assert active_html(out) == []
    # Anki's cloze scanner ends a deletion at the first '}}': each one must close one opener
    assert out.count("}}") == len(re.findall(r"\{\{c\d+::", out))


@given(st.one_of(st.text(), CLOZEISH, MARKDOWNISH))
def test_cloze_fact_never_raises(text: str) -> None:
    if validate_fact(text):
        return
    out = render_fact(text, markdown_html)
    assert isinstance(out, str)
    assert active_html(out) == []
