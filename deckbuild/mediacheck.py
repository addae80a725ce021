"""Media checked by content: a raster image is what its extension says; an SVG can neither run nor load anything.

A card shows its media in Anki's webview and in the preview site, where an SVG is a
document of its own: a `<script>`, an `onload=` or a `javascript:` link would run there,
and an `href` or `url()` to elsewhere would load from the network.  A file named `.png`
that holds something else (a shell script, say) ships into every learner's media folder.
So every file the package carries by an image extension is read here before it ships:
raster images through Pillow (the format it finds, the size, the structure), SVGs through
expat with every declaration refused (no entities, so no entity bomb).  Other media
(sound, fonts) are not checked by content.
"""

from __future__ import annotations

import io
import re
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from xml.parsers import expat

from deckbuild.errors import LocatedError, Location, Problem

RASTER_FORMATS = {".png": "PNG", ".jpg": "JPEG", ".jpeg": "JPEG", ".gif": "GIF", ".webp": "WEBP"}
"""Image extensions and the format (Pillow's name) their bytes must have."""

_SVG_NS = "http://www.w3.org/2000/svg"
_URL = re.compile(r"url\s*\(\s*(['\"]?)(.*?)\1\s*\)", re.IGNORECASE | re.DOTALL)
_CSS_COMMENT = re.compile(r"/\*.*?\*/", re.DOTALL)
_INVISIBLE = re.compile(r"[\x00-\x20\x7f]+")
_SCRIPT_SCHEMES = ("javascript:", "vbscript:")
_SIGNATURES = {"PNG": (b"\x89PNG\r\n\x1a\n",), "JPEG": (b"\xff\xd8\xff",), "GIF": (b"GIF87a", b"GIF89a"), "WEBP": (b"RIFF",)}
"""How each format's files begin: one that begins so but does not open is damaged, not another thing."""


@dataclass(frozen=True)
class Refusal:
    """Why one media file does not ship: a code, a message, and (in an SVG) the line and column."""

    code: str
    message: str
    line: int = 0
    col: int = 0

    def at(self, file_place: str, where: Location, prefix: str = "") -> Problem:
        """The problem at line:col of the file (shown as `file_place`), else at `where`."""
        location = Location(file_place, self.line, self.col) if self.line else where
        return Problem(location, self.code, prefix + self.message)

    def short(self) -> str:
        """`CODE message`, with line:col inside the file when known (for lists of files)."""
        inside = f" (line {self.line}:{self.col})" if self.line else ""
        return f"{self.code} {self.message}{inside}"


def checked(name: str) -> bool:
    """Whether files of this name are checked by content (raster images and SVGs)."""
    suffix = Path(name).suffix.lower()
    return suffix == ".svg" or suffix in RASTER_FORMATS


def refusals(name: str, data: bytes) -> list[Refusal]:
    """Every reason the file `name` holding `data` must not ship; empty if it may."""
    suffix = Path(name).suffix.lower()
    if suffix == ".svg":
        return _svg(data)
    expected = RASTER_FORMATS.get(suffix)
    if expected is None:
        return []
    return _raster(expected, suffix, data)


def file_problems(path: Path, file_place: str, where: Location, prefix: str = "") -> list[Problem]:
    """The problems of one media file on disk (see refusals), located in it or at `where`."""
    if not checked(path.name):
        return []
    try:
        data = path.read_bytes()
    except OSError:
        return []  # unreadable files are reported by the stage that resolves them
    return [r.at(file_place, where, prefix) for r in refusals(path.name, data)]


def refuse_files(files: Mapping[str, bytes], where: Location) -> None:
    """Raise E278 listing every file among `files` (name -> bytes) the check refuses, if any."""
    bad = [(name, found) for name in sorted(files) if (found := refusals(name, files[name]))]
    if not bad:
        return
    shown = "; ".join(f"'{name}': " + ", ".join(r.short() for r in found) for name, found in bad[:20])
    more = f"; and {len(bad) - 20} more" if len(bad) > 20 else ""
    raise LocatedError(
        where,
        "E278",
        f"{len(bad)} media file(s) are not what their names say, or could run script or load from the network: "
        f"{shown}{more}. Replace or remove them in Anki (Tools > Check Media) and export again. Nothing was written",
    )


# --- raster images ---------------------------------------------------------------------


def _raster(expected: str, suffix: str, data: bytes) -> list[Refusal]:
    from PIL import Image, UnidentifiedImageError  # only when a build ships a raster image

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Pillow's remarks (odd EXIF ...) are no problem of the deck's
        warnings.simplefilter("error", Image.DecompressionBombWarning)
        try:
            with Image.open(io.BytesIO(data), formats=sorted(set(RASTER_FORMATS.values()))) as image:
                found, (width, height) = image.format, image.size
                if found != expected:
                    return [_not_what_it_says(expected, suffix, f"{found} image data")]
                image.verify()
        except UnidentifiedImageError:
            if data.startswith(_SIGNATURES[expected]) and (expected != "WEBP" or data[8:12] == b"WEBP"):
                return [Refusal("E271", f"the {expected} image is damaged (its header is cut or broken); export it again")]
            return [_not_what_it_says(expected, suffix, _describe(data))]
        except (Image.DecompressionBombWarning, Image.DecompressionBombError):
            return [
                Refusal(
                    "E272",
                    f"the image has more than {Image.MAX_IMAGE_PIXELS:,} pixels (a decompression bomb, or far more "
                    "than a card shows); expected an image a phone can open, e.g. at most 4000 x 4000",
                )
            ]
        except Exception as exc:  # Pillow raises many kinds (SyntaxError, struct.error, OSError) for damage
            return [Refusal("E271", f"the {expected} image is damaged ({type(exc).__name__}: {exc}); export it again")]
    if width <= 0 or height <= 0:
        return [Refusal("E271", f"the {expected} image has no pixels ({width} x {height}); export it again")]
    return []


def _not_what_it_says(expected: str, suffix: str, got: str) -> Refusal:
    return Refusal("E270", f"expected {expected} image data (the name ends in {suffix}); got {got}")


def _describe(data: bytes) -> str:
    """What bytes that are no image look like, for the message."""
    if not data:
        return "an empty file"
    head = data[:24]
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError:
        return f"data beginning {head[:8].hex(' ')}"
    if all(c.isprintable() or c in "\t\r\n" for c in text):
        what = "a script" if text.startswith("#!") else "text"
        return f"{what} beginning {text.splitlines()[0][:24]!r}"
    return f"data beginning {head[:8].hex(' ')}"


# --- SVG ---------------------------------------------------------------------------------


class _Fatal(Exception):
    """A declaration: parsing stops here (no entity is ever expanded)."""

    def __init__(self, refusal: Refusal) -> None:
        super().__init__(refusal.message)
        self.refusal = refusal


def _svg(data: bytes) -> list[Refusal]:
    parser = expat.ParserCreate(namespace_separator=" ")
    found: list[Refusal] = []
    depth = 0
    style_at: list[tuple[int, int]] = []  # where each open <style> began
    style_text: list[str] = []

    def here() -> tuple[int, int]:
        return parser.CurrentLineNumber, parser.CurrentColumnNumber + 1

    def refuse(code: str, message: str) -> None:
        found.append(Refusal(code, message, *here()))

    def declaration(what: str) -> Callable[..., int]:
        def handler(*_args: object) -> int:
            line, col = here()
            message = f"a {what} (an SVG must declare nothing: entities can expand without end or read other files)"
            raise _Fatal(Refusal("E274", message, line, col))

        return handler

    def start(name: str, attributes: dict[str, str]) -> None:
        nonlocal depth
        namespace, _sep, local = name.rpartition(" ")
        if depth == 0 and (local != "svg" or namespace != _SVG_NS):
            shown = f"<{local}>" + (f" in namespace {namespace!r}" if namespace else " without the SVG namespace")
            raise _Fatal(Refusal("E273", f"expected an <svg> root element in the namespace {_SVG_NS}; got {shown}", *here()))
        depth += 1
        if local.lower() == "script":
            refuse("E275", "<script> element: an SVG on a card must not run script; remove it")
        elif local.lower() == "foreignobject":
            refuse("E277", "<foreignObject> element: it embeds HTML, which the SVG checks do not cover; remove it")
        elif local.lower() == "style":
            style_at.append(here())
            style_text.clear()
        for attr, value in attributes.items():
            _attribute(local, attr.rpartition(" ")[2], value, refuse)

    def end(name: str) -> None:
        nonlocal depth
        depth -= 1
        if name.rpartition(" ")[2].lower() == "style" and style_at:
            line, col = style_at.pop()
            for code, message in _css("".join(style_text)):
                found.append(Refusal(code, f"<style> element: {message}", line, col))

    def text(chunk: str) -> None:
        if style_at:
            style_text.append(chunk)

    def instruction(target: str, _data: str) -> None:
        if target.lower() == "xml-stylesheet":
            refuse("E276", "<?xml-stylesheet?> instruction: it loads a style sheet from another file; remove it")

    parser.StartDoctypeDeclHandler = declaration("DOCTYPE declaration")
    parser.EntityDeclHandler = declaration("ENTITY declaration")
    parser.ElementDeclHandler = declaration("ELEMENT declaration")
    parser.AttlistDeclHandler = declaration("ATTLIST declaration")
    parser.NotationDeclHandler = declaration("NOTATION declaration")
    parser.ExternalEntityRefHandler = declaration("reference to an external entity")
    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.CharacterDataHandler = text
    parser.ProcessingInstructionHandler = instruction
    try:
        parser.Parse(data, True)
    except _Fatal as stop:
        return [stop.refusal]
    except expat.ExpatError as exc:
        why = expat.ErrorString(exc.code) if exc.code is not None else str(exc)
        return [Refusal("E273", f"not well-formed XML: {why}; expected an SVG document", exc.lineno, exc.offset + 1)]
    return found


def _attribute(element: str, name: str, value: str, refuse: Callable[[str, str], None]) -> None:
    """An attribute's refusals: a handler, a script URL, a reference to anything but a #fragment."""
    lowered = name.lower()
    compact = _INVISIBLE.sub("", value).lower()
    if lowered.startswith("on"):
        refuse("E275", f"{name}= on <{element}>: an event handler runs script; remove it")
    elif any(scheme in compact for scheme in _SCRIPT_SCHEMES):
        refuse("E275", f"{name}= on <{element}> holds a script URL ({value.strip()[:40]!r}); remove it")
    elif lowered == "href" and not value.strip().startswith("#"):
        refuse(
            "E276",
            f"{name}= on <{element}> refers to {value.strip()[:60]!r}; expected a #fragment of this file "
            "(a card loads nothing from other files or the network)",
        )
    elif lowered == "attributename" and (compact.startswith("on") or compact.rpartition(":")[2] == "href"):
        refuse("E275", f"<{element}> animates {value.strip()!r}, which can make a link or a handler run script; remove it")
    elif lowered == "style" or "url" in compact or "@import" in compact:
        for code, message in _css(value):
            refuse(code, f"{name}= on <{element}>: {message}")


def _css(text: str) -> Iterable[tuple[str, str]]:
    """Refusals of style text: @import, url() to anything but a #fragment, script URLs, escapes."""
    css = _CSS_COMMENT.sub("", text)
    if "\\" in css:
        yield "E276", "CSS escapes (\\...), which can hide a url() or @import; write the characters out"
        return
    if "@import" in css.lower():
        yield "E276", "@import loads a style sheet from another file; remove it"
    if any(scheme in _INVISIBLE.sub("", css).lower() for scheme in _SCRIPT_SCHEMES):
        yield "E275", "a script URL in CSS; remove it"
    for match in _URL.finditer(css):
        target = match.group(2).strip()
        if not target.startswith("#"):
            yield "E276", f"url({target[:60]}) refers to another file or the network; expected url(#fragment)"
