"""yamlload builds the values PyYAML's safe loader builds.

yamlload decides most scalars' types itself (a string unless the resolver says otherwise)
instead of handing every scalar to PyYAML's constructor; on random documents of every
scalar style and of plain scalars starting with each character a resolver reacts to
(booleans, nulls, numbers, dates, `<<`, `=`, `~`), the values must equal yaml.safe_load's.
"""

from __future__ import annotations

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deckbuild.yamlload import parse_yaml, to_plain

WORDS = [
    "a", "word", "yes", "No", "on", "OFF", "true", "False", "y", "n", "null", "Null", "~", "", "0", "12", "-3",
    "+4", "0x1F", "0o17", "1_000", "1.5", "-.inf", ".NaN", "1e3", "2024-02-03", "2024-02-03T04:05:06Z", "<<",
    "=", "-x", ".x", "+x", "t", "f", "o", "tag", "file.yaml", "3 apples", "x: y", "#x", "a # b", "é", "中",
]  # fmt: skip
STYLES = ["plain", "single", "double", "literal", "folded"]


def _scalar(word: str, style: str, indent: str) -> str:
    if style == "single":
        return "'" + word.replace("'", "''") + "'"
    if style == "double":
        return '"' + word.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if style in ("literal", "folded"):
        return ("|" if style == "literal" else ">") + "\n" + indent + "  " + (word or "x") + "\n"
    return word


@st.composite
def documents(draw: st.DrawFn) -> str:
    lines = []
    for index in range(draw(st.integers(1, 8))):
        word = draw(st.sampled_from(WORDS))
        style = draw(st.sampled_from(STYLES))
        if style == "plain" and (word.startswith(("#", "-x", "x:")) or ": " in word or " #" in word):
            style = "double"
        value = _scalar(word, style, "")
        if draw(st.booleans()):
            lines.append(f"k{index}: {value}" if not value.endswith("\n") else f"k{index}: {value}".rstrip("\n"))
        else:
            item = _scalar(word, style if style in ("single", "double", "plain") else "double", "")
            lines.append(f"k{index}: [{item}, x]")
    return "\n".join(lines) + "\n"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents())
def test_values_equal_safe_load(text: str) -> None:
    value, problems = parse_yaml(text, "x.yaml")
    try:
        expected = yaml.safe_load(text)
    except yaml.YAMLError:
        assert problems, text
        return
    assert not problems, problems
    assert to_plain(value) == expected, text


def test_explicit_tags_and_styles() -> None:
    text = "a: !!str 3\nb: ! 5\nc: !!int '7'\nd: 'yes'\ne: yes\nf:\ng: |\n  x\nh: !!float 1\n"
    value, problems = parse_yaml(text, "x.yaml")
    assert not problems
    assert to_plain(value) == yaml.safe_load(text) == {
        "a": "3", "b": 5, "c": 7, "d": "yes", "e": True, "f": None, "g": "x\n", "h": 1.0,
    }  # fmt: skip
