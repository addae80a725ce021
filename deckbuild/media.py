"""Media: hand-made images from media/ and generated diagrams, as flat, unique package names."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from deckbuild.errors import Location, Problem
from deckbuild.model import Card, MediaFile

MEDIA_DIR = "media"
IMAGE_TYPES = {".png", ".jpg", ".jpeg", ".gif", ".webp", ".svg"}
CACHE_DIR = ".deckbuild-cache"

Progress = Callable[[int, int, str], None]


def check_images(root: Path, cards: Sequence[Card]) -> tuple[dict[str, MediaFile], list[Problem]]:
    """Resolve every `image:` to a file inside media/; refuse escapes, links out, odd types."""
    problems: list[Problem] = []
    found: dict[str, MediaFile] = {}
    media_root = (root / MEDIA_DIR).resolve()
    by_name: dict[str, tuple[Path, Location]] = {}
    for card in cards:
        figure = card.figure
        if figure is None or figure.file is None:
            continue
        where = card.where("image")
        rel = figure.file
        path = Path(rel)
        if path.is_absolute() or ".." in path.parts or rel.startswith(("~", "\\")):
            problems.append(
                Problem(
                    where,
                    "E112",
                    f"card '{card.id}': image '{rel}' must be a path inside {MEDIA_DIR}/ (no '..', no absolute paths)",
                )
            )
            continue
        full = root / MEDIA_DIR / path
        try:
            resolved = full.resolve(strict=True)
        except (OSError, RuntimeError, ValueError):  # ValueError: a NUL byte in the name
            problems.append(Problem(where, "E111", f"card '{card.id}': image '{rel}' not found in {MEDIA_DIR}/"))
            continue
        if not resolved.is_relative_to(media_root) or not media_root.is_relative_to(root.resolve()):
            problems.append(Problem(where, "E112", f"card '{card.id}': image '{rel}' is a link to a file outside {MEDIA_DIR}/"))
            continue
        if not resolved.is_file():
            problems.append(Problem(where, "E111", f"card '{card.id}': image '{rel}' is not a file"))
            continue
        if resolved.suffix.lower() not in IMAGE_TYPES:
            problems.append(
                Problem(
                    where,
                    "E113",
                    f"card '{card.id}': image '{rel}': unsupported type '{resolved.suffix}'; expected one of {', '.join(sorted(IMAGE_TYPES))}",
                )
            )
            continue
        name = path.name
        if name.startswith("_"):
            problems.append(
                Problem(
                    where,
                    "E122",
                    f"card '{card.id}': image names starting with '_' are reserved by Anki for template files; rename '{name}'",
                )
            )
            continue
        if name in by_name and by_name[name][0] != resolved:
            problems.append(
                Problem(
                    where,
                    "E122",
                    f"card '{card.id}': image name '{name}' is also used for a different file (at {by_name[name][1]}); Anki media names are flat, rename one",
                )
            )
            continue
        by_name[name] = (resolved, where)
        found[card.id] = MediaFile(name=name, path=resolved)
    return found, problems
