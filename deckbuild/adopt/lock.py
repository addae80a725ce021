"""The adopted project, checked by the pipeline itself, with the build record that keeps each note's mod.

Anki updates a note on import only if the incoming mod is newer.  So the first build of
an adopted project must stamp every note (and note type) with the mod it has in the
source collection: the record (deckbuild.lock) is written with those mods and the
content hashes the build itself computes for the adopted cards, so the build's own
stamping keeps them.  The same rendering checks that every Markdown field gives back
the source's HTML exactly; a field that does not is kept as HTML instead.
"""

from __future__ import annotations

from deckbuild.adopt.mapping import Adopted, map_deck
from deckbuild.adopt.model import SourceDeck
from deckbuild.render import markdown_html


def finish(deck: SourceDeck) -> Adopted:
    return map_deck(deck, lambda text: markdown_html(text, inline=True))
