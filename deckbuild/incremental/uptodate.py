"""Fingerprints of a build's inputs, so an unchanged project skips the whole build.

Authors rebuild after every edit, and most rebuilds change nothing.  A build records a
fingerprint of everything its output depends on; the next `deckbuild build` recomputes it
and, when it matches and the outputs are still the ones that build wrote, prints "up to
date" without importing YAML, Markdown or genanki.  This module must therefore stay light:
standard library only, no deckbuild stage imported.

What the fingerprint covers (any change means a real build):
- deck.yaml, every file under cards/, media/ and notetypes/ (names and content hashes),
- the code that turns them into a package: every source file of the deckbuild package,
  the interpreter version, and the installed genanki/markdown/yaml/chevron modules
  (path, size, mtime: an upgrade changes the HTML or the package),
- the outputs as the last build left them: deckbuild.lock and the .apkg (content hashes).

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
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from deckbuild import __version__
from deckbuild.layout import CACHE_DIR, CARDS_DIR, CONFIG_FILE, MEDIA_DIR, NOTETYPES_DIR, RECORD_FILE

STATE_FILE = "build-state.json"
_DEPENDENCIES = ("genanki", "markdown", "yaml", "chevron", "matplotlib", "numpy")
_code: str | None = None


def _where(path: Path) -> str:
    """Where a path really leads: a file swapped for a link (even to equal bytes) must rebuild,
    so the build's checks on links out of the project run again."""
    real = os.path.realpath(path)
    return "link:" + real if os.path.islink(path) or real != os.path.abspath(path) else ""


def _hash_file(path: Path) -> str:
    digest = hashlib.blake2b(digest_size=16)
    digest.update(_where(path).encode())
    mode = os.stat(path).st_mode
    if not stat.S_ISREG(mode):
        # A pipe, socket or device is never opened (a pipe would block forever); its kind
        # is enough: the build that follows refuses it (E125).
        digest.update(f"special:{stat.S_IFMT(mode)}".encode())
        return digest.hexdigest()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def code_fingerprint() -> str:
    """deckbuild's own sources, its version, Python's, and the libraries that shape the output.

    Caches keyed by this can never serve a result made by other code.  Computed once per
    process; costs a few milliseconds (a few dozen small files, no imports).
    """
    global _code
    if _code is None:
        import importlib.util

        digest = hashlib.blake2b(digest_size=16)
        digest.update(f"{__version__}\0{sys.version}\0".encode())
        package = Path(__file__).resolve().parent.parent  # the whole deckbuild package
        for path in sorted(p for p in package.rglob("*") if p.suffix in (".py", ".html", ".css", ".js")):  # + templates
            digest.update(path.relative_to(package).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
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
    return _code


def _tree(root: Path, folder: str) -> Iterable[tuple[str, str]]:
    """(relative path, content hash) of every file under root/folder, sorted."""
    base = root / folder
    if not base.is_dir():
        return []
    entries = []
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames.sort()
        for name in sorted(filenames):
            path = Path(dirpath) / name
            entries.append((path.relative_to(root).as_posix(), _hash_file(path)))
    return entries


def inputs_fingerprint(root: Path) -> str:
    """Everything a build reads, apart from its own outputs (see the module docstring)."""
    digest = hashlib.blake2b(digest_size=16)
    digest.update(code_fingerprint().encode())
    config = root / CONFIG_FILE
    digest.update(CONFIG_FILE.encode() + b"\0" + (_hash_file(config).encode() if config.is_file() else b"missing"))
    for folder in (CARDS_DIR, MEDIA_DIR, NOTETYPES_DIR):
        for rel, content in _tree(root, folder):
            digest.update(f"{rel}\0{content}\n".encode())
    return digest.hexdigest()


def _outputs(root: Path, out_path: Path, record_file: str, also: Iterable[Path] = ()) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, path in (("package", out_path), ("record", root / record_file)):
        result[key] = _hash_file(path) if path.is_file() else None  # is_file: a pipe is never hashed
    result["package_path"] = os.path.relpath(out_path, root)
    # Other packages the build wrote (deck.yaml's variants): each must still be there, unchanged.
    extra = {os.path.relpath(path, root): _hash_file(path) if path.is_file() else None for path in also}
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
    state = {
        "inputs": inputs,
        "outputs": _outputs(root, out_path, record_file, also),
        "summary": summary,
        "warnings": warnings,
    }
    from deckbuild.fsutil import atomic_write_bytes

    atomic_write_bytes(root / CACHE_DIR / STATE_FILE, json.dumps(state, sort_keys=True).encode())


def forget_state(root: Path) -> None:
    """Drop the record of the last build (before a build that may fail half-way)."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(root / CACHE_DIR / STATE_FILE)


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
        also = [root / rel for rel in outputs.get("also", {})]
        if outputs["package"] is None or outputs != _outputs(root, out_path, record_file, also):
            return None
        if state["inputs"] != (inputs if inputs is not None else inputs_fingerprint(root)):
            return None
        summary = {str(k): int(v) for k, v in state["summary"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return out_path, summary
