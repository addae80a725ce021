"""Names that come from the source: media a field references, and which names are safe."""

from __future__ import annotations

import html
import html.entities
import re

# Anki's own forms: an attribute `src="..."` of any tag (img, audio, video, source) and
# `[sound:...]`.  Remote references are not media of the deck (the build removes them).
_SRC = re.compile(r"""<[a-zA-Z][^>]*?\bsrc\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>"']+))""", re.IGNORECASE)
_SOUND = re.compile(r"\[sound:([^\]]+)\]")
_REMOTE = re.compile(r"^(?:[a-zA-Z][a-zA-Z0-9+.-]*:|//)")  # http:, https:, data:, javascript:, file:, //host/...
# What the build removes with its content (notetypes/sanitize.py): names inside it are no media of the card.
_REMOVED = re.compile(r"<(script|style)\b.*?(?:</\1\s*>|$)", re.IGNORECASE | re.DOTALL)
_UNSTORABLE = re.compile(r'[<>:"/\\|?*\x00-\x1f]')
_RESERVED = re.compile(r"^(con|prn|aux|nul|com[1-9]|lpt[1-9])(\..*)?$", re.IGNORECASE)
MAX_NAME = 255


def media_references(field_html: str) -> list[str]:
    """The local media file names a field names, in order, without duplicates."""
    found: list[str] = []
    field_html = _REMOVED.sub(" ", field_html)
    for match in _SRC.finditer(field_html):
        name = html.unescape(next(g for g in match.groups() if g is not None)).strip()
        if name and not _REMOTE.match(name) and name not in found:
            found.append(name)
    for match in _SOUND.finditer(field_html):
        name = html.unescape(match.group(1)).strip()
        if name and name not in found:
            found.append(name)
    return found


_URL = re.compile(r"""url\(\s*["']?([^"')\s]+)["']?\s*\)""", re.IGNORECASE)


def template_references(text: str) -> list[str]:
    """The `_` media files a template or CSS names (Anki exports only those, for templates)."""
    names = [name for name in media_references(text) if name.startswith("_")]
    for match in _URL.finditer(text):
        name = html.unescape(match.group(1))
        if name.startswith("_") and name not in names:
            names.append(name)
    return names


def unsafe_media_name(name: str) -> str | None:
    """Why a media name cannot be a file of media/ (a path, a device, ...); None if it can."""
    if not name or name in {".", ".."}:
        return "an empty name or a folder reference"
    if "/" in name or "\\" in name:
        return "a path: media names are flat file names (it would reach outside media/)"
    if _UNSTORABLE.search(name):
        return 'a control character or one of < > : " \\ | ? *'
    if name.startswith("."):
        return "a hidden name (starts with '.')"
    if name.endswith((".", " ")):
        return "a trailing dot or space"
    if _RESERVED.match(name):
        return "a name Windows reserves for a device"
    if len(name.encode()) > MAX_NAME:
        return f"longer than {MAX_NAME} bytes"
    return None


def unsafe_member_name(name: str) -> str | None:
    """Why a zip member name could escape the folder it is unpacked into; None if it cannot."""
    if not name or "\x00" in name:
        return "an empty name or a NUL character"
    if name.startswith(("/", "\\")) or re.match(r"^[a-zA-Z]:", name):
        return "an absolute path"
    if "\\" in name:
        return "a backslash (a Windows path separator)"
    if any(part == ".." for part in name.split("/")):
        return "a '..' component (a path out of the folder)"
    return None
