"""Note types a project declares in notetypes/<key>/: loading, Anki's template rules, their cards' fields and media."""
