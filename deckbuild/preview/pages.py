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

from deckbuild.writer import atomic_write_bytes, make_folder, remove_file

MANIFEST = "preview-pages.json"


class SiteWriter:
    """Writes files under `out_dir`, skipping those the manifest says are already there."""

    def __init__(self, out_dir: Path, manifest: Path | None, known: dict[str, list[object]] | None = None) -> None:
        """`known`: the files a resident writer wrote last (then the manifest is not read, and
        a file not written again stays unless dropped: the site is updated, not rewritten)."""
        self.out_dir = out_dir
        self.manifest = manifest
        self.known: dict[str, list[object]] = dict(known) if known is not None else {}
        self.seen: dict[str, list[object]] = dict(known) if known is not None else {}
        self.written: list[str] = []
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
        make_folder(path.parent)
        atomic_write_bytes(path, data)  # a server reading the page meanwhile sees the old or the new one
        self.seen[rel] = [digest, *(self._stat(path) or [])]
        self.written.append(rel)

    def drop(self, rel: str) -> None:
        """The file `rel` is no part of the site any more (finish removes it)."""
        self.seen.pop(rel, None)

    def finish(self) -> None:
        """Remove files of the last run that this run did not write; save the manifest."""
        for rel in sorted(set(self.known) - set(self.seen)):
            remove_file(self.out_dir / rel)
        if self.manifest is not None:
            make_folder(self.manifest.parent)
            data = {"out": str(self.out_dir.resolve()), "files": dict(sorted(self.seen.items()))}
            atomic_write_bytes(self.manifest, (json.dumps(data) + "\n").encode())
