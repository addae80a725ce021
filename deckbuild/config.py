"""deck.yaml -> a validated DeckConfig.  Every option is documented in OPTIONS."""

from __future__ import annotations

import re
from pathlib import Path

from deckbuild.errors import Location, Problem, close_key
from deckbuild.layout import CONFIG_FILE, DEFAULT_OUTPUT
from deckbuild.limits import SEMVER
from deckbuild.model import DeckConfig, Variant
from deckbuild.notetypes.sanitize import sanitize_html
from deckbuild.variant_config import parse_variants
from deckbuild.yamlload import LocatedMap, load_yaml

NAMESPACE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,62}$")

OPTIONS: dict[str, tuple[bool, str]] = {
    "name": (True, "The deck name shown in Anki.  Anki matches decks by name: renaming makes a new deck."),
    "namespace": (True, "Never change it: every note GUID is derived from it and the card id."),
    "version": (True, "The deck's semantic version (MAJOR.MINOR.PATCH); `deckbuild release` bumps it."),
    "description": (False, "Markdown shown on the deck's overview screen, under the version."),
    "description_html": (
        False,
        "Instead of description: HTML shown on the overview screen as written (sanitized), without the version line."
        "  `deckbuild adopt` writes the adopted deck's own here, so an import keeps the learner's.",
    ),
    "output": (False, "Folder for built packages, relative to the project (default: dist)."),
    "variants": (False, "Smaller decks cut from the same cards, each with its own name and version (variants.py)."),
    "sources": (
        False,
        "Document name -> the title a learner can look up, shown in each card's Source field instead of the name.",
    ),
}


def load_config(root: Path) -> tuple[DeckConfig | None, list[Problem]]:
    """Read and check deck.yaml; return the config (None if unusable) and every problem."""
    path = root / CONFIG_FILE
    display = CONFIG_FILE
    from deckbuild.fsutil import not_regular_message, special_kind

    kind = special_kind(path)
    if kind is not None:
        return None, [Problem(Location(display), "E125", not_regular_message(kind))]
    if not path.is_file():
        return None, [Problem(Location(display), "E150", f"no {CONFIG_FILE} in {root}; is this a deck project? (see README)")]
    if not path.resolve().is_relative_to(root.resolve()):
        return None, [Problem(Location(display), "E112", f"{CONFIG_FILE} is a link to a file outside the project; copy it in")]
    data, problems = load_yaml(path, display)
    if data is None and not problems:
        problems.append(
            Problem(Location(display), "E103", f"{CONFIG_FILE} is empty; expected a mapping with name, namespace, version")
        )
    if problems:
        return None, problems
    if not isinstance(data, LocatedMap):
        return None, [Problem(Location(display, 1, 1), "E103", f"expected a mapping of options; got {type(data).__name__}")]
    misspelled = set()
    for key in data:
        if key not in OPTIONS:
            meant = close_key(key, OPTIONS, data)
            hint = f"did you mean '{meant}'? " if meant else ""
            misspelled.add(meant)
            problems.append(
                Problem(data.key_locs[key], "E104", f"unknown key '{key}'; {hint}expected one of {', '.join(OPTIONS)}")
            )
    for key, (required, _doc) in OPTIONS.items():
        if required and key not in data:
            if key not in misspelled:  # else E104 already says "did you mean"
                problems.append(Problem(data.loc, "E105", f"missing required key '{key}'"))
        elif key in data and key not in ("variants", "sources") and not isinstance(data[key], str):
            problems.append(
                Problem(data.value_locs[key], "E106", f"'{key}': expected text; got {type(data[key]).__name__} {data[key]!r}")
            )
    if problems:
        return None, problems
    version = data["version"]
    if not SEMVER.fullmatch(version):
        problems.append(
            Problem(data.value_locs["version"], "E151", f"'version': expected MAJOR.MINOR.PATCH like 1.0.0; got {version!r}")
        )
    namespace = data["namespace"]
    if not NAMESPACE.fullmatch(namespace):
        problems.append(
            Problem(
                data.value_locs["namespace"],
                "E152",
                f"'namespace': expected lower-case letters, digits, '.', '_', '-'; got {namespace!r}",
            )
        )
    output = data.get("output", DEFAULT_OUTPUT)
    if Path(output).is_absolute() or ".." in Path(output).parts:
        problems.append(
            Problem(data.value_locs["output"], "E112", f"'output' must be a folder inside the project; got '{output}'")
        )
    if not data["name"].strip():
        problems.append(Problem(data.value_locs["name"], "E107", "'name' must not be empty"))
    variants: tuple[Variant, ...] = ()
    if "variants" in data:
        variants, variant_problems = parse_variants(data["variants"], data.value_locs["variants"], data["name"].strip())
        problems += variant_problems
    sources = _sources(data, problems)
    description_html, warnings = _description_html(data, problems)
    if problems:
        return None, problems
    return (
        DeckConfig(
            name=data["name"].strip(),
            namespace=namespace,
            version=version,
            description=data.get("description", ""),
            output=output,
            location=Location(display, 1, 1),
            variants=variants,
            description_html=description_html,
            sources=sources,
        ),
        warnings,
    )


def _sources(data: LocatedMap, problems: list[Problem]) -> tuple[tuple[str, str], ...]:
    """`sources:` as sorted (document, title) pairs; E106 for anything but a mapping of text to text."""
    if "sources" not in data:
        return ()
    given = data["sources"]
    if not isinstance(given, LocatedMap):
        problems.append(
            Problem(
                data.value_locs["sources"],
                "E106",
                f"'sources': expected a mapping of document name to title; got {type(given).__name__} {given!r}",
            )
        )
        return ()
    pairs = []
    for document, title in given.items():
        if not isinstance(title, str) or not title.strip():
            problems.append(
                Problem(
                    given.value_locs[document],
                    "E106",
                    f"'sources': the title of '{document}': expected non-empty text; got {title!r}",
                )
            )
            continue
        pairs.append((str(document), title.strip()))
    return tuple(sorted(pairs))


def _description_html(data: LocatedMap, problems: list[Problem]) -> tuple[str | None, list[Problem]]:
    """The sanitized `description_html` (None if not given) and a warning for what sanitizing removed."""
    if "description_html" not in data:
        return None, []
    where = data.value_locs["description_html"]
    if "description" in data:
        problems.append(Problem(where, "E290", "give 'description' (Markdown) or 'description_html' (HTML as written), not both"))
        return None, []
    text, removed = sanitize_html(data["description_html"])
    if not removed:
        return text, []
    return text, [
        Problem(
            where, "E291", f"'description_html' lost {', '.join(removed)} to sanitizing (the package has the rest)", "warning"
        )
    ]
