"""Talking to a learner's Anki collection: find it, push a package into it, report on it."""
