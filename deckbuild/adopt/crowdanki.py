"""Reading a CrowdAnki export folder: deck.json (nested decks, note models, notes) and media/.

CrowdAnki keeps no note ids or modification times; its note models keep their Anki `id`
in newer exports (older ones only a `crowdanki_uuid`).  Media are read only from the
folder's own media/, by flat names, never through a symlink.
"""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

from deckbuild.adopt.model import SourceDeck, SourceNote, SourceNotetype, SourceTemplate
from deckbuild.adopt.names import media_references, template_references, unsafe_media_name
from deckbuild.errors import LocatedError, Location
from deckbuild.mediacheck import refuse_files

DECK_FILE = "deck.json"
MAX_DECK_BYTES = 512 << 20
MAX_MEDIA_BYTES = 1 << 30
MAX_DEPTH = 100


def read_crowdanki(folder: Path) -> SourceDeck:
    """The deck in a CrowdAnki folder; LocatedError (E256, E257) if it is broken or unsafe."""
    path = folder / DECK_FILE
    where = Location(str(path))
    try:
        info = path.lstat()
        if not stat.S_ISREG(info.st_mode):
            raise LocatedError(where, "E256", "expected a regular file deck.json (not a link, folder or device)")
        if info.st_size > MAX_DECK_BYTES:
            raise LocatedError(where, "E253", f"deck.json is larger than {MAX_DECK_BYTES >> 20} MB; refused")
        data = json.loads(path.read_bytes())
    except (OSError, UnicodeDecodeError, RecursionError) as exc:
        raise LocatedError(where, "E256", f"cannot read deck.json: {exc}") from None
    except ValueError as exc:
        raise LocatedError(where, "E256", f"deck.json is not valid JSON: {exc}") from None
    root = _mapping(data, "the deck", where)
    notetypes: dict[str, SourceNotetype] = {}
    notes: list[SourceNote] = []
    descriptions: dict[str, str] = {}
    markdown: set[str] = set()
    _walk(root, "", notetypes, notes, (descriptions, markdown), where, 0)
    media: dict[str, bytes] = {}
    total = 0
    for note in notes:
        for text in note.fields:
            for name in media_references(text):
                why = unsafe_media_name(name)
                if why is not None:
                    raise LocatedError(where, "E257", f"{note.where} references media {name!r}: its name is {why}; refused")
                if name in media:
                    continue
                data_bytes = _media_file(folder / "media" / name, where)
                if data_bytes is not None:
                    total += len(data_bytes)
                    if total > MAX_MEDIA_BYTES:
                        raise LocatedError(where, "E253", f"the media files add up to more than {MAX_MEDIA_BYTES >> 20} MB")
                    media[name] = data_bytes
    for notetype in notetypes.values():
        for text in (notetype.css, *(t.front + t.back for t in notetype.templates)):
            for name in template_references(text):
                if unsafe_media_name(name) is None and name not in media:
                    data_bytes = _media_file(folder / "media" / name, where)
                    if data_bytes is not None:
                        media[name] = data_bytes
    refuse_files(media, where)  # checked as a build checks them: none ships unless all pass
    return SourceDeck(str(folder), tuple(notetypes.values()), tuple(notes), media, descriptions, frozenset(markdown))


def _walk(
    deck: dict[str, Any],
    parent: str,
    notetypes: dict[str, SourceNotetype],
    notes: list[SourceNote],
    descriptions: tuple[dict[str, str], set[str]],  # each deck's description; the decks whose one is Markdown
    where: Location,
    depth: int,
) -> None:
    if depth > MAX_DEPTH:
        raise LocatedError(where, "E256", f"decks nested more than {MAX_DEPTH} deep")
    name = _text(deck.get("name"), "a deck's name", where)
    # Older exports give a child its full name, newer ones only its own part.
    full = name if not parent or name.startswith(parent + "::") else f"{parent}::{name}"
    descriptions[0][full] = _text(deck.get("desc", ""), f"deck {full!r}: desc", where)
    if deck.get("md") is True:
        descriptions[1].add(full)
    for model in _list(deck.get("note_models", []), "note_models", where):
        notetype = _notetype(_mapping(model, "a note model", where), where)
        notetypes[notetype.key] = notetype
    for index, item in enumerate(_list(deck.get("notes", []), "notes", where)):
        note = _mapping(item, "a note", where)
        guid = _text(note.get("guid"), "a note's guid", where)
        model_key = _text(note.get("note_model_uuid"), "a note's note_model_uuid", where)
        if model_key not in notetypes:
            raise LocatedError(where, "E256", f"note {guid!r} names note model {model_key!r}, which deck.json does not define")
        fields = tuple(_text(f, "a field", where) for f in _list(note.get("fields"), "fields", where))
        expected = len(notetypes[model_key].fields)
        if len(fields) != expected:
            raise LocatedError(
                where, "E256", f"note {guid!r}: its note model has {expected} fields; the note gives {len(fields)}"
            )
        tags = tuple(_text(t, "a tag", where) for t in _list(note.get("tags", []), "tags", where))
        notes.append(SourceNote(guid, model_key, fields, tags, full, None, f"deck {full!r} note {index + 1} (guid {guid})"))
    for child in _list(deck.get("children", []), "children", where):
        _walk(_mapping(child, "a child deck", where), full, notetypes, notes, descriptions, where, depth + 1)


def _notetype(model: dict[str, Any], where: Location) -> SourceNotetype:
    name = _text(model.get("name"), "a note model's name", where)
    key = _text(model.get("crowdanki_uuid"), f"note model {name!r}: crowdanki_uuid", where)
    fields = [_mapping(f, "a field", where) for f in _list(model.get("flds"), f"note model {name!r}: flds", where)]
    templates = [_mapping(t, "a template", where) for t in _list(model.get("tmpls"), f"note model {name!r}: tmpls", where)]
    model_id = model.get("id")
    return SourceNotetype(
        key=key,
        name=name,
        cloze=model.get("type") == 1,
        fields=tuple(_text(f.get("name"), "a field name", where) for f in fields),
        templates=tuple(
            SourceTemplate(
                _text(t.get("name"), "a template name", where),
                _text(t.get("qfmt"), "qfmt", where),
                _text(t.get("afmt"), "afmt", where),
                _int(t.get("id")),
            )
            for t in templates
        ),
        css=_text(model.get("css", ""), "css", where),
        id=_int(model_id),
        field_ids=tuple(_int(f.get("id")) for f in fields),
        mod=None,
        sort_field=_int(model.get("sortf")) or 0,
    )


def _media_file(path: Path, where: Location) -> bytes | None:
    try:
        info = path.lstat()
    except OSError:
        return None  # a missing file: mapping.py reports the reference
    if not stat.S_ISREG(info.st_mode):
        raise LocatedError(where, "E257", f"media/{path.name} is not a regular file (a link, folder or device); refused")
    if info.st_size > MAX_MEDIA_BYTES:
        raise LocatedError(where, "E253", f"media/{path.name} is larger than {MAX_MEDIA_BYTES >> 20} MB")
    return path.read_bytes()


def _mapping(value: object, what: str, where: Location) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise LocatedError(where, "E256", f"{what}: expected a JSON object; got {type(value).__name__}")
    return value


def _list(value: object, what: str, where: Location) -> list[Any]:
    if not isinstance(value, list):
        raise LocatedError(where, "E256", f"{what}: expected a JSON list; got {type(value).__name__}")
    return value


def _text(value: object, what: str, where: Location) -> str:
    if not isinstance(value, str):
        raise LocatedError(where, "E256", f"{what}: expected text; got {type(value).__name__}")
    return value


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
