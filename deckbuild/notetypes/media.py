"""Media named by declared note types' fields (`<img src>`, `[sound:...]`) and templates (`_files`).

Anki copies only files referenced from note fields, by their exact name, so these ship
under the name the field uses (flat, from media/); files only templates or CSS use must
be named with a leading `_` (Anki's rule) and ship when media/ has them.
"""

from __future__ import annotations

import html
import re
import urllib.parse
from collections.abc import Iterable, Mapping
from pathlib import Path

from deckbuild.apkg.notetypes import NoteType
from deckbuild.errors import Location, Problem
from deckbuild.layout import MEDIA_DIR
from deckbuild.media import portable_name_problem
from deckbuild.mediacheck import file_problems
from deckbuild.model import MediaFile

_SRC = re.compile(r"<(?:img|audio|video|source|track)\b[^>]*?\ssrc\s*=\s*(?:\"([^\"]*)\"|'([^']*)'|([^\s>]+))", re.IGNORECASE)
_SOUND = re.compile(r"\[sound:([^\]]+)\]")
_UNDERSCORE = re.compile(r"""["'(\s]((?:_)[^"'()\s<>]+\.[A-Za-z0-9]{1,8})(?=["')\s])""")


def referenced(field_html: str) -> list[str]:
    """Local media names a field shows or plays, in order (remote URLs and data: are not media)."""
    names: list[str] = []
    for match in _SRC.finditer(field_html):
        raw = html.unescape(next(g for g in match.groups() if g is not None)).strip()
        if raw and not re.match(r"^[a-z][a-z0-9+.-]*:|^//", raw, re.IGNORECASE):
            names.append(raw)
    names += [html.unescape(m.group(1)).strip() for m in _SOUND.finditer(field_html)]
    return list(dict.fromkeys(names))


def resolve(root: Path, name: str) -> tuple[MediaFile | None, str]:
    """media/<name> as a package file, or None and why not (missing, not flat, unportable, outside)."""
    candidates = [name] if urllib.parse.unquote(name) == name else [name, urllib.parse.unquote(name)]
    for candidate in candidates:
        if "/" in candidate or "\\" in candidate or candidate in (".", "..") or "\x00" in candidate:
            return None, f"'{name}' is not a plain file name in {MEDIA_DIR}/ (Anki's media folder is flat)"
        path = root / MEDIA_DIR / candidate
        if not path.is_file():
            continue
        if not path.resolve().is_relative_to((root / MEDIA_DIR).resolve()):
            return None, f"'{name}' is a link to a file outside {MEDIA_DIR}/"
        why = portable_name_problem(candidate)
        if why is not None:
            return None, f"'{name}' {why}"
        return MediaFile(candidate, path), ""
    return None, f"'{name}' not found in {MEDIA_DIR}/"


def template_media(root: Path, notetypes: Iterable[NoteType]) -> list[MediaFile]:
    """`_`-named files of media/ that declared templates or CSS name (fonts, scripts, pictures)."""
    found: dict[str, MediaFile] = {}
    for notetype in notetypes:
        if not notetype.declared:
            continue
        texts = [notetype.css, *(part for _name, front, back in notetype.templates for part in (front, back))]
        for text in texts:
            for match in _UNDERSCORE.finditer(" " + text + " "):
                media, _why = resolve(root, match.group(1))
                if media is not None:
                    found[media.name] = media
    return sorted(found.values(), key=lambda m: m.name)


def template_media_problems(root: Path, notetypes: Iterable[NoteType]) -> list[Problem]:
    """The content check (mediacheck.py) of every `_` file declared templates or CSS name, each
    file once, located in the file or at the first note type's notetype.yaml."""
    problems: list[Problem] = []
    seen: set[str] = set()
    for notetype in notetypes:
        for media in template_media(root, [notetype]):
            if media.name in seen:
                continue
            seen.add(media.name)
            where = Location(notetype.source or f"notetypes/{notetype.key}")
            prefix = f"note type '{notetype.key}': template file '{media.name}': "
            problems += file_problems(media.path, f"{MEDIA_DIR}/{media.name}", where, prefix)
    return problems


def notes_media(root: Path, fields_by_note: Iterable[Iterable[str]], declared: Mapping[str, NoteType]) -> list[MediaFile]:
    """Every file the declared notes' fields name, plus the templates' `_` files (validated before)."""
    found: dict[str, MediaFile] = {m.name: m for m in template_media(root, declared.values())}
    for fields in fields_by_note:
        for field_html in fields:
            for name in referenced(field_html):
                media, _why = resolve(root, name)
                if media is not None:
                    found.setdefault(media.name, media)
    return sorted(found.values(), key=lambda m: m.name)
