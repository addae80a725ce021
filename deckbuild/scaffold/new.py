"""Write a new deck project: deck.yaml with a unique namespace, example cards, an image, git and CI files.

The writer stages the project in a hidden folder inside DIR and renames it into place, so a
failure leaves nothing behind; a DIR that exists and is not empty is refused before anything
is written.
"""

from __future__ import annotations

import json
import re
import secrets
import sys
from importlib import metadata, resources
from pathlib import Path
from string import Template

from deckbuild import __version__
from deckbuild.errors import LocatedError, Location
from deckbuild.model import slugify
from deckbuild.writer import write_folder

TEMPLATE = resources.files("deckbuild.scaffold") / "template"

# Template file -> path in the new project.  Text files go through string.Template
# ($name, $namespace, $python; $$ is a literal $); everything else is copied as bytes.
FILES = {
    "deck.yaml": "deck.yaml",
    "cards/examples.yaml": "cards/examples.yaml",
    "media/parabola.png": "media/parabola.png",
    "diagrams/curves.py": "diagrams/curves.py",
    "gitignore": ".gitignore",
    "README.md": "README.md",
    "release.yml": ".github/workflows/release.yml",
}
TEXT_SUFFIXES = (".yaml", ".yml", ".md", "gitignore")


def namespace_for(name: str) -> str:
    """The deck's identity: its name as a slug plus a random part, so same-named decks never collide."""
    slug = slugify(name)[:40].strip("-") or "deck"
    return f"{slug}-{secrets.token_hex(4)}"


def requirements() -> tuple[str, str | None]:
    """(requirements.txt, a warning or None): deckbuild as it was installed here, and every
    library it runs on pinned to what is installed here.

    A CI build that installs these gets the same libraries as the author, so the same bytes.
    """
    pins: dict[str, str] = {}
    todo = ["deckbuild"]
    while todo:
        name = todo.pop()
        key = _canonical(name)
        if key in pins:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        pins[key] = f"{dist.metadata['Name']}=={dist.version}"
        for requirement in dist.requires or []:
            if "extra ==" in requirement:
                continue
            marker = requirement.split(";", 1)[1] if ";" in requirement else ""
            if marker and not _marker_holds(marker):
                continue
            todo.append(re.split(r"[\s<>=!~;\[(]", requirement.strip(), maxsplit=1)[0])
    pins.pop("deckbuild", None)
    line, warning = deckbuild_requirement()
    header = (
        f"# deckbuild {__version__} and the libraries it was run with when this deck was created.\n"
        "# `pip install -r requirements.txt` gives a build the same bytes as the author's.\n"
    )
    if warning:
        header += "".join(f"# {part}\n" for part in warning.split("\n"))
    return header + "\n".join([line, *sorted(pins.values(), key=str.lower)]) + "\n", warning


def deckbuild_requirement(origin: str | None = None) -> tuple[str, str | None]:
    """The requirement line that installs this deckbuild where it came from (PEP 610's
    direct_url.json), and a warning when a CI runner cannot reach that place.

    A git checkout gives `deckbuild @ git+URL@COMMIT`; a package index `deckbuild==X`; a
    local folder or editable install, which no runner can reach, a commented line to edit.
    """
    if origin is None:
        # The installed distribution (pip writes INSTALLER), not the metadata a source tree
        # may hold when it is the current folder (deckbuild.egg-info of an editable install).
        installed = [d for d in metadata.distributions(name="deckbuild") if d.read_text("INSTALLER")]
        origin = installed[0].read_text("direct_url.json") if installed else None
    if not origin:
        return f"deckbuild=={__version__}", None
    try:
        data = json.loads(origin)
    except ValueError:
        data = {}
    url = str(data.get("url", "")) if isinstance(data, dict) else ""
    vcs = data.get("vcs_info") if isinstance(data, dict) else None
    if isinstance(vcs, dict) and vcs.get("vcs") == "git" and vcs.get("commit_id") and url:
        if url.startswith("file:///"):  # PEP 508 wants a host in a VCS URL; git reads file://localhost/ alike
            url = "file://localhost/" + url.removeprefix("file:///")
        line = f"deckbuild @ git+{url}@{vcs['commit_id']}"
        if url.startswith("file:"):
            return line, (
                f"deckbuild was installed from a git repository on this machine ({url}), which a CI runner cannot\n"
                "reach: replace it with the repository's public URL (docs/publishing.md)"
            )
        return line, None
    if isinstance(data, dict) and "archive_info" in data and url and not url.startswith("file:"):
        return f"deckbuild @ {url}", None
    where = url.removeprefix("file://") or "a local folder"
    return (
        f"# deckbuild @ git+<repository URL>@<commit>    <- edit: the line that installs deckbuild {__version__}",
        f"deckbuild was installed from a local folder ({where}), which a CI runner cannot reach:\n"
        "edit the first requirement to `deckbuild @ git+<repository URL>@<commit>` (docs/publishing.md)",
    )


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _marker_holds(marker: str) -> bool:
    try:
        from packaging.markers import Marker
    except ImportError:  # packaging is not installed: keep the requirement
        return True
    return bool(Marker(marker).evaluate())


def new_project(target: Path, name: str | None = None) -> list[Path]:
    """Create the project in target (absent or empty); returns the files written, relative to it."""
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise LocatedError(
            Location(str(target)),
            "E180",
            "expected a new or empty folder for the project; found one that is not empty, so nothing was written: "
            "name a new folder (`deckbuild new my-deck`)",
        )
    deck_name = name or target.resolve().name.replace("-", " ").replace("_", " ").strip().title() or "My Deck"
    if any(ch in deck_name for ch in '\n\r"') or deck_name != deck_name.strip():
        raise LocatedError(Location("--name"), "E181", f"expected a deck name on one line, without quotes; got {deck_name!r}")
    values = {
        "name": deck_name,
        "namespace": namespace_for(deck_name),
        "python": f"{sys.version_info.major}.{sys.version_info.minor}",
    }
    files: dict[str, bytes] = {}
    for source, dest in FILES.items():
        data = (TEMPLATE / source).read_bytes()
        if source.endswith(TEXT_SUFFIXES):
            data = Template(data.decode("utf-8")).substitute(values).encode("utf-8")
        files[dest] = data
    files["requirements.txt"] = requirements()[0].encode("utf-8")
    write_folder(target.resolve(), files)
    written = [Path(dest) for dest in files]
    return sorted(written)
