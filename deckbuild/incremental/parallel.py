"""Parse card files (and render their Markdown) in worker processes.

YAML parsing and Markdown rendering are nearly all of a first build's time after the
diagrams, and each card file is independent of the others, so the files a build must
parse (the ones not in the cache) are spread over worker processes when there is enough
of them to pay for the workers.  Each worker returns what sources._load_file returns for
its file -- the same values a serial parse gives -- plus the field HTML of every text of
its cards (RenderMemo entries: pure functions of the text), which the parent's
rendering then finds in its memo.  Results come back in file order, so cards, problems
and their order are those of a serial build: errors are still reported all at once, in
source order.  A worker that fails for any reason (killed, out of memory) costs only
speed: that file is parsed again in this process.

A rebuild parses only the edited files; when they are large, a worker parses them while
this process reads the unchanged files' cards back from the cache (worth_it: `beside`).
"""

from __future__ import annotations

import contextlib
import sys
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from deckbuild.errors import Problem
from deckbuild.incremental.splice import Spans, file_spans
from deckbuild.jobs import default_jobs
from deckbuild.model import Card

if TYPE_CHECKING:
    from concurrent.futures import Future

    from deckbuild.validate import CardFacts

# Fewer bytes to parse than this, or fewer files than MIN_FILES, are parsed in this
# process unless --jobs asks for workers: the workers' start-up and their hand-over cost
# more than they save below it (the shipped deck's 290 KB took 0.45 s in two workers
# against 0.15 s here, while the diagram workers wanted both cores), and a megabyte of
# cards takes about half a second to parse and render here.
MIN_BYTES = 1024 * 1024
MIN_FILES = 2

# A rebuild's edited files go to a worker beside this process when both sides have work
# worth the worker's start-up and hand-over (about 10 ms, forked: so on Linux only, where a
# spawned worker would import deckbuild again first): this many bytes to parse (about 25 ms:
# a card file parses at roughly 3 KB a millisecond) and this many bytes of unchanged files to
# read back from the cache meanwhile (about 15 ms: twenty times faster than parsing).
BESIDE_PARSE_BYTES = 64 * 1024
BESIDE_CACHED_BYTES = 1024 * 1024

Job = tuple[Path, str, bytes | None]  # path, display path, bytes already read (or None)
Load = Callable[[Path, str, bytes | None], tuple[list[Card], list[Problem]]]
"""One card file's reader (sources.py's), handed in so the workers call it without this
package importing the reader that starts them."""
# cards, problems, renderings, card digests, the cache's encoding of the parse, the cards'
# facts for the deck-wide checks (validate.card_facts), the file's segments (splice.spans)
Parsed = tuple[
    list[Card], list[Problem], dict[bytes, str], list[bytes] | None, str | None, "list[CardFacts] | None", "Spans | None"
]


def worth_it(jobs: Sequence[Job], workers: int | None, beside: int = 0) -> tuple[int, bool]:
    """How many worker processes parse these files (0: this process does), and whether they
    parse beside this process reading `beside` bytes of other card files from the cache.

    `workers`: --jobs (None: every core, for at least MIN_BYTES of cards; a number: that
    many, as asked; 1: none).  Files too few or too small for that still go to a worker
    when this process has enough cached files to read meanwhile (BESIDE_*_BYTES).
    """
    wanted = default_jobs() if workers is None else max(1, workers)
    if wanted < 2 or not jobs:
        return 0, False
    size = sum(len(raw) if raw is not None else _size(path) for path, _display, raw in jobs)
    if len(jobs) >= MIN_FILES and (workers is not None or size >= MIN_BYTES):
        return min(wanted, len(jobs)), False
    if sys.platform == "linux" and size >= BESIDE_PARSE_BYTES and beside >= BESIDE_CACHED_BYTES:
        return min(wanted - 1, len(jobs)), True
    return 0, False


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def parse_here(load: Load, path: Path, display: str, raw: bytes | None, keep: bool, render: bool) -> Parsed:
    """One file's cards and problems -- and, to `keep` them (a build), its cards' digests, the
    parse as the cache stores it and the cards' facts, and if asked to `render`, its texts'
    renderings (a first build: none of its notes are cached): a worker's job."""
    from deckbuild.incremental.codec import KeyLocations, card_digest, encode_parsed
    from deckbuild.validate import card_facts

    cards, problems = load(path, display, raw)
    segments = file_spans(raw, display, cards, problems) if keep else None
    digests = [card_digest(card) for card in cards] if keep else None
    rendered = prerender_texts(cards) if keep and render else {}
    # A pure function of each card (and the parent's slowest check at 100k cards), computed
    # while the card still holds its locations as objects.
    facts = [card_facts(card) for card in cards] if keep else None
    # Sent back with their key locations as JSON text, decoded only if a problem needs one
    # (a few hundred bytes a card instead of a dict of Location objects, in the parent), and
    # cached as that same text.  Set on this worker's own fresh cards rather than copied with
    # dataclasses.replace (which runs every field through __init__ again: a tenth of a worker's time).
    for card in cards:
        object.__setattr__(card, "key_locations", KeyLocations.compact(card.key_locations))
    encoded: str | None = None
    if digests is not None:
        try:
            encoded = encode_parsed(cards, problems, digests)
        except (TypeError, ValueError):
            encoded = None  # the parent finds out again and does not cache it
    return cards, problems, rendered, digests, encoded, facts, segments


def prerender_texts(cards: Sequence[Card]) -> dict[bytes, str]:
    """Render every text notes.render_notes will ask the memo for (a miss only costs time)."""
    from deckbuild.cloze.emit import render_fact, to_anki_formula
    from deckbuild.render import RenderMemo

    memo = RenderMemo()
    for card in cards:
        for text in (card.question, card.answer, card.details, card.context):
            memo.markdown_html(text)
        memo.markdown_html(card.question or card.context or card.id, inline=True)  # as a related card
        if card.kind == "formula":
            memo.memoized("formula", card.formula, to_anki_formula)
        elif card.kind == "fact":
            memo.memoized("fact", card.fact, lambda fact: render_fact(fact, memo.markdown_html))
    return memo.fresh


@contextlib.contextmanager
def parsing(jobs: Sequence[Job], workers: int, keep: bool, render: bool, load: Load) -> Iterator[Iterator[Parsed]]:
    """parse_here for every job, in `workers` processes started on entry (the caller works
    meanwhile); yields their results in job order, each handed over as soon as it and the
    ones before it are done (the caller stores a file's parse while the workers go on, and
    holds no more than it must)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    # 'fork' on Linux: the workers start with deckbuild, YAML and Markdown already imported
    # (a 'spawn'ed one would import them again); nothing here holds threads or locks a
    # child could inherit half-taken.  Elsewhere fork is unsafe or missing: 'spawn'.
    context = multiprocessing.get_context("fork" if sys.platform == "linux" else "spawn")
    pool: ProcessPoolExecutor | None = None
    try:
        pool = ProcessPoolExecutor(max_workers=workers, mp_context=context)
        futures: deque[Future[Parsed]] = deque(
            pool.submit(parse_here, load, path, display, raw, keep, render) for path, display, raw in jobs
        )
    except Exception:  # no worker can start (fork refused, no semaphores): parsed here, as a serial build does
        if pool is not None:
            pool.shutdown(cancel_futures=True)
        yield (parse_here(load, path, display, raw, keep, render) for path, display, raw in jobs)
        return
    with pool:
        yield _in_order(futures, jobs, keep, render, load)


def _in_order(futures: deque[Future[Parsed]], jobs: Sequence[Job], keep: bool, render: bool, load: Load) -> Iterator[Parsed]:
    for path, display, raw in jobs:
        future = futures.popleft()  # dropped once taken: a done future keeps its result
        try:
            result = future.result()
        except Exception:  # a lost worker: parse that file here, as a serial build would
            result = parse_here(load, path, display, raw, keep, render)
        del future
        yield result
