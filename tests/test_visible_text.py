"""The preview's visible_text, which the index's titles and search text come from, drops a
<style> or <script> block up to its first closing tag, as a lazy regex over the side would."""

from __future__ import annotations

import html
import re

from hypothesis import given
from hypothesis import strategies as st

from deckbuild.preview.site import visible_text

PIECES = ["<style>", "</style>", "<script>", "</script>", "<b>", "</b>", "<", ">", "a", " ", "\n", "&amp;", "x{y:z}", "/"]


def reference(rendered: str) -> str:
    text = re.sub(r"<(style|script)>.*?</\1>", " ", rendered, flags=re.DOTALL)
    text = re.sub(r"<[^>]+>", " ", text)
    return re.sub(r"\s+", " ", html.unescape(text)).strip()


@given(st.lists(st.sampled_from(PIECES), max_size=40).map("".join))
def test_visible_text_is_the_lazy_regex_reading(rendered: str) -> None:
    assert visible_text(rendered) == reference(rendered)


def test_a_sides_style_and_script_are_not_text() -> None:
    side = '<style>.card { color: red }</style><div class="q">What is <b>1 &amp; 2</b>?</div><script>go()</script>'
    assert visible_text(side) == "What is 1 & 2 ?"
