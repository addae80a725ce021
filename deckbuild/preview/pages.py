"""Incremental writes of the preview site: a manifest of every file's hash in .deckbuild-cache/.

`deckbuild serve` rewrites only the files whose bytes changed (the pages of edited cards,
the index) and leaves the rest untouched, so the result is byte-identical to a full
`deckbuild preview` while most files are never opened.  A file changed or removed behind
the manifest's back (size or mtime differ) is written again.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from deckbuild.writer import atomic_write_bytes, make_folder, remove_file, replace_page

MANIFEST = "preview-pages.json"


class SiteWriter:
    """Writes files under `out_dir`, skipping those the manifest says are already there."""

    def __init__(self, out_dir: Path, manifest: Path | None, known: dict[str, list[object]] | None = None) -> None:
        """`known`: the files a resident writer wrote last (then the manifest is not read, and
        a file not written again stays unless dropped: the site is updated, not rewritten)."""
        self.out_dir = out_dir
        self.manifest = manifest
        self.known: dict[str, list[object]] = known if known is not None else {}  # read, never changed
        self.seen: dict[str, list[object]] = dict(known) if known is not None else {}
        # Updating `known` (seen starts as it): the files dropped are the ones finish removes.
        self._dropped: set[str] | None = set() if known is not None else None
        self.written: list[str] = []
        self.renamed = False  # a file was added or dropped: the manifest's names changed
        self._folders: set[Path] = set()  # the folders this writer made sure of
        if known is None and manifest is not None and manifest.is_file():
            try:
                data = json.loads(manifest.read_text(encoding="utf-8"))
                if data.get("out") == str(out_dir.resolve()):
                    self.known = dict(data.get("files", {}))
            except (OSError, ValueError):
                self.known = {}

    def _stat(self, path: Path) -> list[object] | None:
        try:
            st = path.stat()
        except OSError:
            return None
        return [st.st_size, st.st_mtime_ns]

    def write(self, rel: str, data: bytes) -> None:
        digest = hashlib.sha256(data).hexdigest()
        path = self.out_dir / rel
        entry = self.known.get(rel)
        if entry is not None and entry[0] == digest and self._stat(path) == entry[1:]:
            self.seen[rel] = entry
            return
        if entry is None:
            self.renamed = True
        if path.parent not in self._folders:
            make_folder(path.parent)
            self._folders.add(path.parent)
        # A server reading the page meanwhile sees the old or the new one; not synced (the
        # manifest's size and time of a page a crash lost make the next run write it again).
        replace_page(path, data)
        self.seen[rel] = [digest, *(self._stat(path) or [])]
        self.written.append(rel)

    def drop(self, rel: str) -> None:
        """The file `rel` is no part of the site any more (finish removes it)."""
        if self.seen.pop(rel, None) is not None:
            self.renamed = True
            if self._dropped is not None:
                self._dropped.add(rel)

    def start_over(self) -> None:
        """Write the whole site again: the files of `known` this writer does not write go."""
        self.seen = {}
        self._dropped = None

    def finish(self, manifest: bool = True) -> None:
        """Remove files of the last run that this run did not write; save the manifest, unless
        `manifest` is False (serve saves it later: save_manifest)."""
        gone = self._dropped - self.seen.keys() if self._dropped is not None else self.known.keys() - self.seen.keys()
        for rel in sorted(gone):
            remove_file(self.out_dir / rel)
        if manifest and self.manifest is not None:
            save_manifest(self.manifest, self.out_dir, self.seen)


def save_manifest(manifest: Path, out_dir: Path, files: dict[str, list[object]]) -> None:
    """The manifest of the site in `out_dir`: every file's hash, size and mtime.

    A manifest left behind the site by the files rewritten since (serve saves it with the
    package) costs only time: their size or mtime differ, so they are written again; a file
    added or removed since is not named in it, so serve saves it at once when the names change."""
    make_folder(manifest.parent)
    data = {"out": str(out_dir.resolve()), "files": dict(sorted(files.items()))}
    atomic_write_bytes(manifest, (json.dumps(data) + "\n").encode())
