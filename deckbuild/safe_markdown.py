"""Python-Markdown as card fields need it: raw HTML and entities off, only safe links, no images.

Its own module so that `render` imports Python-Markdown only when a text needs it: most
texts take render's fast paths, and a rebuild whose edited texts all do never loads it.
"""

from __future__ import annotations

import xml.etree.ElementTree as etree

import markdown
from markdown.treeprocessors import Treeprocessor

_SAFE_SCHEMES = ("http://", "https://", "mailto:")


class _SafeLinks(Treeprocessor):
    """Drop link targets that could run script, and images (figures go through `image:`)."""

    def run(self, root: etree.Element) -> None:
        for parent in root.iter():
            for child in list(parent):
                if child.tag == "a":
                    href = child.get("href", "").strip()
                    if not href.lower().startswith(_SAFE_SCHEMES):
                        child.attrib.pop("href", None)
                elif child.tag == "img":
                    child.tag = "span"
                    alt = child.get("alt", "")
                    child.attrib.clear()
                    child.text = alt


def new_markdown() -> markdown.Markdown:
    """A converter for protected card text (render.py hides math and `&` from it first)."""
    md = markdown.Markdown(extensions=["fenced_code", "tables", "sane_lists"], output_format="html")
    # Raw HTML and character entities are not Markdown for us: they must show literally.
    md.preprocessors.deregister("html_block")
    md.inlinePatterns.deregister("html")
    md.inlinePatterns.deregister("entity")
    md.treeprocessors.register(_SafeLinks(md), "deckbuild_safe_links", 0)
    return md
