"""The card-HTML rule as a test oracle: nothing in field HTML may run script or load anything.

Used by the corpus and the fuzz tests.  Escaped text (`&lt;script&gt;`) is text, so the
check parses the HTML as a browser would instead of searching for substrings.
"""

from __future__ import annotations

from html.parser import HTMLParser


class _ActiveHtml(HTMLParser):
    """Collects what in field HTML could run or load something: the card-HTML rule's test."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in {"script", "style", "iframe", "object", "embed", "link", "meta", "base", "form"}:
            self.found.append(f"<{tag}>")
        for name, value in attrs:
            if name.startswith("on"):
                self.found.append(f"{tag} {name}=")
            if name in {"href", "src", "action"} and value is not None:
                target = value.strip().lower()
                allowed = ("http://", "https://", "mailto:") if name == "href" else ()
                if name == "src" and tag == "img" and "://" not in target and ":" not in target:
                    continue  # a packaged media file
                if not target.startswith(allowed) or not allowed:
                    self.found.append(f"{tag} {name}={value}")


def active_html(field_html: str) -> list[str]:
    parser = _ActiveHtml()
    parser.feed(field_html)
    parser.close()
    return parser.found
