"""deckbuild: compile authored question/answer sources into versioned Anki decks."""

__version__ = "0.1.0"
