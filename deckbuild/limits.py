"""The bounds and patterns every reader checks the same way: text length, topics, tags, versions.

Kept apart from the readers so that cards (sources.py), declared fields (notetypes/), deck.yaml
(config.py and its `variants:`) and adopt hold one definition each, below all of them.
"""

from __future__ import annotations

import re
import unicodedata

SEMVER = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)$")
TAG_RULE = "a tag Anki stores as written: no space, control character or '\"', no empty part between '::', Unicode NFC"
TOPIC_PATTERN = re.compile(r"^[a-z0-9][a-z0-9-]*(::[a-z0-9][a-z0-9-]*)*$")
# Longest text a field may hold.  Real answers are under 1,000 characters; Python-Markdown
# is quadratic on some inputs (64 KB of `\\(` takes seconds), so a limit keeps builds fast.
MAX_TEXT_CHARS = 20_000


_TAG_CHARACTERS = re.compile(r'^[^\s\x00-\x1f\x7f-\x9f"]+$')


def tag_problem(tag: str) -> str | None:
    """Why Anki would not store `tag` exactly as written (None: it does), so a shipped tag
    is the tag learners have: Anki splits a tag at a space, drops control characters,
    stores an empty part between '::' as 'blank' and a decomposed letter composed."""
    if not _TAG_CHARACTERS.fullmatch(tag):
        return "it holds a space, a control character or '\"'" if tag else "it is empty"
    if "" in tag.split("::"):
        return "it has an empty part between '::' (Anki would store it as 'blank')"
    if unicodedata.normalize("NFC", tag) != tag:
        return "it is not in Unicode NFC (Anki would store it composed)"
    return None
