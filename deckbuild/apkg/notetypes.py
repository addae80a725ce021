"""The note types: frozen field lists with stable ids, templates and the card CSS.

Fields are a schema.  Adding, removing, renaming or reordering a field after a release
makes Anki create a second note type and stop updating every learner's notes, so the
lists below are FROZEN: spare fields are reserved for what later versions need.
Templates and CSS may change freely (their text is hashed into the note type's mod).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from deckbuild.apkg import ids

# Bump only together with a major release that says so (`deckbuild release` checks).
QA_FIELDS = (
    "Question",
    "Answer",
    "Details",
    "Figure",
    "Difficulty",
    "Topics",
    "Source",
    "Related",
    "Notice",
    "CardId",
    "My notes",
    "Reserved2",
)
CLOZE_FIELDS = (
    "Text", "Context", "Details", "Figure", "Difficulty", "Topics",
    "Source", "Related", "Notice", "CardId", "My notes", "Reserved2",
)  # fmt: skip

PERSONAL_FIELD = "My notes"
"""The learner's own field: shipped empty, never written by `deckbuild push` after a note's first import."""

FIELD_KEYS = {PERSONAL_FIELD: "Reserved1"}
"""Field name -> the stable key its id derives from, for fields renamed after release.

A field's id is `ids.field_id(namespace, notetype, key)`; the key is the name the field was
first released under, so a rename keeps the id and Anki renames the field in place (no
`Name+` note type, no conflicting notes).  Unlisted fields are their own key.
"""


def field_key(name: str) -> str:
    """The stable key of a field (see FIELD_KEYS)."""
    return FIELD_KEYS.get(name, name)


CSS_VERSION = "2"

CSS = """\
/* deckbuild card style: phone first (360 px), night mode, no external resources. */
.card {
  font-family: -apple-system, "Segoe UI", Roboto, "Noto Sans", "Helvetica Neue", Arial, sans-serif;
  font-size: 18px; line-height: 1.5; color: #1d1d1f; background: #ffffff;
  text-align: left; margin: 0; padding: 0; overflow-wrap: anywhere;
}
.db { max-width: 42em; margin: 0 auto; padding: 12px 14px 24px; box-sizing: border-box; }
.db-meta { font-size: 13px; color: #6b6b70; margin-bottom: 10px; letter-spacing: .01em; }
.db-meta .db-diff { text-transform: uppercase; font-weight: 600; margin-right: .5em; }
.db-diff-easy { color: #2e7d32; } .db-diff-medium { color: #a15c00; } .db-diff-hard { color: #b3261e; }
.db-question { font-size: 20px; font-weight: 600; }
.db-question p:first-child, .db-answer p:first-child { margin-top: 0; }
#answer { border: 0; border-top: 1px solid #d7d7dc; margin: 14px 0; }
.db-answer { font-size: 18px; }
.db-details { margin-top: 14px; font-size: 16px; color: #3a3a3f; }
.db-details summary { cursor: pointer; color: #0a63c2; font-weight: 600; padding: 6px 0; }
.db-context { font-size: 16px; color: #3a3a3f; margin-bottom: 8px; }
.db-cloze-text { font-size: 19px; }
.cloze { font-weight: 700; color: #0a63c2; }
.db-figure { margin: 16px 0 0; }
.db-figure img { display: block; max-width: 100%; height: auto; border-radius: 6px; }
.db-figure figcaption { font-size: 13px; color: #6b6b70; margin-top: 4px; }
.db-notice { border-left: 4px solid #d08700; background: #fff6e0; color: #5c3d00;
  padding: 8px 10px; margin: 12px 0; font-size: 15px; border-radius: 4px; }
.db-source, .db-related-label { font-size: 12px; color: #8a8a90; margin-top: 16px; }
.db-related { font-size: 14px; color: #55555a; margin: 4px 0 0; padding-left: 1.2em; }
ul, ol { padding-left: 1.3em; margin: .4em 0; } li { margin: .25em 0; }
code { font-family: "SFMono-Regular", Menlo, Consolas, "Liberation Mono", monospace;
  font-size: .88em; background: #f0f0f3; padding: .05em .3em; border-radius: 4px; }
pre { overflow-x: auto; background: #f0f0f3; padding: 8px 10px; border-radius: 6px; max-width: 100%; }
pre code { background: none; padding: 0; }
/* Wide things scroll inside their own box; the card itself never scrolls sideways. */
table { display: block; overflow-x: auto; max-width: 100%; border-collapse: collapse; font-size: .9em;
  overflow-wrap: break-word; } /* cells break words only when a word alone is too wide */
td, th { border: 1px solid #d7d7dc; padding: 4px 8px; vertical-align: top; }
th { text-align: left; background: #f6f6f8; }
mjx-container[display="true"], .MathJax_Display, .db-math-block { overflow-x: auto; overflow-y: hidden; max-width: 100%;
  padding: 2px 0; }
mjx-container { max-width: 100%; }
img { max-width: 100%; height: auto; }
a { color: #0a63c2; }
blockquote { margin: .6em 0; padding: 0 0 0 .8em; border-left: 3px solid #d7d7dc; color: #55555a; }
/* Night mode: Anki desktop/AnkiMobile use .nightMode, AnkiDroid .night_mode. */
.nightMode.card, .night_mode.card, .nightMode .card, .night_mode .card { color: #e6e6ea; background: #1c1c1e; }
.nightMode .db-meta, .night_mode .db-meta, .nightMode .db-figure figcaption, .night_mode .db-figure figcaption { color: #a0a0a8; }
.nightMode .db-diff-easy, .night_mode .db-diff-easy { color: #81c784; }
.nightMode .db-diff-medium, .night_mode .db-diff-medium { color: #ffb74d; }
.nightMode .db-diff-hard, .night_mode .db-diff-hard { color: #ef9a9a; }
.nightMode #answer, .night_mode #answer { border-top-color: #3a3a3f; }
.nightMode .db-details, .night_mode .db-details, .nightMode .db-context, .night_mode .db-context { color: #c8c8ce; }
.nightMode .db-details summary, .night_mode .db-details summary, .nightMode .cloze, .night_mode .cloze { color: #7ab7ff; }
.nightMode code, .night_mode code, .nightMode pre, .night_mode pre { background: #2c2c30; }
.nightMode .db-notice, .night_mode .db-notice { background: #3a2c0c; color: #ffe0a3; }
.nightMode .db-related, .night_mode .db-related { color: #b0b0b8; }
.nightMode td, .night_mode td, .nightMode th, .night_mode th { border-color: #3a3a3f; }
.nightMode th, .night_mode th { background: #26262a; }
.nightMode a, .night_mode a { color: #7ab7ff; }
.nightMode blockquote, .night_mode blockquote { border-left-color: #4a4a50; color: #b0b0b8; }
/* Diagrams are drawn dark-on-white; invert them (keeping hues) so night mode has no white slab. */
.nightMode img.diagram, .night_mode img.diagram { filter: invert(0.88) hue-rotate(180deg); }
"""

_META = (
    '<div class="db-meta">{{#Difficulty}}<span class="db-diff db-diff-{{Difficulty}}">{{Difficulty}}</span>{{/Difficulty}}'
    '<span class="db-topics">{{Topics}}</span></div>'
)
_BACK_EXTRAS = (
    '{{#Notice}}<div class="db-notice">{{Notice}}</div>{{/Notice}}'
    '{{#Details}}<details class="db-details"><summary>More</summary>{{Details}}</details>{{/Details}}'
    "{{Figure}}"
    '{{#Source}}<div class="db-source">Source: {{Source}}</div>{{/Source}}'
    "{{Related}}"
)

QA_FRONT = '<div class="db">' + _META + '<div class="db-question">{{Question}}</div></div>'
QA_BACK = (
    '<div class="db">' + _META + '<div class="db-question">{{Question}}</div>'
    '<hr id="answer"><div class="db-answer">{{Answer}}</div>' + _BACK_EXTRAS + "</div>"
)
CLOZE_FRONT = (
    '<div class="db">' + _META + '{{#Context}}<div class="db-context">{{Context}}</div>{{/Context}}'
    '<div class="db-cloze-text">{{cloze:Text}}</div></div>'
)
CLOZE_BACK = (
    '<div class="db">' + _META + '{{#Context}}<div class="db-context">{{Context}}</div>{{/Context}}'
    '<div class="db-cloze-text">{{cloze:Text}}</div>' + _BACK_EXTRAS + "</div>"
)


@dataclass(frozen=True)
class NoteType:
    """One note type as deckbuild defines it; package.py turns it into a genanki Model."""

    key: str  # "qa" or "cloze": part of every id derived for it
    label: str
    fields: tuple[str, ...]
    templates: tuple[tuple[str, str, str], ...]  # (name, front, back)
    css: str
    is_cloze: bool

    def schema(self) -> dict[str, object]:
        """What Anki treats as the schema: field and template names, in order."""
        return {"fields": list(self.fields), "templates": [name for name, _f, _b in self.templates], "cloze": self.is_cloze}

    def renames_in_place(self, released: object) -> bool:
        """Whether `released` (an earlier schema()) differs from ours only by renamed fields whose ids stay.

        Anki applies such a rename in place (no `Name+` note type, no conflicting notes), so a
        build may ship it; `deckbuild release` still counts it as a schema change (major, E501).
        """
        if not isinstance(released, dict) or not isinstance(released.get("fields"), list):
            return False
        mine = self.schema()
        same_rest = {k: v for k, v in released.items() if k != "fields"} == {k: v for k, v in mine.items() if k != "fields"}
        return same_rest and [field_key(str(f)) for f in released["fields"]] == [field_key(f) for f in self.fields]

    def schema_hash(self) -> str:
        return _digest(self.schema())

    def content_hash(self) -> str:
        """Changes whenever anything Anki stores for the note type changes."""
        return _digest({"schema": self.schema(), "templates": self.templates, "css": self.css, "label": self.label})

    def name(self, namespace: str) -> str:
        return f"{namespace} · {self.label}"

    def model_id(self, namespace: str) -> int:
        return ids.notetype_id(namespace, self.key)


def _digest(value: object) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:16]


QA = NoteType("qa", "Question", QA_FIELDS, (("Question", QA_FRONT, QA_BACK),), CSS, is_cloze=False)
CLOZE = NoteType("cloze", "Cloze", CLOZE_FIELDS, (("Cloze", CLOZE_FRONT, CLOZE_BACK),), CSS, is_cloze=True)
NOTETYPES = {QA.key: QA, CLOZE.key: CLOZE}
