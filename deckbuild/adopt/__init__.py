"""`deckbuild adopt SOURCE DIR`: an existing Anki deck becomes a deckbuild project.

read (package.py, crowdanki.py) -> a frozen `SourceDeck` (model.py), with `--ids-from` the
note-type ids learners' collections have (ids_from.py) -> project files (mapping.py) ->
checked with the pipeline and written to DIR all at once (write.py).
"""
