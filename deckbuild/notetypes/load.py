"""notetypes/<key>/notetype.yaml (+ its template and CSS files) -> validated NoteType models.

Every problem is located (`file:line:col`) in notetype.yaml or in the template file, and
collected: a project with a broken note type reports all of them and builds nothing.
"""

from __future__ import annotations

import re
from pathlib import Path

from deckbuild.apkg import template_language as tpl
from deckbuild.apkg.notetypes import NoteType
from deckbuild.errors import Location, Problem
from deckbuild.layout import NOTETYPES_DIR
from deckbuild.yamlload import LocatedList, LocatedMap, load_yaml, read_text

NOTETYPE_FILE = "notetype.yaml"
RESERVED_KEYS = frozenset({"qa", "cloze", "formula", "fact"})
KEY_PATTERN = re.compile(r"^[a-z0-9][a-z0-9._-]{0,62}$")

KEYS: dict[str, str] = {
    "name": "the note type's name in Anki (required)",
    "cloze": "true for a cloze note type (one template showing {{cloze:Field}}); default false",
    "fields": "the field names, in order: the frozen schema (required)",
    "templates": "list of {name, front, back}: card templates, front/back are HTML files in this folder (required)",
    "css": "a CSS file in this folder, shared by the templates",
    "sort_field": "the field Anki's browser sorts by (default: the first)",
    "id": "an existing note type's Anki id, to keep its identity (written by deckbuild adopt)",
    "field_ids": "field name -> Anki field id (written by deckbuild adopt)",
    "template_ids": "template name -> Anki template id (written by deckbuild adopt)",
}
_BAD_FIELD_CHARS = re.compile(r'[:"{}]')
_MAX_ID = 2**63 - 1


def notetype_folders(root: Path) -> list[Path]:
    """notetypes/* folders, sorted by name."""
    base = root / NOTETYPES_DIR
    if not base.is_dir():
        return []
    return sorted((p for p in base.iterdir() if p.is_dir()), key=lambda p: p.name)


def load_notetypes(root: Path) -> tuple[dict[str, NoteType], list[Problem]]:
    """Every declared note type by key, and every problem found in them."""
    found: dict[str, NoteType] = {}
    problems: list[Problem] = []
    by_name: dict[str, str] = {}
    by_id: dict[int, str] = {}
    base = root / NOTETYPES_DIR
    if base.exists() and not base.resolve().is_relative_to(root.resolve()):
        return {}, [Problem(Location(NOTETYPES_DIR), "E200", f"{NOTETYPES_DIR}/ is a link to a folder outside the project")]
    for folder in notetype_folders(root):
        key = folder.name
        display = f"{NOTETYPES_DIR}/{key}/{NOTETYPE_FILE}"
        before = len(problems)
        if not KEY_PATTERN.fullmatch(key) or key in RESERVED_KEYS:
            why = "is a built-in kind" if key in RESERVED_KEYS else "is not lower-case letters, digits, '.', '_', '-'"
            problems.append(
                Problem(Location(f"{NOTETYPES_DIR}/{key}"), "E200", f"note type folder '{key}' {why}; rename the folder")
            )
            continue
        if not folder.resolve().is_relative_to(root.resolve()):
            problems.append(
                Problem(
                    Location(f"{NOTETYPES_DIR}/{key}"),
                    "E200",
                    f"note type folder '{key}' is a link to a folder outside the project",
                )
            )
            continue
        if not (folder / NOTETYPE_FILE).is_file():
            problems.append(
                Problem(Location(f"{NOTETYPES_DIR}/{key}"), "E200", f"note type folder '{key}' has no {NOTETYPE_FILE}")
            )
            continue
        notetype = _load_one(root, folder, key, display, problems)
        if notetype is None or len(problems) > before:
            continue
        where = Location(display, 1, 1)
        if notetype.anki_name in by_name:
            problems.append(
                Problem(
                    where, "E210", f"name {notetype.anki_name!r} is also the name of note type '{by_name[notetype.anki_name]}'"
                )
            )
            continue
        if notetype.given_id and notetype.given_id in by_id:
            problems.append(
                Problem(where, "E210", f"id {notetype.given_id} is also the id of note type '{by_id[notetype.given_id]}'")
            )
            continue
        by_name[notetype.anki_name] = key
        if notetype.given_id:
            by_id[notetype.given_id] = key
        found[key] = notetype
    return found, problems


def _load_one(root: Path, folder: Path, key: str, display: str, problems: list[Problem]) -> NoteType | None:
    data, file_problems = load_yaml(folder / NOTETYPE_FILE, display)
    problems.extend(file_problems)
    if file_problems:
        return None
    if not isinstance(data, LocatedMap):
        problems.append(Problem(Location(display, 1, 1), "E201", "expected a mapping with name, fields, templates"))
        return None
    for name in data:
        if name not in KEYS:
            problems.append(Problem(data.key_locs[name], "E201", f"unknown key '{name}'; expected one of {', '.join(KEYS)}"))
    missing = [name for name in ("name", "fields", "templates") if name not in data]
    for name in missing:
        problems.append(Problem(data.loc, "E202", f"missing required key '{name}' ({KEYS[name]})"))
    if missing:
        return None
    anki_name = data["name"]
    if not isinstance(anki_name, str) or not anki_name.strip() or anki_name != anki_name.strip():
        problems.append(
            Problem(
                data.value_locs["name"], "E203", f"'name': expected non-empty text without spaces around it; got {anki_name!r}"
            )
        )
    is_cloze = data.get("cloze", False)
    if not isinstance(is_cloze, bool):
        problems.append(Problem(data.value_locs["cloze"], "E203", f"'cloze': expected true or false; got {is_cloze!r}"))
        is_cloze = False
    fields = _fields(data, problems)
    templates = _templates(root, folder, key, data, fields, is_cloze, problems)
    css = ""
    if "css" in data:
        css = _file_text(root, folder, data, "css", problems) or ""
    sort_field = 0
    if "sort_field" in data:
        if data["sort_field"] in fields:
            sort_field = fields.index(data["sort_field"])
        else:
            problems.append(
                Problem(
                    data.value_locs["sort_field"],
                    "E203",
                    f"'sort_field': expected one of the fields {', '.join(fields)}; got {data['sort_field']!r}",
                )
            )
    given_id = 0
    if "id" in data:
        given_id = _id_value(data, "id", problems)
    field_ids = _id_map(data, "field_ids", fields, problems)
    template_ids = _id_map(data, "template_ids", [name for name, _f, _b in templates], problems)
    if any(p.location.path.startswith(f"{NOTETYPES_DIR}/{key}/") for p in problems):
        return None
    return NoteType(
        key=key,
        label=anki_name,
        fields=tuple(fields),
        templates=tuple(templates),
        css=css,
        is_cloze=is_cloze,
        declared=True,
        anki_name=anki_name,
        given_id=given_id,
        given_field_ids=tuple(field_ids),
        given_template_ids=tuple(template_ids),
        sort_field=sort_field,
        source=display,
    )


def _fields(data: LocatedMap, problems: list[Problem]) -> list[str]:
    value = data["fields"]
    where = data.value_locs["fields"]
    if not isinstance(value, LocatedList) or not value:
        problems.append(Problem(where, "E203", "'fields': expected a non-empty list of field names"))
        return []
    fields: list[str] = []
    seen: dict[str, str] = {}
    for name, loc in zip(value, value.item_locs, strict=True):
        if not isinstance(name, str) or not name.strip():
            problems.append(Problem(loc, "E205", f"field name: expected text; got {name!r}"))
            continue
        if name != name.strip() or _BAD_FIELD_CHARS.search(name) or name[0] in "#/^" or name in tpl.SPECIAL_FIELDS:
            problems.append(
                Problem(
                    loc,
                    "E205",
                    f"field name {name!r}: Anki refuses names with ':', '\"', '{{', '}}', a leading '#', '/', '^', "
                    f"spaces around them, or the special names {', '.join(sorted(tpl.SPECIAL_FIELDS))}",
                )
            )
            continue
        if name.casefold() in seen:
            problems.append(
                Problem(loc, "E205", f"field {name!r} is listed twice (as {seen[name.casefold()]!r}); names are unique")
            )
            continue
        seen[name.casefold()] = name
        fields.append(name)
    return fields


def _templates(
    root: Path, folder: Path, key: str, data: LocatedMap, fields: list[str], is_cloze: bool, problems: list[Problem]
) -> list[tuple[str, str, str]]:
    value = data["templates"]
    where = data.value_locs["templates"]
    if not isinstance(value, LocatedList) or not value:
        problems.append(Problem(where, "E203", "'templates': expected a non-empty list of {name, front, back}"))
        return []
    if is_cloze and len(value) != 1:
        problems.append(Problem(where, "E208", f"a cloze note type has exactly one template; got {len(value)}"))
    out: list[tuple[str, str, str]] = []
    names: set[str] = set()
    for item, loc in zip(value, value.item_locs, strict=True):
        if not isinstance(item, LocatedMap):
            problems.append(Problem(loc, "E203", "template: expected a mapping with name, front, back"))
            continue
        for sub in item:
            if sub not in ("name", "front", "back"):
                problems.append(Problem(item.key_locs[sub], "E201", f"template: unknown key '{sub}'; expected name, front, back"))
        missing = [sub for sub in ("name", "front", "back") if sub not in item]
        if missing:
            problems.append(Problem(loc, "E202", f"template: missing {', '.join(missing)}"))
            continue
        name = item["name"]
        if not isinstance(name, str) or not name.strip():
            problems.append(Problem(item.value_locs["name"], "E205", f"template name: expected text; got {name!r}"))
            continue
        if name in names:
            problems.append(Problem(item.value_locs["name"], "E205", f"template {name!r} is listed twice; names are unique"))
            continue
        names.add(name)
        front = _file_text(root, folder, item, "front", problems)
        back = _file_text(root, folder, item, "back", problems)
        if front is not None:
            _check_template(front, _rel(root, folder / item["front"]), fields, is_cloze, problems, front=True)
        if back is not None:
            _check_template(back, _rel(root, folder / item["back"]), fields, is_cloze, problems, front=False)
        if front is not None and back is not None:
            out.append((name, front, back))
    return out


def _rel(root: Path, path: Path) -> str:
    return path.relative_to(root).as_posix()


def _file_text(root: Path, folder: Path, item: LocatedMap, key: str, problems: list[Problem]) -> str | None:
    """A template or CSS file named in notetype.yaml: inside the note type's folder, UTF-8."""
    name = item[key]
    where = item.value_locs[key]
    if not isinstance(name, str) or not name.strip():
        problems.append(Problem(where, "E203", f"'{key}': expected a file name in this folder; got {name!r}"))
        return None
    path = Path(name)
    if path.is_absolute() or ".." in path.parts:
        problems.append(
            Problem(where, "E204", f"'{key}': {name!r} must be a file inside {_rel(root, folder)}/ (no '..', no absolute path)")
        )
        return None
    full = folder / path
    if not full.exists():
        problems.append(Problem(where, "E204", f"'{key}': file {name!r} not found in {_rel(root, folder)}/"))
        return None
    if not full.resolve().is_relative_to(folder.resolve()):
        problems.append(Problem(where, "E204", f"'{key}': {name!r} is a link to a file outside {_rel(root, folder)}/"))
        return None
    text, read_problems = read_text(full, _rel(root, full))
    problems.extend(read_problems)
    if text is None:
        return None
    return text.replace("\r\n", "\n")


def _location(display: str, text: str, offset: int) -> Location:
    line = text.count("\n", 0, offset) + 1
    col = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return Location(display, line, col)


def _check_template(text: str, display: str, fields: list[str], is_cloze: bool, problems: list[Problem], *, front: bool) -> None:
    """Syntax (E206), field names (E207), cloze use (E208), a front showing some field (E209)."""
    parsed = tpl.parse(text)
    for found in parsed.problems:
        problems.append(Problem(_location(display, text, found.offset), found.code, found.message))
    known = set(fields)
    shows_field = False
    for node in tpl.walk(parsed.nodes):
        where = _location(display, text, node.offset)
        if isinstance(node, tpl.Conditional):
            if node.key in known or node.key in tpl.SPECIAL_FIELDS or (is_cloze and tpl.is_cloze_conditional(node.key)):
                continue
            sigil = "^" if node.negated else "#"
            problems.append(
                Problem(
                    where,
                    "E207",
                    f"'{{{{{sigil}{node.key}}}}}' names no field of this note type; expected one of {', '.join(fields)}",
                )
            )
            continue
        shown = ":".join((*node.filters, node.key))
        if not node.key and node.filters:  # {{tts-voices:}}: a filter of Anki's own, on no field
            continue
        if node.key not in known and node.key not in tpl.SPECIAL_FIELDS:
            problems.append(
                Problem(where, "E207", f"'{{{{{shown}}}}}' names no field of this note type; expected one of {', '.join(fields)}")
            )
            continue
        clozes = any(f in tpl.CLOZE_FILTERS for f in node.filters)
        if clozes and not is_cloze:
            problems.append(Problem(where, "E208", f"'{{{{{shown}}}}}': the cloze filter needs a cloze note type (cloze: true)"))
        if node.key in known:
            shows_field = True
    if front and not parsed.problems:
        if not shows_field:
            problems.append(
                Problem(
                    Location(display, 1, 1),
                    "E209",
                    f"the front shows no field ({{{{Field}}}}), so Anki would never make its card; expected one of {', '.join(fields)}",
                )
            )
        elif is_cloze and not tpl.cloze_fields(parsed.nodes):
            problems.append(
                Problem(
                    Location(display, 1, 1),
                    "E208",
                    "a cloze note type's front must show a field through the cloze filter: {{cloze:Field}}",
                )
            )


def _id_value(data: LocatedMap, key: str, problems: list[Problem], *, signed: bool = False) -> int:
    """An Anki id given in notetype.yaml (a positive 64-bit integer); 0 after reporting a bad one.

    `signed`: a field or template id, which Anki draws at random from all signed 64-bit
    numbers (about half of them are negative); any but 0.
    """
    value = data[key]
    low = -_MAX_ID - 1 if signed else 1
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= _MAX_ID or value == 0:
        what = (
            "a non-zero signed 64-bit whole number (an Anki field or template id)"
            if signed
            else "a positive whole number (an Anki id)"
        )
        problems.append(Problem(data.value_locs[key], "E210", f"'{key}': expected {what}; got {value!r}"))
        return 0
    return value


def _id_map(data: LocatedMap, key: str, names: list[str], problems: list[Problem]) -> list[tuple[str, int]]:
    if key not in data:
        return []
    value = data[key]
    if not isinstance(value, LocatedMap):
        problems.append(Problem(data.value_locs[key], "E210", f"'{key}': expected a mapping of name -> id"))
        return []
    out: list[tuple[str, int]] = []
    seen: set[int] = set()
    for name in value:
        if name not in names:
            problems.append(Problem(value.key_locs[name], "E210", f"'{key}': {name!r} is not one of {', '.join(names)}"))
            continue
        number = _id_value(value, name, problems, signed=True)
        if number and number in seen:
            problems.append(Problem(value.value_locs[name], "E210", f"'{key}': id {number} is given twice"))
        seen.add(number)
        if number:
            out.append((name, number))
    return out
