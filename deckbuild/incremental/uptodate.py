"""Fingerprints of a build's inputs, so an unchanged project skips the whole build.

Authors rebuild after every edit, and most rebuilds change nothing.  A build records a
fingerprint of everything its output depends on; the next `deckbuild build` recomputes it
and, when it matches and the outputs are still the ones that build wrote, prints "up to
date" without importing YAML, Markdown or genanki.  This module must therefore stay light:
standard library only, no deckbuild stage imported.

What the fingerprint covers (any change means a real build):
- deck.yaml, every file under cards/, media/ and notetypes/ and every generator in
  diagrams/*.py (names and content hashes),
- the code that turns them into a package: every source file of the deckbuild package,
  the interpreter version, and the installed genanki/markdown/yaml/chevron modules
  (path, size, mtime: an upgrade changes the HTML or the package),
- the outputs as the last build left them: deckbuild.lock and the .apkg (content hashes).

Hashing every input and output again is most of a no-op's time in a large deck, so the
state also keeps each file's stat signature (where it leads, device, inode, size, mtime and
ctime in nanoseconds, mode) beside its hash, and a file whose signature is unchanged is
not read again.  That is sound only for a file that was already *settled* when it was
hashed: its newest timestamp was older than the moment it was read, by more than the
file system's timestamp granularity (the racy-git problem).  A later write then gets a
newer timestamp -- the clock has moved past it -- so it changes the signature whatever
the write keeps (same size, same inode, even a same-size edit).  A file modified shortly
before it was hashed (an output a build just wrote, a card saved just before the build)
is recorded without a signature and hashed again by the next check, which records it
once settled.  ctime is in the signature because no program can set it back (mtime can
be); what is left outside this proof is a clock stepped backwards across the margin, or
a network file system whose server clock lags this one's by more than it.

The generated-diagram cache is not an input: its images are a pure function of the cards'
diagram specs and the code (both covered), and a build fills it, so counting it would
make the build after a first diagram render a needless full one.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import sys
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from deckbuild import __version__
from deckbuild.layout import CACHE_DIR, CARDS_DIR, CONFIG_FILE, DIAGRAMS_DIR, MEDIA_DIR, NOTETYPES_DIR, RECORD_FILE, RETIRED_FILE

STATE_FILE = "build-state.json"
_DEPENDENCIES = ("genanki", "markdown", "yaml", "chevron", "matplotlib", "numpy")
_code: str | None = None
_SETTLED_NS = 100_000_000
"""How much older than the moment it is read a file's timestamps must be to trust its
signature later: above the timestamp granularity of nanosecond file systems (one tick of
the kernel's coarse clock, at most 10 ms) with room to spare."""
_SETTLED_COARSE_NS = 2_000_000_000
"""The same on file systems that keep whole or even seconds (FAT, ext3, HFS+)."""
_code_seen: dict[str, list[Any]] = {}
"""The signatures code_fingerprint took of deckbuild's own files (keys "deckbuild:<path>")."""
_inputs_files: dict[tuple[str, str], dict[str, list[Any]]] = {}
"""(root, inputs fingerprint) -> the signatures inputs_fingerprint took, for save_state."""

Signature = list[Any]
"""[where, device, inode, size, mtime_ns, ctime_ns, mode, content hash] of a hashed file."""


def _where(path: Path) -> str:
    """Where a path really leads: a file swapped for a link (even to equal bytes) must rebuild,
    so the build's checks on links out of the project run again."""
    real = os.path.realpath(path)
    return "link:" + real if os.path.islink(path) or real != os.path.abspath(path) else ""


def _hash_file(path: Path) -> str:
    return _hash(path, _where(path), os.stat(path).st_mode)


def _hash(path: Path, where: str, mode: int) -> str:
    digest = hashlib.blake2b(digest_size=16)
    digest.update(where.encode())
    if not stat.S_ISREG(mode):
        # A pipe, socket or device is never opened (a pipe would block forever); its kind
        # is enough: the build that follows refuses it (E125).
        digest.update(f"special:{stat.S_IFMT(mode)}".encode())
        return digest.hexdigest()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _settled(st: os.stat_result, read_at: int) -> bool:
    """Whether any write after `read_at` (time.time_ns() before the file was statted and
    read) is bound to change the file's timestamps: they are older than it by a margin."""
    coarse = st.st_mtime_ns % 1_000_000_000 == 0 and st.st_ctime_ns % 1_000_000_000 == 0
    newest = max(st.st_mtime_ns, st.st_ctime_ns)
    return newest < read_at - (_SETTLED_COARSE_NS if coarse else _SETTLED_NS)


class _Files:
    """Content hashes of files, taking the last state's for a file whose signature is unchanged.

    `seen` collects the signatures a later check may trust: the unchanged ones, and the
    files hashed here that were settled when read.
    """

    def __init__(self, root: Path, known: Mapping[str, Signature]) -> None:
        self.root = root
        self.known = known
        self.seen: dict[str, Signature] = {}

    def hash(self, path: Path, key: str | None = None) -> str:
        rel = key if key is not None else os.path.relpath(path, self.root)
        where = _where(path)
        read_at = time.time_ns()
        st = os.stat(path)
        signature: Signature = [where, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_mode]
        old = self.known.get(rel)
        if isinstance(old, list) and old[:-1] == signature and isinstance(old[-1], str):
            self.seen[rel] = old
            return old[-1]
        content = _hash(path, where, st.st_mode)
        if _settled(st, read_at):
            self.seen[rel] = [*signature, content]
        return content


def code_fingerprint(files: _Files | None = None) -> str:
    """deckbuild's own sources, its version, Python's, and the libraries that shape the output.

    Caches keyed by this can never serve a result made by other code.  Computed once per
    process; costs a few milliseconds (a hundred small files, no imports), less when
    `files` knows their signatures from the last build.
    """
    global _code
    if _code is not None:
        if files is not None:
            files.seen.update(_code_seen)  # so the state keeps them for the next process
        return _code
    import importlib.util

    files = files if files is not None else _Files(Path.cwd(), {})
    digest = hashlib.blake2b(digest_size=16)
    digest.update(f"{__version__}\0{sys.version}\0".encode())
    package = Path(__file__).resolve().parent.parent  # the whole deckbuild package
    for rel in _code_files(package):
        content = files.hash(package / rel, key=f"deckbuild:{rel}")
        digest.update(f"{rel}\0{content}\0".encode())
    for name in _DEPENDENCIES:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        origin = spec.origin if spec is not None else None
        if origin and os.path.exists(origin):
            st = os.stat(origin)
            digest.update(f"{name}\0{origin}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
        else:
            digest.update(f"{name}\0missing\0".encode())
    _code = digest.hexdigest()
    _code_seen.update((key, value) for key, value in files.seen.items() if key.startswith("deckbuild:"))
    return _code


def _code_files(package: Path) -> list[str]:
    """Every source and template file of the package, as sorted relative POSIX paths."""
    found = []
    for dirpath, dirnames, filenames in os.walk(package):
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        base = Path(dirpath).relative_to(package).as_posix()
        for name in filenames:
            if name.endswith((".py", ".html", ".css", ".js")):
                found.append(name if base == "." else f"{base}/{name}")
    return sorted(found)


def _tree(root: Path, folder: str, files: _Files) -> Iterable[tuple[str, str]]:
    """(relative path, content hash) of every file under root/folder, sorted."""
    base = root / folder
    if not base.is_dir():
        return []
    entries = []
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames.sort()
        for name in sorted(filenames):
            path = Path(dirpath) / name
            entries.append((path.relative_to(root).as_posix(), files.hash(path)))
    return entries


def _generators(root: Path, files: _Files) -> list[tuple[str, str]]:
    """(relative path, content hash) of the project's diagram generators, diagrams/*.py."""
    try:
        with os.scandir(root / DIAGRAMS_DIR) as entries:
            paths = sorted(Path(e.path) for e in entries if e.name.endswith(".py") and e.is_file())
    except OSError:
        return []
    return [(path.relative_to(root).as_posix(), files.hash(path)) for path in paths]


def inputs_fingerprint(root: Path) -> str:
    """Everything a build reads, apart from its own outputs (see the module docstring)."""
    files = _Files(root, _load_state(root).get("files", {}))
    digest = hashlib.blake2b(digest_size=16)
    digest.update(code_fingerprint(files).encode())
    config = root / CONFIG_FILE
    digest.update(CONFIG_FILE.encode() + b"\0" + (files.hash(config).encode() if config.is_file() else b"missing"))
    retired = root / RETIRED_FILE  # why notes retired: their fronts say so
    digest.update(RETIRED_FILE.encode() + b"\0" + (files.hash(retired).encode() if retired.is_file() else b"missing"))
    for folder in (CARDS_DIR, MEDIA_DIR, NOTETYPES_DIR):
        for rel, content in _tree(root, folder, files):
            digest.update(f"{rel}\0{content}\n".encode())
    for rel, content in _generators(root, files):
        digest.update(f"{rel}\0{content}\n".encode())
    fingerprint = digest.hexdigest()
    _inputs_files[(str(root), fingerprint)] = files.seen
    return fingerprint


def _load_state(root: Path) -> dict[str, Any]:
    """The last build's state, or {} if there is none (or it cannot be read)."""
    try:
        state = json.loads((root / CACHE_DIR / STATE_FILE).read_bytes())
    except (OSError, ValueError):
        return {}
    return state if isinstance(state, dict) else {}


def _outputs(root: Path, out_path: Path, record_file: str, also: Iterable[Path], files: _Files) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, path in (("package", out_path), ("record", root / record_file)):
        result[key] = files.hash(path) if path.is_file() else None  # is_file: a pipe is never hashed
    result["package_path"] = os.path.relpath(out_path, root)
    # Other packages the build wrote (deck.yaml's variants): each must still be there, unchanged.
    extra = {os.path.relpath(path, root): files.hash(path) if path.is_file() else None for path in also}
    if extra:
        result["also"] = extra
    return result


def save_state(
    root: Path,
    inputs: str,
    out_path: Path,
    record_file: str,
    summary: dict[str, int],
    warnings: int,
    also: Iterable[Path] = (),
) -> None:
    """Remember a successful build: its input fingerprint, what it wrote (the package, the
    record, `also` other packages), and its summary line."""
    files = _Files(root, {})  # the outputs were just written: hashed now, trusted once settled
    state = {
        "inputs": inputs,
        "outputs": _outputs(root, out_path, record_file, also, files),
        "summary": summary,
        "warnings": warnings,
        "files": {**_inputs_files.get((str(root), inputs), {}), **files.seen},
    }
    _write_state(root, state)


def _write_state(root: Path, state: dict[str, Any]) -> None:
    from deckbuild.writer import atomic_write_bytes

    atomic_write_bytes(root / CACHE_DIR / STATE_FILE, json.dumps(state, sort_keys=True).encode())


def forget_state(root: Path) -> None:
    """Drop the record of the last build (before a build that may fail half-way)."""
    from deckbuild.writer import remove_file

    remove_file(root / CACHE_DIR / STATE_FILE)


def up_to_date(
    root: Path, *, strict: bool = False, record_file: str = RECORD_FILE, inputs: str | None = None
) -> tuple[Path, dict[str, int]] | None:
    """(package path, summary) if the last build's outputs are current; None if a build is needed.

    A build with --strict is never skipped when the last build had warnings: it must fail.
    Any doubt (no state, unreadable state, a changed input or output) means "build".
    `inputs`: the inputs' fingerprint, if the caller took it already.
    """
    try:
        state = json.loads((root / CACHE_DIR / STATE_FILE).read_text("utf-8"))
        outputs = state["outputs"]
        out_path = root / outputs["package_path"]
        if strict and state["warnings"]:
            return None
        known = state.get("files", {})
        files = _Files(root, known)
        also = [root / rel for rel in outputs.get("also", {})]
        if outputs["package"] is None or outputs != _outputs(root, out_path, record_file, also, files):
            return None
        if inputs is None:
            inputs = inputs_fingerprint(root)
        if state["inputs"] != inputs:
            return None
        summary = {str(k): int(v) for k, v in state["summary"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    # Outputs hashed again because they were written just before the last state: once
    # settled, remember their signatures, so that the next check need not read them.
    seen = {**_inputs_files.get((str(root), inputs), {}), **files.seen}
    if seen != known:
        with contextlib.suppress(OSError):
            _write_state(root, {**state, "files": seen})
    return out_path, summary
