"""`deckbuild new`: a small, valid deck project to start from, ready for git and for publishing."""
