"""State that outlives a build: the build record (deckbuild.lock), releases and their changelog, and diffs between published decks."""
