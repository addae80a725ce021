"""Reading an .apkg: refuse hostile zips, then read it through the official Anki backend.

The package is never unpacked by name.  Its members are checked (names that would leave
a folder, a zip bomb: total and per-member size, compression ratio, zstd expansion), the
members Anki reads are copied, size-capped, into a clean package in a private temp
folder, and that copy is imported into a fresh, private collection with Anki's own
importer -- which reads every package version Anki does (collection.anki2, .anki21,
zstd-compressed .anki21b with its protobuf media map).  Note types, notes, decks and
media are then read from that collection with the official API.
"""

from __future__ import annotations

import json
import re
import tempfile
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from deckbuild.adopt.model import SourceDeck, SourceNote, SourceNotetype, SourceTemplate
from deckbuild.adopt.names import media_references, template_references, unsafe_media_name, unsafe_member_name
from deckbuild.errors import LocatedError, Location
from deckbuild.mediacheck import refuse_files

MAX_MEMBERS = 200_000
MAX_MEMBER_BYTES = 1 << 30  # one file of the package, unpacked
MAX_TOTAL_BYTES = 2 << 30  # all of them together
MAX_RATIO = 200  # unpacked / packed, for members over RATIO_FLOOR (a SQLite file packs ~15:1)
RATIO_FLOOR = 1 << 20
MAX_MEDIA_MAP = 64 << 20
_COLLECTIONS = ("collection.anki21b", "collection.anki21", "collection.anki2")  # Anki's preference order
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_CHUNK = 1 << 16
_PLACEHOLDER = "deckbuild adopt: placeholder note type"


def read_package(path: Path) -> SourceDeck:
    """The deck in an .apkg; LocatedError (E251-E257) for a broken or hostile package."""
    where = Location(str(path))
    with tempfile.TemporaryDirectory(prefix="deckbuild-adopt-") as tmp:
        clean = Path(tmp) / "package.apkg"
        _checked_copy(path, clean, where)
        with _private_collection(Path(tmp) / "collection") as col:
            _import(col, clean, where)
            return _read_collection(col, str(path), where)


def _checked_copy(path: Path, clean: Path, where: Location) -> None:
    """Check every member of the zip; copy the ones Anki reads to `clean`, size-capped."""
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise LocatedError(where, "E251", f"not an Anki package: expected a zip file (.apkg); {exc}") from None
    with archive:
        members = archive.infolist()
        if len(members) > MAX_MEMBERS:
            raise LocatedError(where, "E253", f"the package holds {len(members)} files; at most {MAX_MEMBERS} are read")
        declared = 0
        seen: set[str] = set()
        for info in members:
            # Two members of one name: readers disagree on which one counts (Python's takes
            # the last, others the first), so what was checked might not be what is read.
            if info.filename in seen:
                raise LocatedError(
                    where, "E252", f"member {info.filename!r} is in the package twice; refused, nothing was written"
                )
            seen.add(info.filename)
            why = unsafe_member_name(info.filename)
            if why is not None:
                raise LocatedError(
                    where, "E252", f"member {info.filename!r}: its name is {why}; refused, nothing was unpacked or written"
                )
            _check_sizes(info.filename, info.file_size, info.compress_size, where)
            declared += info.file_size
            if declared > MAX_TOTAL_BYTES:
                raise LocatedError(where, "E253", f"the package unpacks to more than {_size(MAX_TOTAL_BYTES)}; refused")
        names = {info.filename for info in members}
        if not any(name in names for name in _COLLECTIONS):
            raise LocatedError(
                where, "E254", f"not an Anki deck package: expected {' or '.join(_COLLECTIONS)} inside; found none"
            )
        wanted = [info for info in members if info.filename in {*_COLLECTIONS, "meta", "media"} or info.filename.isdigit()]
        total = 0
        try:
            with zipfile.ZipFile(clean, "w", zipfile.ZIP_STORED) as out:
                for info in wanted:
                    with archive.open(info) as src, out.open(info.filename, "w", force_zip64=True) as dst:
                        zstd = _copy_capped(src, dst, info, where)
                    total += info.file_size
                    if zstd:
                        with archive.open(info) as src:
                            total += _zstd_size(src, info, where)
                    if total > MAX_TOTAL_BYTES:
                        raise LocatedError(where, "E253", f"the package unpacks to more than {_size(MAX_TOTAL_BYTES)}; refused")
                if "media" in names:
                    if archive.getinfo("media").file_size > MAX_MEDIA_MAP:
                        raise LocatedError(where, "E253", f"the package's media list is larger than {_size(MAX_MEDIA_MAP)}")
                    _check_media_map(archive.read("media"), where)
        except (zipfile.BadZipFile, OSError, EOFError, RuntimeError, NotImplementedError) as exc:
            raise LocatedError(where, "E251", f"the package is damaged and cannot be unpacked: {exc}") from None


def _check_sizes(name: str, unpacked: int, packed: int, where: Location) -> None:
    if unpacked > MAX_MEMBER_BYTES:
        raise LocatedError(where, "E253", f"member {name!r} unpacks to {_size(unpacked)}; at most {_size(MAX_MEMBER_BYTES)}")
    if unpacked > RATIO_FLOOR and unpacked > MAX_RATIO * max(packed, 1):
        raise LocatedError(
            where,
            "E253",
            f"member {name!r} unpacks to {unpacked // max(packed, 1)} times its packed size (a zip bomb?); at most {MAX_RATIO}",
        )


def _copy_capped(src: IO[bytes], dst: IO[bytes], info: zipfile.ZipInfo, where: Location) -> bool:
    """Copy one member, counting what it really unpacks to (a header may lie); True if zstd data."""
    count = 0
    chunk = src.read(_CHUNK)
    zstd = chunk.startswith(_ZSTD_MAGIC)
    while chunk:
        count += len(chunk)
        _check_sizes(info.filename, count, info.compress_size, where)
        dst.write(chunk)
        chunk = src.read(_CHUNK)
    return zstd


def _zstd_size(src: IO[bytes], info: zipfile.ZipInfo, where: Location) -> int:
    """What a zstd member expands to, read in bounded chunks and never held: a zstd bomb stops early."""
    import zstandard

    expanded = 0
    try:
        with zstandard.ZstdDecompressor().stream_reader(src, read_across_frames=True) as reader:
            while chunk := reader.read(_CHUNK):
                expanded += len(chunk)
                _check_sizes(info.filename, expanded, info.compress_size, where)
    except zstandard.ZstdError as exc:
        raise LocatedError(where, "E251", f"member {info.filename!r}: damaged zstd data ({exc})") from None
    return expanded


def _check_media_map(data: bytes, where: Location) -> None:
    """Refuse media names that would leave the media folder (legacy JSON or zstd protobuf map)."""
    names: list[str] = []
    if data.startswith(_ZSTD_MAGIC):
        import zstandard
        from anki.import_export_pb2 import MediaEntries

        try:
            with zstandard.ZstdDecompressor().stream_reader(data) as reader:
                raw = reader.read(MAX_MEDIA_MAP + 1)
            if len(raw) > MAX_MEDIA_MAP:
                raise LocatedError(where, "E253", f"the package's media list unpacks to more than {_size(MAX_MEDIA_MAP)}")
            entries = MediaEntries()
            entries.ParseFromString(raw)
        except LocatedError:
            raise
        except Exception as exc:  # a damaged map in any form is the package's fault
            raise LocatedError(where, "E251", f"the package's media list is damaged: {exc}") from None
        names = [entry.name for entry in entries.entries]
    elif data.strip():
        try:
            mapping = json.loads(data)
        except ValueError as exc:
            raise LocatedError(where, "E251", f"the package's media list is damaged: {exc}") from None
        if not isinstance(mapping, dict):
            raise LocatedError(where, "E251", "the package's media list is damaged: expected a JSON object")
        names = [str(value) for value in mapping.values()]
    for name in names:
        why = unsafe_media_name(name)
        if why is not None:
            raise LocatedError(where, "E257", f"media file {name!r}: its name is {why}; refused, nothing was written")


@contextmanager
def _private_collection(folder: Path) -> Iterator[Any]:
    """A new, empty collection (no stock note types to clash with the package's)."""
    from anki.collection import Collection
    from anki.models import NotetypeId

    folder.mkdir()
    col = Collection(str(folder / "collection.anki2"))
    try:
        # Anki keeps at least one note type; the last one is renamed out of the way, so an
        # imported "Basic" keeps its name instead of becoming "Basic+".
        stock = col.models.all_names_and_ids()
        for entry in stock[1:]:
            col.models.remove(NotetypeId(entry.id))
        last = col.models.get(NotetypeId(stock[0].id))
        assert last is not None
        last["name"] = _PLACEHOLDER
        col.models.update_dict(last)
        yield col
    finally:
        col.close()


def _import(col: Any, package: Path, where: Location) -> None:
    from anki.collection import ImportAnkiPackageOptions, ImportAnkiPackageRequest

    request = ImportAnkiPackageRequest(
        package_path=str(package), options=ImportAnkiPackageOptions(with_scheduling=False, with_deck_configs=False)
    )
    try:
        col.import_anki_package(request)
    except Exception as exc:  # the backend's errors (DBError, BackendError...) all mean: unreadable package
        message = re.sub(r"\s+", " ", str(exc)).strip() or type(exc).__name__
        raise LocatedError(
            where, "E255", f"Anki cannot read the package's collection (a damaged or foreign database): {message}"
        ) from None
    col.models._clear_cache()


@contextmanager
def imported(path: Path) -> Iterator[Any]:
    """A private collection holding the package's notes, checked and imported as read_package does."""
    where = Location(str(path))
    with tempfile.TemporaryDirectory(prefix="deckbuild-adopt-") as tmp:
        clean = Path(tmp) / "package.apkg"
        _checked_copy(path, clean, where)
        with _private_collection(Path(tmp) / "collection") as col:
            _import(col, clean, where)
            yield col


def read_notetypes(col: Any) -> list[SourceNotetype]:
    """Every note type of a collection, with Anki's ids and mod (the placeholder adopt adds left out)."""
    notetypes = []
    for entry in col.models.all_names_and_ids():
        data = col.models.get(entry.id)
        if data is None or data["name"] == _PLACEHOLDER:
            continue
        templates = tuple(SourceTemplate(t["name"], t["qfmt"], t["afmt"], _int_or_none(t.get("id"))) for t in data["tmpls"])
        notetypes.append(
            SourceNotetype(
                key=str(data["id"]),
                name=data["name"],
                cloze=data["type"] == 1,
                fields=tuple(f["name"] for f in data["flds"]),
                templates=templates,
                css=data["css"],
                id=int(data["id"]),
                field_ids=tuple(_int_or_none(f.get("id")) for f in data["flds"]),
                mod=int(data["mod"]),
                sort_field=int(data.get("sortf", 0) or 0),
            )
        )
    return notetypes


def _read_collection(col: Any, source: str, where: Location) -> SourceDeck:
    notetypes = read_notetypes(col)
    # A note's deck is that of its first card (Anki leaves an existing card where it is).
    decks: dict[int, str] = {}
    for nid, did in col.db.all("select nid, did from cards order by nid, ord"):
        decks.setdefault(nid, col.decks.name(did))
    notes = []
    media: dict[str, bytes] = {}
    media_dir = Path(col.media.dir())
    for nid in sorted(col.find_notes("")):
        note = col.get_note(nid)
        where_note = f"note {nid}"
        fields = tuple(note.fields)
        for text in fields:
            _collect_media(text, media_dir, media, where, where_note)
        notes.append(
            SourceNote(note.guid, str(note.mid), fields, tuple(note.tags), decks.get(nid, ""), int(note.mod), where_note)
        )
    for notetype in notetypes:
        for text in (notetype.css, *(t.front + t.back for t in notetype.templates)):
            for name in template_references(text):
                if unsafe_media_name(name) is None and (media_dir / name).is_file():
                    media.setdefault(name, (media_dir / name).read_bytes())
    refuse_files(media, where)  # checked as a build checks them: none ships unless all pass
    decks_data = {entry.name: col.decks.get(entry.id) for entry in col.decks.all_names_and_ids()}
    descriptions = {name: str(data["desc"]) for name, data in decks_data.items()}
    markdown = frozenset(name for name, data in decks_data.items() if data.get("md") is True)
    return SourceDeck(source, tuple(notetypes), tuple(notes), media, descriptions, markdown)


def _collect_media(text: str, media_dir: Path, media: dict[str, bytes], where: Location, note: str) -> None:
    for name in media_references(text):
        why = unsafe_media_name(name)
        if why is not None:
            raise LocatedError(where, "E257", f"{note} references media {name!r}: its name is {why}; refused")
        path = media_dir / name
        if name not in media and path.is_file():
            media[name] = path.read_bytes()


def _int_or_none(value: object) -> int | None:
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else None


def _size(count: int) -> str:
    return f"{count / (1 << 20):.0f} MB"
