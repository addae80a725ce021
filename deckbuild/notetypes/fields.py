"""Cards of declared note types: their `fields:` as written, as field HTML, and every check on them.

A field is Markdown text (rendered like the built-in fields; text without Markdown syntax
becomes exactly itself, HTML-escaped, with no <p> around it, so a plain field adopted from
Anki comes back byte for byte), or `{html: ...}`, kept as HTML and sanitized.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from deckbuild.apkg import ids
from deckbuild.apkg import template_language as tpl
from deckbuild.apkg.notetypes import NoteType
from deckbuild.errors import Location, Problem, has_errors
from deckbuild.layout import MEDIA_DIR, NOTETYPES_DIR
from deckbuild.limits import MAX_TEXT_CHARS
from deckbuild.mediacheck import file_problems
from deckbuild.model import Card, RenderedNote
from deckbuild.notetypes.load import KEY_PATTERN, NOTETYPE_FILE
from deckbuild.notetypes.media import referenced, resolve
from deckbuild.notetypes.sanitize import sanitize_html
from deckbuild.yamlload import LocatedMap

if TYPE_CHECKING:
    from deckbuild.render import RenderMemo

CLOZE_SYNTAX = re.compile(r"\{\{c\d+(?:,\d+)*::")
DECK_PART = re.compile(r"^[^\x00-\x1f\"]+$")
GUID_PATTERN = re.compile(r"^[!-~]{1,64}$")  # printable ASCII without spaces: what Anki and genanki write


def parse_fields(
    item: LocatedMap, card_id: str, problems: list[Problem]
) -> tuple[tuple[tuple[str, str, bool], ...], dict[str, Location]]:
    """A card's `fields:` mapping -> (name, text, is_html) in written order, and where each value is."""
    value = item.get("fields")
    where = item.value_locs.get("fields", item.loc)
    if value is None:
        return (), {}
    if not isinstance(value, LocatedMap):
        problems.append(Problem(where, "E212", f"card '{card_id}': 'fields': expected a mapping of field name -> text"))
        return (), {}
    out: list[tuple[str, str, bool]] = []
    locations: dict[str, Location] = {}
    for name, text in value.items():
        loc = value.value_locs[name]
        locations[f"fields.{name}"] = loc
        is_html = False
        if isinstance(text, LocatedMap):
            if set(text) != {"html"} or not isinstance(text["html"], str):
                problems.append(
                    Problem(
                        loc,
                        "E212",
                        f"card '{card_id}': field '{name}': expected text, or {{html: text}}; got keys {', '.join(text)}",
                    )
                )
                continue
            text, is_html = text["html"], True
        elif text is None:
            text = ""
        elif isinstance(text, (int, float)) and not isinstance(text, bool):
            text = str(text)
        elif not isinstance(text, str):
            problems.append(Problem(loc, "E212", f"card '{card_id}': field '{name}': expected text, or {{html: text}}"))
            continue
        if len(text) > MAX_TEXT_CHARS:
            problems.append(
                Problem(
                    loc,
                    "E116",
                    f"card '{card_id}': field '{name}' is {len(text):,} characters long; the limit is {MAX_TEXT_CHARS:,}",
                )
            )
            continue
        out.append((str(name), text, is_html))
    return tuple(out), locations


def check_deck(value: object, where: Location, card_id: str | None, problems: list[Problem]) -> str:
    """A `deck:` value: subdeck names joined by '::' (E220); returns it, or '' when invalid."""
    owner = f"card '{card_id}': " if card_id else ""
    if not isinstance(value, str):
        problems.append(Problem(where, "E220", f"{owner}'deck': expected a subdeck name like Verbs or Verbs::Irregular"))
        return ""
    parts = value.split("::")
    if not value or any(not p.strip() or p != p.strip() or not DECK_PART.fullmatch(p) for p in parts):
        problems.append(
            Problem(
                where,
                "E220",
                f"{owner}'deck': expected subdeck names joined by '::', each non-empty, without spaces around it, "
                f"quotes or control characters; got {value!r}",
            )
        )
        return ""
    return value


def render_field(text: str, is_html: bool, memo: RenderMemo | None = None) -> str:
    """One field's HTML: sanitized HTML, or Markdown (plain text stays itself, escaped, unwrapped).

    `memo`: the build's renderings (render.RenderMemo), if any.
    """
    from deckbuild.render import RenderMemo, is_plain_text, plain

    memo = memo if memo is not None else RenderMemo()
    markdown_html, memoized = memo.markdown_html, memo.memoized

    if is_html:
        return sanitize_html(text)[0]
    stripped = text.strip()
    if not stripped:
        return ""
    as_text = html.escape(stripped, quote=False)
    if is_plain_text(stripped):
        return as_text
    if CLOZE_SYNTAX.search(stripped):  # only in cloze fields (E215): deletions kept, Markdown around them
        from deckbuild.cloze.emit import render_fact

        rendered = memoized("declared-cloze", stripped, lambda t: render_fact(t, markdown_html))
        return as_text if rendered == f"<p>{as_text}</p>" else rendered
    rendered = markdown_html(stripped)
    # Markdown found no syntax (Japanese punctuation, dashes, arrows ... are beyond the fast
    # check): the text is exactly itself, unwrapped, like any plain text.
    return as_text if rendered == f"<p>{plain(stripped)}</p>" else rendered


def field_values(card: Card, notetype: NoteType, memo: RenderMemo | None = None) -> tuple[str, ...]:
    """The note's field HTML in the note type's order (fields not given are empty)."""
    given = {name: (text, is_html) for name, text, is_html in card.note_fields}
    return tuple(render_field(*given[name], memo) if name in given else "" for name in notetype.fields)


def render_declared(card: Card, notetype: NoteType, namespace: str, due: int, memo: RenderMemo | None = None) -> RenderedNote:
    """A declared note type's card as a note: its own fields and tags only, its GUID (given or derived)."""
    from deckbuild.model import content_hash

    fields = field_values(card, notetype, memo)
    tags = tuple(sorted(set(card.tags)))
    return RenderedNote(
        card_id=card.id,
        guid=card_guid(namespace, card),
        notetype=notetype.key,
        fields=fields,
        tags=tags,
        due=due,
        content_hash=content_hash(notetype.key, fields, tags),
        previous_ids=card.previous_ids,
        deck=card.deck,
    )


def card_guid(namespace: str, card: Card) -> str:
    """The note's GUID: the card's `guid:` when given, else derived from the namespace and its id."""
    return card.guid or ids.card_guid(namespace, card.id, card.previous_ids)


def check_guids(namespace: str, cards: Sequence[Card]) -> list[Problem]:
    """E222: two cards whose notes would share a GUID (Anki imports both and nothing repairs it)."""
    problems: list[Problem] = []
    seen: dict[str, Card] = {}
    for card in cards:
        guid = card_guid(namespace, card)
        other = seen.setdefault(guid, card)
        if other is not card and other.id != card.id:  # equal ids are E108
            problems.append(
                Problem(
                    card.where("guid") if card.guid else card.where("id"),
                    "E222",
                    f"card '{card.id}': its note's GUID {guid!r} is also that of card '{other.id}' (at {other.where('id')}); "
                    "every note needs its own GUID: remove or change one 'guid:'",
                )
            )
    return problems


def _offset_location(card: Card, name: str, text: str, offset: int) -> Location:
    from deckbuild.validate import offset_location

    return offset_location(card.where(f"fields.{name}"), text, offset)


def check_declared_cards(root: Path, cards: Sequence[Card], declared: Mapping[str, NoteType]) -> list[Problem]:
    """Every check on cards of declared note types that needs the note type (E211-E219)."""
    from deckbuild.cloze.checks import math_problems, validate_fact

    problems: list[Problem] = []
    content_checked: set[str] = set()
    fronts = {key: [tpl.parse(front).nodes for _n, front, _b in nt.templates] for key, nt in declared.items()}
    for card in cards:
        if card.kind != "note":
            continue
        notetype = declared.get(card.notetype)
        if (
            notetype is None
            and KEY_PATTERN.fullmatch(card.notetype)
            and (root / NOTETYPES_DIR / card.notetype / NOTETYPE_FILE).is_file()
        ):
            continue  # a note type with problems of its own (reported where they are)
        if notetype is None:
            known = ", ".join(sorted(declared)) or "none: add notetypes/<key>/notetype.yaml"
            problems.append(
                Problem(card.where("notetype"), "E211", f"card '{card.id}': no note type '{card.notetype}'; declared: {known}")
            )
            continue
        cloze_fields = tpl.cloze_fields(fronts[card.notetype][0]) if notetype.is_cloze and fronts[card.notetype] else []
        before = len(problems)
        problems += _lint_clash(card, notetype)
        for name, text, is_html in card.note_fields:
            where = card.where(f"fields.{name}")
            if name not in notetype.fields:
                problems.append(
                    Problem(
                        where,
                        "E213",
                        f"card '{card.id}': note type '{notetype.key}' has no field '{name}'; expected one of {', '.join(notetype.fields)}",
                    )
                )
                continue
            found = CLOZE_SYNTAX.search(text)
            if found and name not in cloze_fields:
                why = (
                    f"field '{name}' is not shown through {{{{cloze:...}}}}"
                    if notetype.is_cloze
                    else f"note type '{notetype.key}' is not a cloze type"
                )
                problems.append(
                    Problem(
                        _offset_location(card, name, text, found.start()),
                        "E215",
                        f"card '{card.id}': cloze deletion {found.group(0)}...}}}} in field '{name}', but {why}; "
                        "use a cloze note type or remove the deletion",
                    )
                )
                continue
            if is_html:
                _safe, removed = sanitize_html(text)
                if removed:
                    problems.append(
                        Problem(
                            where,
                            "E218",
                            f"card '{card.id}': field '{name}': removed from the HTML: {', '.join(dict.fromkeys(removed))}",
                            "warning",
                        )
                    )
                continue
            checks = validate_fact(text) if found else (math_problems(text) if "\\" in text else [])
            if len(cloze_fields) > 1:  # c1..cN may be spread over several cloze fields
                checks = [issue for issue in checks if issue.code != "E403"]
            for issue in checks:
                problems.append(
                    Problem(
                        _offset_location(card, name, text, issue.offset),
                        issue.code,
                        f"card '{card.id}': field '{name}': {issue.message}",
                    )
                )
        if has_errors(problems[before:]):  # a warning (E218: HTML sanitized) leaves the card checkable
            continue
        values = _probe_values(card, notetype)
        ords = tpl.card_ords(notetype.fields, values, fronts[card.notetype], notetype.is_cloze)
        if not ords and notetype.is_cloze:
            problems.append(
                Problem(
                    card.where("fields"),
                    "E216",
                    f"card '{card.id}': a note of cloze type '{notetype.key}' needs at least one deletion {{{{c1::...}}}} "
                    f"in {', '.join(cloze_fields)}",
                )
            )
        elif not ords:
            problems.append(
                Problem(
                    card.where("fields"),
                    "E217",
                    f"card '{card.id}': Anki would make no card for this note: every template's front is empty with "
                    f"these fields; fill a field its front shows ({', '.join(_front_fields(fronts[card.notetype], notetype))})",
                )
            )
        given = {name: (text, is_html) for name, text, is_html in card.note_fields}
        for name, (text, is_html) in given.items():
            if not is_html and "[sound:" not in text:
                continue  # Markdown shows no other media (raw HTML and images never pass it)
            for media_name in referenced(render_field(text, is_html)):
                media, why = resolve(root, media_name)
                if why:
                    problems.append(
                        Problem(card.where(f"fields.{name}"), "E219", f"card '{card.id}': field '{name}': media {why}")
                    )
                elif media is not None and media.name not in content_checked:  # each file once, at its first use
                    content_checked.add(media.name)
                    prefix = f"card '{card.id}': field '{name}': media '{media.name}': "
                    problems += file_problems(media.path, f"{MEDIA_DIR}/{media.name}", card.where(f"fields.{name}"), prefix)
    return problems


def _lint_clash(card: Card, notetype: NoteType) -> list[Problem]:
    """E428: a `lint:` key on a card whose note type has a field of that name (either could be meant)."""
    clash = next((name for name in notetype.fields if name.strip().lower() == "lint"), None)
    if not card.lint or clash is None:
        return []
    return [
        Problem(
            card.where("lint"),
            "E428",
            f"card '{card.id}': 'lint' is the key that silences learning-lint warnings, but note type "
            f"'{notetype.key}' has a field '{clash}', so the key could mean either: rename the field, or remove "
            "'lint' from the card",
        )
    ]


def _probe_values(card: Card, notetype: NoteType) -> tuple[str, ...]:
    """Field values that decide the note's cards as its rendered fields do, without rendering Markdown.

    Markdown text that is not blank always renders to something Anki counts as content, and
    keeps its deletions' numbers; HTML is what the build ships (sanitized).  Rendering every
    field here would keep its Markdown out of the build's cache (the render stage stores it).
    """
    given = {name: (text, is_html) for name, text, is_html in card.note_fields}
    out = []
    for name in notetype.fields:
        text, is_html = given.get(name, ("", False))
        if is_html:
            out.append(sanitize_html(text)[0])
        elif notetype.is_cloze:
            out.append(text)
        else:
            out.append("x" if text.strip() else "")
    return tuple(out)


def _front_fields(fronts: Sequence[Sequence[tpl.Node]], notetype: NoteType) -> list[str]:
    names: list[str] = []
    for nodes in fronts:
        for node in tpl.walk(nodes):
            if isinstance(node, tpl.Replacement) and node.key in notetype.fields and node.key not in names:
                names.append(node.key)
    return names
