"""A `SourceDeck` -> the files of a deckbuild project (relative path -> bytes), in memory.

deck.yaml, notetypes/<key>/ (notetype.yaml keeping Anki's ids, templates and CSS as
files), cards/<deck>.yaml (one file per deck or subdeck, each note's GUID kept), and
media/ with only the files the fields reference (and the `_` files templates or CSS use).  A field is written as Markdown only
where rendering that Markdown gives back its HTML exactly (`exact_markdown`); otherwise
as `{html: ...}`, which the build sanitizes.  Nothing here reads or writes files.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml
from anyascii import anyascii

from deckbuild.adopt.model import SourceDeck, SourceNote, SourceNotetype
from deckbuild.adopt.names import media_references
from deckbuild.apkg import template_language as tpl
from deckbuild.apkg.ids import CARD_ID_PATTERN
from deckbuild.errors import LocatedError, Location, Problem
from deckbuild.layout import CONFIG_FILE
from deckbuild.limits import TAG_RULE, tag_problem
from deckbuild.notetypes.fields import CLOZE_SYNTAX
from deckbuild.notetypes.load import RESERVED_KEYS
from deckbuild.notetypes.sanitize import escape_bare_ampersands, sanitize_html

FIRST_VERSION = "1.0.0"
MAX_ID = 48
# What the build removes from an {html:} field (the spec's sanitizing rule), said aloud here.
_HOSTILE = (
    (re.compile(r"<\s*(script|style|iframe|object|embed)\b", re.IGNORECASE), "a <{0}> element"),
    (re.compile(r"<[^>]*\s(on[a-z]+)\s*=", re.IGNORECASE), "an event handler ({0}=)"),
    (re.compile(r"(javascript):", re.IGNORECASE), "a javascript: URL"),
    (re.compile(r"""\b(?:src|href)\s*=\s*["']?\s*(https?)://""", re.IGNORECASE), "a remote load ({0}://)"),
)

Renderer = Callable[[str], str]


@dataclass(frozen=True)
class AdoptedCard:
    """Where one note went: its card id, file and field choices (Markdown or HTML)."""

    card_id: str
    note: SourceNote
    notetype: str  # the note type's key in notetypes/
    file: str
    html_fields: frozenset[str]
    values: tuple[str, ...]  # the HTML the build must give each field (the source's, normalized as adopt writes it)


@dataclass
class Adopted:
    """The project's files and what the mapping decided, for write.py and the report."""

    files: dict[str, bytes]
    cards: list[AdoptedCard]
    deck_name: str
    notetype_keys: dict[str, str]  # SourceNotetype.key -> folder key
    warnings: list[Problem] = field(default_factory=list)


def exact_markdown(field_html: str, render: Renderer, accept: Callable[[str], bool] | None = None) -> str | None:
    """Markdown text whose rendering is exactly `field_html`, or None (then it stays HTML).

    Only text without tags is tried: its Markdown is the text itself, unescaped.  `accept`
    may refuse a text the build's checks would refuse (a cloze or math rule).
    """
    if not field_html or "<" in field_html or "\n" in field_html or field_html != field_html.strip():
        return None
    text = html.unescape(field_html)
    try:
        exact = render(text) == field_html and (accept is None or accept(text))
    except Exception:  # a text the renderer cannot take stays HTML
        return None
    return text if exact else None


def map_deck(
    deck: SourceDeck,
    render: Renderer,
    force_html: Mapping[str, frozenset[str]] | None = None,
    accept: Callable[[str], bool] | None = None,
) -> Adopted:
    """The project for `deck`; `force_html` (card id -> field names) keeps more fields as HTML."""
    where = Location(deck.source)
    warnings: list[Problem] = []
    deck_name = _common_deck(deck.notes)
    files: dict[str, bytes] = {}
    files[CONFIG_FILE] = _dump(_config(deck, deck_name, warnings))
    by_key = {nt.key: nt for nt in deck.notetypes}
    used_ids: set[str] = set()
    by_file: dict[str, list[tuple[str, dict[str, Any], list[str]]]] = {}
    subdecks: dict[str, str] = {}
    cards: list[AdoptedCard] = []
    referenced: list[str] = []
    ampersands = 0
    shapes = {nt.key: _shape(nt) for nt in deck.notetypes}
    literal_clozes = 0
    kept: list[tuple[SourceNote, list[str]]] = []
    for note in deck.notes:
        notetype = by_key[note.notetype]
        fronts, cloze_shown = shapes[notetype.key]
        # Cloze syntax where Anki shows it as text (a Basic field, a cloze type's Back Extra):
        # written with its braces as entities, which Anki shows alike.
        values_html = []
        for name, source in zip(notetype.fields, note.fields, strict=False):
            value = escape_bare_ampersands(source)
            if CLOZE_SYNTAX.search(value) and name not in cloze_shown:
                value = value.replace("{", "&#123;").replace("}", "&#125;")
                literal_clozes += 1
            values_html.append(value)
        if not tpl.card_ords(notetype.fields, values_html, fronts, notetype.cloze):
            warnings.append(
                Problem(
                    where,
                    "E267",
                    f"{note.where}: Anki makes no card of it (every front is empty with its fields, or a cloze note without "
                    "a deletion); left out of the project (it stays in the collections that have it)",
                    "warning",
                )
            )
            continue
        kept.append((note, values_html))
    # Only the note types the kept notes use become part of the project.
    used = {note.notetype for note, _values in kept}
    keys = _notetype_keys([nt for nt in deck.notetypes if nt.key in used])
    for notetype in deck.notetypes:
        if notetype.key in used:
            files.update(_notetype_files(keys[notetype.key], notetype))
    for note, values_html in kept:
        notetype = by_key[note.notetype]
        card_id = _card_id(note, used_ids)
        relative = _relative_deck(note.deck, deck_name)
        file = _card_file(relative, subdecks)
        entry: dict[str, Any] = {"id": card_id, "notetype": keys[notetype.key], "guid": note.guid}
        values: dict[str, Any] = {}
        comments: list[str] = []
        html_fields: set[str] = set()
        forced = (force_html or {}).get(card_id, frozenset())
        for name, source, value in zip(notetype.fields, note.fields, values_html, strict=False):
            if not source:
                continue
            if escape_bare_ampersands(source) != source:
                ampersands += 1
            referenced += [m for m in media_references(value) if m not in referenced]
            markdown_text = None if name in forced or "&#123;" in value else exact_markdown(value, render, accept)
            if markdown_text is not None:
                values[name] = markdown_text
                continue
            values[name] = {"html": value}
            html_fields.add(name)
            for pattern, what in _HOSTILE:
                found = pattern.search(value)
                if found:
                    message = f"field {name!r} holds {what.format(found.group(1).lower())}; kept as HTML, which the build sanitizes (removes it)"
                    comments.append(message)
                    warnings.append(Problem(where, "E260", f"{note.where}: {message}", "warning"))
        entry["fields"] = values
        tags = []
        for tag in note.tags:
            why = tag_problem(tag)
            if why is None:
                tags.append(tag)
            else:
                warnings.append(
                    Problem(where, "E261", f"{note.where}: tag {tag!r} dropped: {why}; expected {TAG_RULE}", "warning")
                )
        if tags:
            entry["tags"] = tags
        by_file.setdefault(file, []).append((card_id, entry, comments))
        cards.append(AdoptedCard(card_id, note, keys[notetype.key], file, frozenset(html_fields), tuple(values_html)))
    for file, entries in by_file.items():
        relative = next((d for d, f in subdecks.items() if f == file), "")
        files[file] = _card_file_bytes(relative, entries)
    for name in sorted(deck.media):
        if name.startswith("_") and name not in referenced:  # a file the templates or CSS use
            files[f"media/{name}"] = deck.media[name]
    missing = [name for name in referenced if name not in deck.media]
    if missing:
        # The build packs every file a field names (E219): without them it cannot be built.
        shown = ", ".join(repr(name) for name in missing[:10]) + (f" and {len(missing) - 10} more" if len(missing) > 10 else "")
        raise LocatedError(
            where,
            "E263",
            f"fields reference {len(missing)} media file(s) the source does not hold: {shown}; export the deck with its "
            "media (in Anki, Tools > Check Media finds missing files), or add them to the CrowdAnki folder's media/. "
            "Nothing was written",
        )
    for name in referenced:
        files[f"media/{name}"] = deck.media[name]
    if literal_clozes:
        warnings.append(
            Problem(
                where,
                "E266",
                f"{literal_clozes} field(s) hold cloze syntax {{{{c1::...}}}} where Anki shows it as text (not a field a "
                "cloze type's front shows through {{cloze:...}}); its braces are written &#123; &#125;, which Anki shows alike",
                "warning",
            )
        )
    if ampersands:
        warnings.append(
            Problem(
                where,
                "E265",
                f"{ampersands} field(s) hold a bare '&' before a letter (\"AT&T\"); written as '&amp;', which Anki shows alike",
                "warning",
            )
        )
    files[".gitignore"] = b"dist/\n.deckbuild-cache/\n"
    return Adopted(files, cards, deck_name, keys, warnings)


def _config(deck: SourceDeck, deck_name: str, warnings: list[Problem]) -> dict[str, str]:
    """deck.yaml: the deck's own description kept as written, since every import replaces the learner's with the package's."""
    config = {"name": deck_name, "namespace": _namespace(deck_name), "version": FIRST_VERSION}
    description = deck.descriptions.get(deck_name)
    if description is None:  # a parent adopt made for several top-level decks: a new deck
        config["description"] = f"Adopted from {_basename(deck.source)} with `deckbuild adopt`."
        return config
    config["description_html"] = description
    if deck_name in deck.markdown_descriptions:
        warnings.append(
            Problem(
                Location(deck.source),
                "E297",
                "Anki shows the deck's description as Markdown (its deck option 'md'); a deckbuild package ships "
                "HTML, so the first import makes learners see the Markdown as written (`**bold**`); write it as HTML "
                "in deck.yaml's description_html",
                "warning",
            )
        )
    _sanitized, removed = sanitize_html(description)
    if removed:
        warnings.append(
            Problem(
                Location(deck.source),
                "E291",
                f"the deck's description holds {', '.join(removed)}, which the build removes: the first import "
                "replaces the learner's description with the rest",
                "warning",
            )
        )
    return config


def _shape(notetype: SourceNotetype) -> tuple[list[list[tpl.Node]], frozenset[str]]:
    """The note type's parsed fronts and the fields a cloze type shows through {{cloze:...}}."""
    fronts = [tpl.parse(t.front).nodes for t in notetype.templates]
    shown = frozenset(tpl.cloze_fields(fronts[0])) if notetype.cloze and fronts else frozenset()
    return fronts, shown


def _common_deck(notes: Sequence[SourceNote]) -> str:
    """The deepest deck holding every note (the project's deck; the rest are subdecks)."""
    paths = [note.deck.split("::") for note in notes if note.deck]
    if not paths:
        return "Adopted deck"
    common = paths[0]
    for path in paths[1:]:
        n = 0
        while n < min(len(common), len(path)) and common[n] == path[n]:
            n += 1
        common = common[:n]
    return "::".join(common) if common else "Adopted deck"


def _relative_deck(full: str, deck_name: str) -> str:
    if full == deck_name or not full:
        return ""
    if full.startswith(deck_name + "::"):
        return full[len(deck_name) + 2 :]
    return full  # several top-level decks: the project's deck is a new parent of them


def _card_file(relative: str, subdecks: dict[str, str]) -> str:
    if relative in subdecks:
        return subdecks[relative]
    base = "--".join(readable_slug(part) or "deck" for part in relative.split("::")) if relative else "main"
    name, n = f"cards/{base}.yaml", 1
    while name in subdecks.values():
        n += 1
        name = f"cards/{base}-{n}.yaml"
    subdecks[relative] = name
    return name


def _card_file_bytes(relative: str, entries: list[tuple[str, dict[str, Any], list[str]]]) -> bytes:
    parts = []
    for _card_id, entry, comments in entries:
        text = "".join(f"# adopt: {line}\n" for line in comments)
        parts.append(text + _dump([entry]).decode())
    body = "".join(parts)
    if not relative:
        return body.encode()
    indented = "".join("  " + line if line.strip() else line for line in body.splitlines(keepends=True))
    return (_dump({"deck": relative}).decode() + "cards:\n" + indented).encode()


def _notetype_keys(notetypes: Sequence[SourceNotetype]) -> dict[str, str]:
    keys: dict[str, str] = {}
    taken: set[str] = set()
    for notetype in notetypes:
        base = readable_slug(notetype.name) or "deck"
        if base in RESERVED_KEYS:
            base += "-type"
        key, n = base, 1
        while key in taken:
            n += 1
            key = f"{base}-{n}"
        taken.add(key)
        keys[notetype.key] = key
    return keys


def _notetype_files(key: str, notetype: SourceNotetype) -> dict[str, bytes]:
    folder = f"notetypes/{key}"
    files: dict[str, bytes] = {}
    templates = []
    used: set[str] = set()
    for template in notetype.templates:
        base, n = readable_slug(template.name) or "deck", 1
        stem = base
        while stem in used:
            n += 1
            stem = f"{base}-{n}"
        used.add(stem)
        files[f"{folder}/{stem}-front.html"] = template.front.encode()
        files[f"{folder}/{stem}-back.html"] = template.back.encode()
        templates.append({"name": template.name, "front": f"{stem}-front.html", "back": f"{stem}-back.html"})
    files[f"{folder}/style.css"] = notetype.css.encode()
    data: dict[str, Any] = {
        "name": notetype.name,
        "cloze": notetype.cloze,
        "fields": list(notetype.fields),
        "templates": templates,
        "css": "style.css",
    }
    if 0 < notetype.sort_field < len(notetype.fields):
        data["sort_field"] = notetype.fields[notetype.sort_field]
    if notetype.id is not None:
        data["id"] = notetype.id
    field_ids = {n: i for n, i in zip(notetype.fields, notetype.field_ids, strict=False) if i is not None}
    if field_ids:
        data["field_ids"] = field_ids
    template_ids = {t.name: t.id for t in notetype.templates if t.id is not None}
    if template_ids:
        data["template_ids"] = template_ids
    files[f"{folder}/notetype.yaml"] = _dump(data)
    return files


def _card_id(note: SourceNote, used: set[str]) -> str:
    """A readable, unique id from the note's first field (the GUID keeps its identity)."""
    text = re.sub(r"<[^>]*>", " ", note.fields[0] if note.fields else "")
    text = re.sub(r"\[sound:[^\]]*\]|\{\{c\d+::|\}\}", " ", html.unescape(text))
    slug = readable_slug(text) or "note"
    if len(slug) > MAX_ID:
        slug = slug[:MAX_ID].rsplit("-", 1)[0] or slug[:MAX_ID]
    card_id, n = slug, 1
    while card_id in used or not CARD_ID_PATTERN.fullmatch(card_id):
        n += 1
        card_id = f"{slug}-{n}"
    used.add(card_id)
    return card_id


def readable_slug(text: str) -> str:
    """Lower-case ASCII words joined by '-' from text in any script: Cyrillic, Hebrew, Greek or
    Han text is transliterated first (anyascii), so ids stay readable; '' when nothing is left."""
    return "-".join(re.findall(r"[a-z0-9]+", anyascii(text).lower()))


def _namespace(deck_name: str) -> str:
    return readable_slug(deck_name)[:63].strip("-._") or "adopted"


def _basename(source: str) -> str:
    return re.split(r"[/\\]", source.rstrip("/\\"))[-1]


class _Dumper(yaml.SafeDumper):
    """Plain YAML the project's loader accepts: no anchors or aliases, Unicode kept."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _dump(data: Any) -> bytes:
    text = yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=1 << 30, default_flow_style=False)
    return text.encode()
