"""Read cards/*.yaml in sorted order into Card objects, keeping file:line for every value.

Each entry is checked on its own by card_entry.py (keys, types, allowed values).  Checks
that need the whole deck (duplicate ids, references, media) live in validate.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from deckbuild.card_entry import card_from
from deckbuild.errors import Location, Problem
from deckbuild.incremental import splice
from deckbuild.layout import CARDS_DIR
from deckbuild.model import Card, Progress
from deckbuild.yamlload import MAX_FILE_BYTES, LocatedList, LocatedMap, decode_text, load_yaml, parse_yaml

if TYPE_CHECKING:
    from collections.abc import Iterator

    from deckbuild.incremental.cache import BuildCache
    from deckbuild.incremental.parallel import Job, Parsed

FILE_KEYS = ("deck", "cards")
"""The mapping form of a card file: {deck: <subdeck for all its cards>, cards: [...]}."""


def card_files(root: Path) -> list[Path]:
    """cards/*.yaml (and *.yml), sorted by name so builds never depend on the file system."""
    folder = root / CARDS_DIR
    if not folder.is_dir():
        return []
    return sorted([*folder.glob("*.yaml"), *folder.glob("*.yml")], key=lambda p: p.name)


def load_cards(
    root: Path,
    cache: BuildCache | None = None,
    *,
    jobs: int | None = 1,
    prerender: bool = False,
    progress: Progress | None = None,
) -> tuple[list[Card], list[Problem]]:
    """Load every card file; a broken file is reported and the others still load.

    With a cache, a file whose exact bytes were parsed before is not parsed again (YAML
    parsing is most of a cold build's time); the result is the same either way.  The
    files left to parse go to `jobs` worker processes (None: every core) when there are
    enough of them, or when they are large and this process has many unchanged files to
    read back from the cache meanwhile (incremental/parallel.py); with `prerender` the
    workers also keep what the build that follows needs of their cards (and on a first
    build render their Markdown into the cache's memo).  `progress` counts the files parsed
    when worker processes parse them all (a large deck's first build: seconds to minutes).
    """
    import contextlib

    from deckbuild.incremental import parallel

    problems: list[Problem] = []
    files = card_files(root)
    if not files:
        problems.append(Problem(Location(CARDS_DIR), "E119", f"no card files: add {CARDS_DIR}/<topic>.yaml (see README)"))
    inside = root.resolve()
    # Per file, in order: its result (cached, or filled in below) or a refusal.
    results: list[tuple[list[Card], list[Problem]] | None] = []
    todo: list[tuple[int, bytes | None, parallel.Job]] = []  # to parse
    cached: list[tuple[int, bytes, parallel.Job]] = []  # to read from the cache
    for path in files:
        display = path.relative_to(root).as_posix()
        if not path.resolve().is_relative_to(inside):
            results.append(
                ([], [Problem(Location(display), "E112", "card file is a link to a file outside the project; copy it in")])
            )
            continue
        raw = _cacheable_bytes(path) if cache is not None or jobs != 1 else None
        key = cache.file_key(display, raw) if cache is not None and raw is not None else None
        if cache is not None and key is not None and cache.has_parsed(key):
            cached.append((len(results), key, (path, display, raw)))
        else:
            todo.append((len(results), key, (path, display, raw)))
        results.append(None)
    keep = prerender and cache is not None
    if keep:  # an edited file whose last parse the cache keeps: only what changed is parsed again
        assert cache is not None
        todo = [entry for entry in todo if not _spliced(cache, entry, results)]
    # Read back from the cache while the workers parse: unless this process keeps the cache's
    # values in memory (serve), where reading them back takes no time.
    beside = sum(len(job[2] or b"") for _i, _key, job in cached) if cache is not None and cache.memo() is None else 0
    jobs_todo = [job for _i, _key, job in todo]
    workers, alongside = parallel.worth_it(jobs_todo, jobs, beside)
    parsing: contextlib.AbstractContextManager[Iterator[parallel.Parsed]] = (
        parallel.parsing(jobs_todo, workers, keep, keep and not alongside, _load_file)
        if workers
        else contextlib.nullcontext(_parsed_here(job, keep) for job in jobs_todo)
    )
    counted = progress if workers and not alongside else None
    with parsing as parsed:
        for index, key, job in cached:
            assert cache is not None
            results[index] = hit = cache.parsed(key)
            if hit is None:  # unreadable after all: parsed here
                file_cards, file_problems = _load_file(*job)
                cache.store_parsed(key, file_cards, file_problems)
                results[index] = (file_cards, file_problems)
        for done, ((index, key, job), (file_cards, file_problems, rendered, digests, encoded, facts, segments)) in enumerate(
            zip(todo, parsed, strict=True), 1
        ):
            if counted is not None:
                counted(done, len(todo), "parsed card files")
            if cache is not None:
                if key is not None:
                    cache.store_parsed(key, file_cards, file_problems, digests, encoded)
                    if facts is not None:
                        cache.add_file_facts(job[1], facts)
                    if segments is not None:
                        splice.remember(cache, job[1], key, segments)
                cache.add_rendered(rendered)
            results[index] = (file_cards, file_problems)
    cards: list[Card] = []
    for result in results:
        assert result is not None
        cards.extend(result[0])
        problems.extend(result[1])
    return cards, problems


def _parsed_here(job: Job, keep: bool) -> Parsed:
    """One file parsed in this process, as a worker hands it back: with its segments to keep
    (serve parses an edited file here), without what only a first build's workers compute."""
    cards, problems = _load_file(*job)
    return cards, problems, {}, None, None, None, splice.file_spans(job[2], job[1], cards, problems) if keep else None


def _spliced(
    cache: BuildCache, entry: tuple[int, bytes | None, Job], results: list[tuple[list[Card], list[Problem]] | None]
) -> bool:
    """Whether the file of `entry` was parsed by splicing its edit into its last parse (splice.py)."""
    index, key, (_path, display, raw) = entry
    if key is None or raw is None:
        return False
    found = splice.reparse(cache, display, raw, key, load_text)
    if found is None:
        return False
    cache.store_parsed(key, found.cards, [], found.digests, found.encoded)
    cache.add_file_facts(display, found.facts)
    if found.spans is not None:
        splice.remember(cache, display, key, found.spans)
    results[index] = (found.cards, [])
    return True


def _cacheable_bytes(path: Path) -> bytes | None:
    """The file's bytes, or None when the uncached path must read it (and report why)."""
    from deckbuild.fsutil import special_kind

    if special_kind(path) is not None:
        return None  # a pipe or device: never opened (read_text reports E125)
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            return None
        return path.read_bytes()
    except OSError:
        return None


def _load_file(path: Path, display: str, raw: bytes | None) -> tuple[list[Card], list[Problem]]:
    """One card file -> its cards and problems; `raw` is its bytes if already read."""
    if raw is None:
        data, file_problems = load_yaml(path, display)
    else:
        text, file_problems = decode_text(raw, display)
        if text is not None:
            return load_text(text, display)
        data = None
    return _cards_of(data, file_problems, display)


def load_text(text: str, display: str) -> tuple[list[Card], list[Problem]]:
    """A card file's decoded text -> its cards and problems (_load_file after reading)."""
    data, file_problems = parse_yaml(text, display)
    return _cards_of(data, file_problems, display)


def _cards_of(data: object, file_problems: list[Problem], display: str) -> tuple[list[Card], list[Problem]]:
    """The cards of a card file's YAML values (`data`), after the problems reading them gave."""
    cards: list[Card] = []
    problems: list[Problem] = []
    problems.extend(file_problems)
    if data is None:
        return cards, problems  # empty file (allowed) or unreadable (already reported)
    default_deck = ""
    if isinstance(data, LocatedMap) and ("cards" in data or "deck" in data):  # the mapping form: {deck: Verbs, cards: [...]}
        data, default_deck = _file_mapping(data, problems)
        if data is None:
            return cards, problems
    if not isinstance(data, LocatedList):
        problems.append(
            Problem(
                getattr(data, "loc", Location(display, 1, 1)),
                "E103",
                "expected a list of cards ('- id: ...'), or {deck: ..., cards: [...]}",
            )
        )
        return cards, problems
    for item, loc in zip(data, data.item_locs, strict=True):
        card = card_from(item, loc, problems, default_deck)
        if card is not None:
            cards.append(card)
    # LaTeX and cloze rules concern one card at a time, so they run here, where the
    # per-file cache keeps their result: an edit re-checks only its own file.
    from deckbuild.validate import validate_math_and_cloze

    problems.extend(validate_math_and_cloze(cards))
    return cards, problems


def _file_mapping(data: LocatedMap, problems: list[Problem]) -> tuple[LocatedList | None, str]:
    """A card file written as {deck: ..., cards: [...]}: its card list and default subdeck."""
    from deckbuild.notetypes.fields import check_deck

    before = len(problems)
    for key in data:
        if key not in FILE_KEYS:
            problems.append(
                Problem(
                    data.key_locs[key], "E223", f"unknown key '{key}' in a card file mapping; expected {', '.join(FILE_KEYS)}"
                )
            )
    cards = data.get("cards")
    if not isinstance(cards, LocatedList):
        where = data.value_locs.get("cards", data.loc)
        problems.append(Problem(where, "E223", "a card file mapping needs 'cards': a list of cards ('- id: ...')"))
    deck = check_deck(data["deck"], data.value_locs["deck"], None, problems) if "deck" in data else ""
    if len(problems) > before or not isinstance(cards, LocatedList):
        return None, ""
    return cards, deck
