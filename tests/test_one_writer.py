"""One module writes files: no module under deckbuild/ but writer.py creates, replaces or deletes one.

Read with `ast`: a call to os.replace/rename/remove/unlink/rmdir/mkdir/makedirs/link/symlink,
Path.replace/rename/unlink/write_text/write_bytes/mkdir/rmdir/touch, shutil.move/rmtree/copy*,
open() (builtin, os.fdopen, Path.open) with a mode that writes, a zipfile.ZipFile opened to
write, or sqlite3.connect to a file not opened read-only (`mode=ro`), anywhere in a module other than deckbuild/writer.py fails the test, unless EXEMPT lists
it with the reason.  Only two kinds of writes are exempt: into a temp folder made by
`tempfile` (gone when the block ends, never in the project), and into memory.  Writes into an
Anki collection go through the backend (Collection methods), which this test does not see.
"""

from __future__ import annotations

import ast
import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "deckbuild"
WRITER = "writer.py"

OS_WRITES = {"replace", "rename", "renames", "remove", "unlink", "rmdir", "removedirs", "mkdir", "makedirs"}
OS_WRITES |= {"link", "symlink", "truncate", "open"}
PATH_WRITES = {"rename", "unlink", "write_text", "write_bytes", "mkdir", "rmdir", "touch", "symlink_to", "hardlink_to"}
WRITE_MODE = re.compile(r"^[rbt]*[wax+][rwxabt+]*$")

EXEMPT: dict[tuple[str, str, str], str] = {
    ("adopt/ids_from.py", "read_ids", "shutil.copyfile"): "copies the learner's collection into a tempfile folder to read it",
    ("adopt/lock.py", "_build", "Path.mkdir"): "the adopted files go into the tempfile folder `finish` made, to plan them",
    ("adopt/lock.py", "_build", "Path.write_bytes"): "the adopted files go into the tempfile folder `finish` made, to plan them",
    ("adopt/package.py", "_private_collection", "Path.mkdir"): "a folder inside the tempfile folder of the read",
    ("adopt/package.py", "_checked_copy", "ZipFile(w)"): "the checked copy of the package, in read_package's tempfile folder",
    ("adopt/package.py", "_checked_copy", "open(w)"): "a member of that checked copy (zipfile's own open)",
    ("collection/access.py", "private_copy", "shutil.copyfile"): "copies a collection into the tempfile folder its callers made",
    ("collection/access.py", "check_collection", "sqlite3.connect"): "the integrity check opens the copy in its tempfile folder",
    ("commands.py", "_package", "shutil.copytree"): "status and a dry run build a copy of the project in a tempfile folder",
    ("preview/site.py", "render_cards", "Path.mkdir"): "the rendered media, kept inside the preview's tempfile folder",
    ("preview/site.py", "render_cards", "shutil.copyfile"): "the rendered media, kept inside the preview's tempfile folder",
}
"""(module under deckbuild/, enclosing function, call) -> why it writes no file of a project."""


@dataclass(frozen=True)
class Write:
    module: str
    line: int
    function: str
    call: str

    def key(self) -> tuple[str, str, str]:
        return (self.module, self.function, self.call)


def _call_name(call: ast.Call, imported: dict[str, str]) -> str | None:
    """What the call writes with (`os.replace`, `Path.unlink`, `open(w)`...), or None if it writes nothing."""
    func = call.func
    if isinstance(func, ast.Name) and func.id in imported:
        module, name = imported[func.id].split(".")
        return _module_call(module, name, call)
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in ("os", "shutil", "zipfile"):
        return _module_call(func.value.id, func.attr, call)
    if isinstance(func, ast.Name) and func.id == "open":
        return "open(w)" if _writes_mode(call, 1) else None
    if isinstance(func, ast.Name) and func.id == "ZipFile":
        return "ZipFile(w)" if _writes_mode(call, 1) else None
    if not isinstance(func, ast.Attribute):
        return None
    if isinstance(func.value, ast.Name) and func.value.id == "sqlite3" and func.attr == "connect":
        return None if _read_only_database(call) else "sqlite3.connect"
    if func.attr in PATH_WRITES:
        return f"Path.{func.attr}"
    # str.replace takes two arguments and dataclasses.replace keywords: Path.replace takes one target.
    if func.attr == "replace" and len(call.args) == 1 and not call.keywords:
        return "Path.replace"
    if func.attr == "open" and any(_writes(arg) for arg in [*call.args, *(k.value for k in call.keywords if k.arg == "mode")]):
        return "open(w)"
    return None


def _module_call(module: str, name: str, call: ast.Call) -> str | None:
    if module == "os" and name in OS_WRITES:
        return f"os.{name}"
    if module == "os" and name == "fdopen":
        return "open(w)" if _writes_mode(call, 1) else None
    if module == "shutil" and (name in ("move", "rmtree") or name.startswith("copy")):
        return f"shutil.{name}"
    if module == "zipfile" and name == "ZipFile":
        return "ZipFile(w)" if _writes_mode(call, 1) else None
    return None


def _writes_mode(call: ast.Call, position: int) -> bool:
    """The mode argument (at `position`, or `mode=`) writes; a mode that is not a literal counts as writing."""
    modes = [k.value for k in call.keywords if k.arg == "mode"]
    if len(call.args) > position:
        modes.append(call.args[position])
    return any(_writes(mode) or not isinstance(mode, ast.Constant) for mode in modes)


def _read_only_database(call: ast.Call) -> bool:
    """A database in memory, or a file opened with `mode=ro`."""
    if not call.args:
        return False
    target = call.args[0]
    if isinstance(target, ast.Constant):
        return target.value == ":memory:"
    return isinstance(target, ast.JoinedStr) and any(
        isinstance(part, ast.Constant) and "mode=ro" in str(part.value) for part in target.values
    )


def _writes(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and bool(WRITE_MODE.match(node.value))


def writes_in(package: Path) -> list[Write]:
    """Every call that writes a file, in every module of `package` except its writer.py."""
    found = []
    for path in sorted(package.rglob("*.py")):
        module = path.relative_to(package).as_posix()
        if module == WRITER:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        imported = {
            alias.asname or alias.name: f"{node.module}.{alias.name}"
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module in ("os", "shutil", "zipfile")
            for alias in node.names
        }
        found.extend(_walk(tree, module, "<module>", imported))
    return found


def _walk(node: ast.AST, module: str, function: str, imported: dict[str, str]) -> list[Write]:
    found = []
    for child in ast.iter_child_nodes(node):
        inner = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else function
        if isinstance(child, ast.Call):
            name = _call_name(child, imported)
            if name is not None:
                found.append(Write(module, child.lineno, inner, name))
        found.extend(_walk(child, module, inner, imported))
    return found


def test_no_module_but_the_writer_writes_a_file() -> None:
    unexpected = [w for w in writes_in(PACKAGE) if w.key() not in EXEMPT]
    assert not unexpected, "write through deckbuild/writer.py instead:\n" + "\n".join(
        f"  deckbuild/{w.module}:{w.line} in {w.function}(): {w.call}" for w in unexpected
    )


def test_every_exemption_is_still_needed() -> None:
    """An exemption whose write is gone would let a new write in the same place pass unseen."""
    seen = {w.key() for w in writes_in(PACKAGE)}
    assert not [key for key in EXEMPT if key not in seen]


def test_the_check_sees_every_kind_of_write_and_nothing_else(tmp_path: Path) -> None:
    """A planted tree: the writer may write, every other module's writes are found, reads and
    string replaces are not."""
    pkg = tmp_path / "deckbuild"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "writer.py").write_text("import os\n\ndef put(a, b):\n    os.replace(a, b)\n", encoding="utf-8")
    (pkg / "sub" / "bad.py").write_text(
        textwrap.dedent(
            """\
            import dataclasses, os, shutil, sqlite3, zipfile, webbrowser
            from os import unlink as drop
            from shutil import rmtree

            def writes(path, other, fd, mode):
                os.replace(path, other)
                os.rename(path, other)
                os.remove(path)
                drop(path)
                path.replace(other)
                path.rename(other)
                path.unlink(missing_ok=True)
                path.write_text("x")
                path.write_bytes(b"x")
                shutil.move(path, other)
                rmtree(path)
                shutil.copy2(path, other)
                shutil.copytree(path, other)
                open(path, "w")
                open(path, mode=mode)
                path.open("ab")
                os.fdopen(fd, "wb")
                zipfile.ZipFile(path, "w")
                path.mkdir()
                sqlite3.connect(path)

            def reads(path, text, record, url):
                open(path)
                open(path, "rb")
                path.open()
                path.read_bytes()
                text.replace("a", "b")
                dataclasses.replace(record, a=1)
                webbrowser.open(url)
                zipfile.ZipFile(path)
                os.path.join(text, text)
                sqlite3.connect(":memory:")
                sqlite3.connect(f"file:{path}?mode=ro", uri=True)
            """
        ),
        encoding="utf-8",
    )
    found = writes_in(pkg)
    assert {w.module for w in found} == {"sub/bad.py"}
    assert all(w.function == "writes" for w in found)
    assert [w.call for w in found] == [
        "os.replace",
        "os.rename",
        "os.remove",
        "os.unlink",
        "Path.replace",
        "Path.rename",
        "Path.unlink",
        "Path.write_text",
        "Path.write_bytes",
        "shutil.move",
        "shutil.rmtree",
        "shutil.copy2",
        "shutil.copytree",
        "open(w)",
        "open(w)",
        "open(w)",
        "open(w)",
        "ZipFile(w)",
        "Path.mkdir",
        "sqlite3.connect",
    ]


def test_a_write_outside_a_build_names_the_file_and_the_os_cause(sample: Path, tmp_path: Path) -> None:
    """The preview site's folder cannot be made under a regular file: E166 at that folder, with
    the OS's words, no traceback, and the file left as it was."""
    import os
    import subprocess
    import sys

    blocker = tmp_path / "a-file"
    blocker.write_text("mine\n")
    env = {**os.environ, "PYTHONPATH": str(PACKAGE.parent), "SOURCE_DATE_EPOCH": "1700000000"}
    env.pop("DECKBUILD_DEBUG", None)
    out = blocker / "site"
    done = subprocess.run(
        [sys.executable, "-m", "deckbuild.cli", "preview", "-C", str(sample), "--out", str(out)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    errors = [line for line in done.stderr.splitlines() if " E16" in line]
    assert errors == [
        f"{out}: E166 cannot write {out}: Not a directory; a file or folder is in its way: move it or choose another place"
    ]
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr
    assert blocker.read_text() == "mine\n"
