"""The plain-genanki baseline: write the same notes with genanki's defaults and nothing else.

Run by benchmarks/run.py in a fresh process, like `deckbuild build`, so the two wall
times compare the same things: interpreter start-up, imports, reading the input, writing
the .apkg.  The input is the notes deckbuild wrote (fields, tags, note type), exported to
JSON beforehand, so the baseline writes the same count of notes with the same field values.
"""

from __future__ import annotations

import json
import sys


def main(notes_json: str, out_path: str) -> None:
    import genanki

    with open(notes_json, encoding="utf-8") as handle:
        data = json.load(handle)
    fields = [{"name": name} for name in data["fields"]]
    qa = genanki.Model(
        1607392319,
        "Baseline QA",
        fields=fields,
        templates=[{"name": "Card 1", "qfmt": "{{Question}}", "afmt": "{{FrontSide}}<hr id=answer>{{Answer}}"}],
    )
    cloze = genanki.Model(
        1607392320,
        "Baseline Cloze",
        fields=[{"name": name} for name in data["cloze_fields"]],
        templates=[{"name": "Cloze", "qfmt": "{{cloze:Text}}", "afmt": "{{cloze:Text}}<br>{{Details}}"}],
        model_type=genanki.Model.CLOZE,
    )
    deck = genanki.Deck(2059400110, "Baseline")
    for kind, values, tags in data["notes"]:
        deck.add_note(genanki.Note(model=cloze if kind == "cloze" else qa, fields=values, tags=tags))
    genanki.Package(deck).write_to_file(out_path)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
