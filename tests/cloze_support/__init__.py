"""Helpers for the cloze tests: render notes with the official Anki backend."""
