"""The fixed names of a deck project's files and folders, in one place.

Standard library only and nothing else imported: the up-to-date check reads these names
before it decides whether to import anything heavier.
"""

from __future__ import annotations

CONFIG_FILE = "deck.yaml"
CARDS_DIR = "cards"
MEDIA_DIR = "media"
"""Hand-made and committed images; cards show them with `image: {file: ...}`."""
DIAGRAMS_DIR = "diagrams"
"""The project's own diagram generators (Python, run by the build: deckbuild.diagrams.api)."""
NOTETYPES_DIR = "notetypes"
"""Declared note types, one folder each: notetype.yaml, templates and CSS."""
RECORD_FILE = "deckbuild.lock"
RELEASES_DIR = "releases"
RETIRED_FILE = f"{RELEASES_DIR}/retired.yaml"  # why each retired note left and what replaces it
CHANGELOG = "CHANGELOG.md"
DEFAULT_OUTPUT = "dist"
"""Where packages go unless deck.yaml's `output` says otherwise."""
CACHE_DIR = ".deckbuild-cache"
"""Work a later build may reuse (parses, renderings, diagrams, the up-to-date state) and the
project lock; never committed, safe to delete."""
