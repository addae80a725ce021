"""`deckbuild import`: turn seed question banks into cards/*.yaml, and keep them in step.

The importer owns only what came from a seed: question and answer text, `source` and the
`origin` record.  Everything a person (or another tool) curated on a card - its id, topics,
links, tags, extra keys such as `diagram:` - is kept on re-import.  Cards are matched to
seed questions through `origin.question` (exact, then fuzzy), never by position, so
inserting, removing or lightly rewording a question keeps every id stable.
"""

from __future__ import annotations

import copy
import difflib
import hashlib
import os
import re
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from deckbuild.apkg.ids import CARD_ID_PATTERN, slug_for_question
from deckbuild.errors import DeckbuildError, Location, Problem
from deckbuild.importer.seeds import (
    FORM_BULLETS,
    SeedDocument,
    SeedFormatError,
    SeedQuestion,
    normalize_ws,
    parse_seed,
)

CARD_KEY_ORDER = (
    "id",
    "question",
    "answer",
    "details",
    "difficulty",
    "topics",
    "source",
    "related",
    "duplicate_of",
    "tags",
    "missing_code",
    "origin",
)
"""Key order of docs/format.md; keys other tools add keep their place among these."""

FUZZY_MATCH = 0.8
"""difflib ratio above which a reworded seed question is the same card."""

FALLBACK_TOPIC = "uncategorized::new"
"""Topic for a new seed question nobody curated yet (a warning asks for a real one)."""

SHORT_GIST = 60
"""A first sentence shorter than this is not a self-contained gist: take two."""

_ABBREVIATIONS = frozenset({"e.g.", "i.e.", "al.", "vs.", "cf.", "approx.", "etc.", "i.i.d."})


class CardsFileError(DeckbuildError):
    """An existing cards/*.yaml file the importer cannot safely rewrite."""

    def __init__(self, path: Path, code: str, message: str) -> None:
        super().__init__(message)
        self.path = path
        self.code = code
        self.message = message

    def __str__(self) -> str:
        return f"{self.path}: {self.code} {self.message}"

    def problems(self) -> tuple[Problem, ...]:
        return (Problem(Location(str(self.path)), self.code, self.message),)


# --- curation data ----------------------------------------------------------------------


@dataclass(frozen=True)
class CurationEntry:
    """What a person decided for one seed question before its card existed."""

    id: str
    question: str
    topics: tuple[str, ...]
    tags: tuple[str, ...] = ()
    duplicate_of: str | None = None
    related: tuple[str, ...] = ()
    missing_code: bool = False


@dataclass(frozen=True)
class Curation:
    """seeds/curation.yaml: per-question curation, code allow-list, subscript fixes."""

    entries: tuple[CurationEntry, ...] = ()
    code_identifiers: tuple[str, ...] = ()
    replacements: dict[str, dict[str, str]] = field(default_factory=dict)


def load_curation(path: Path) -> Curation:
    """Read the curation file; a missing file means nothing is curated."""
    path = Path(path)
    if not path.exists():
        return Curation()
    data = _load_yaml(path.read_text(encoding="utf-8")) or {}
    entries = tuple(
        CurationEntry(
            id=item["id"],
            question=item["question"],
            topics=tuple(item.get("topics") or ()),
            tags=tuple(item.get("tags") or ()),
            duplicate_of=item.get("duplicate_of"),
            related=tuple(item.get("related") or ()),
            missing_code=bool(item.get("missing_code", False)),
        )
        for item in data.get("cards") or ()
    )
    return Curation(
        entries=entries,
        code_identifiers=tuple(data.get("code_identifiers") or ()),
        replacements={k: dict(v) for k, v in (data.get("replacements") or {}).items()},
    )


# --- text: seed prose -> flashcard Markdown ----------------------------------------------

_MD_INLINE = re.compile(r"([\\`*_\[\]])")
_MD_LINE_START = re.compile(r"^(#|>|[-+] |\d+[.)] )")


def escape_markdown(text: str) -> str:
    """Escape what Markdown would reinterpret, so the card shows the seed's characters."""
    text = _MD_INLINE.sub(r"\\\1", text)
    match = _MD_LINE_START.match(text)
    if match:
        token = match.group(1)
        if token[0].isdigit():
            text = re.sub(r"^(\d+)([.)])", r"\1\\\2", text)
        else:
            text = "\\" + text
    return text


def _code_pattern(identifiers: Iterable[str]) -> re.Pattern[str] | None:
    """One regex for the allow-list, longest first, never inside a longer word."""
    items = sorted(set(identifiers), key=lambda s: (-len(s), s))
    if not items:
        return None
    alternation = "|".join(re.escape(item) for item in items)
    return re.compile(rf"(?<![\w.])(?:{alternation})(?![\w(=])")


def render_inline(text: str, code: re.Pattern[str] | None) -> str:
    """Seed text as Markdown: allow-listed identifiers as `code`, everything else escaped."""
    if code is None:
        return escape_markdown(text)
    parts: list[str] = []
    last = 0
    for match in code.finditer(text):
        parts.append(_MD_INLINE.sub(r"\\\1", text[last : match.start()]))
        parts.append(f"`{match.group(0)}`")
        last = match.end()
    parts.append(_MD_INLINE.sub(r"\\\1", text[last:]))
    rendered = "".join(parts)
    if not rendered.startswith("`"):
        rendered = escape_markdown_line_start(rendered)
    return rendered


def escape_markdown_line_start(text: str) -> str:
    """Escape a block marker (heading, quote, list) at the start of an already-escaped line."""
    match = _MD_LINE_START.match(text)
    if not match:
        return text
    if match.group(1)[0].isdigit():
        return re.sub(r"^(\d+)([.)])", r"\1\\\2", text)
    return "\\" + text


def split_sentences(paragraph: str) -> list[str]:
    """Sentences of seed prose; knows e.g./i.e./et al. and lower-case starts like model.eval()."""
    sentences: list[str] = []
    start = 0
    for match in re.finditer(r"[.!?][\"”’)]?\s+", paragraph):
        before = paragraph[start : match.start() + 1]
        last_word = before.split()[-1].lstrip('(["“') if before.split() else ""
        if last_word.lower() in _ABBREVIATIONS or last_word.endswith(".."):
            continue  # "e.g." / "et al." / an ellipsis in ASCII math ("w1*x1 + ... + b")
        following = paragraph[match.end() : match.end() + 1]
        if following and not (following.isalnum() or following in "\"“‘`('"):
            continue  # the next "sentence" would start with an operator, e.g. "+ wn*xn"
        sentences.append(paragraph[start : match.end()].strip())
        start = match.end()
    tail = paragraph[start:].strip()
    if tail:
        sentences.append(tail)
    return sentences


_LABEL = re.compile(r"^([^:=]{1,40}?): (?=\S)")


def _is_label(text: str) -> bool:
    """A short lead-in like "Pitfall" or "Linear rule (Goyal et al., 2017)", not a clause."""
    return len(re.sub(r"\([^)]*\)", "", text).split()) <= 3


def _apply_replacements(text: str, replacements: dict[str, str]) -> str:
    """Curated whole-token fixes (glued subscripts, SEEDS.md A04); never generic."""
    for wrong, right in replacements.items():
        text = re.sub(rf"(?<!\w){re.escape(wrong)}(?!\w)", right, text)
    return text


LONG_BULLETS = 600
"""Bullet answers longer than this (characters) keep only their first bullet as the answer."""


def render_answer(seed_q: SeedQuestion, curation: Curation, code: re.Pattern[str] | None) -> tuple[str, str | None]:
    """(answer, details) for a card: bullets stay bullets; prose becomes gist + details."""
    fixes = curation.replacements.get(seed_q.document, {})
    blocks = [_apply_replacements(block, fixes) for block in seed_q.answer]
    if seed_q.form == FORM_BULLETS:
        lines = []
        for bullet in blocks:
            label = _LABEL.match(bullet)
            if label and _is_label(label.group(1)):
                rest = bullet[label.end() :]
                lines.append(f"- **{render_inline(label.group(1), code)}:** {render_inline(rest, code) if rest else ''}".rstrip())
            else:
                lines.append(f"- {render_inline(bullet, code)}")
        if sum(len(b) for b in blocks) > LONG_BULLETS and len(lines) > 2:
            # Prose chopped into bullets (000-q40..q43): the first bullet is the gist to
            # recall, the rest is explanation a phone should not show all at once.
            return lines[0][2:] + "\n", "\n".join(lines[1:]) + "\n"
        return "\n".join(lines) + "\n", None
    sentences = split_sentences(blocks[0])
    take = 2 if len(sentences) > 2 and len(sentences[0]) < SHORT_GIST else 1
    gist = " ".join(sentences[:take])
    rest_first = " ".join(sentences[take:])
    detail_paragraphs = ([rest_first] if rest_first else []) + list(blocks[1:])
    answer = render_inline(gist, code)
    details = "\n\n".join(render_inline(p, code) for p in detail_paragraphs)
    return answer, (details + "\n" if details else None)


def answer_sha(seed_q: SeedQuestion) -> str:
    """A short hash of the seed's answer: tells whether the seed text changed since import."""
    text = "\n".join(normalize_ws(block) for block in seed_q.answer)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


# --- YAML ------------------------------------------------------------------------------


class _CardDumper(yaml.SafeDumper):  # type: ignore[misc]
    """Deterministic, readable YAML: block scalars for multi-line text, indented lists."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)


def _represent_str(dumper: yaml.SafeDumper, text: str) -> yaml.ScalarNode:
    style = "|" if "\n" in text else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style=style)


_CardDumper.add_representer(str, _represent_str)

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's loader when installed (same data, ~20x faster on 163 cards)."""


def _load_yaml(text: str) -> Any:
    return yaml.load(text, Loader=_Loader)  # CSafeLoader/SafeLoader only


def dump_cards(cards: list[dict[str, Any]]) -> str:
    """A cards file: one YAML list, a blank line between cards (readable diffs)."""
    chunks = [
        yaml.dump(
            [card],
            Dumper=_CardDumper,
            allow_unicode=True,
            sort_keys=False,
            width=1_000_000,
            default_flow_style=False,
        )
        for card in cards
    ]
    return "\n".join(chunks)


def _write_atomic(path: Path, text: str) -> None:
    """Write via a temporary file and os.replace, so a crash never leaves half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# --- the import --------------------------------------------------------------------------


@dataclass
class SeedReport:
    """What one seed's import did, by card id."""

    seed: str
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)

    def summary(self) -> str:
        """One line for the terminal."""
        return (
            f"{self.seed}: {len(self.added)} added, {len(self.updated)} updated, "
            f"{len(self.unchanged)} unchanged, {len(self.missing)} missing"
        )


@dataclass
class ImportReport:
    """Per-seed reports, warnings, and which files were written."""

    seeds: list[SeedReport] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    written: list[Path] = field(default_factory=list)

    @property
    def added(self) -> list[str]:
        return [i for s in self.seeds for i in s.added]

    @property
    def updated(self) -> list[str]:
        return [i for s in self.seeds for i in s.updated]

    @property
    def unchanged(self) -> list[str]:
        return [i for s in self.seeds for i in s.unchanged]

    @property
    def missing(self) -> list[str]:
        return [i for s in self.seeds for i in s.missing]


@dataclass
class _Slot:
    """Where a card lives: its file and its dict (mutated in place)."""

    file: Path
    card: dict[str, Any]


def _load_cards(cards_dir: Path) -> dict[Path, list[dict[str, Any]]]:
    """Every cards/*.yaml as a list of dicts; refuses files it could not rewrite faithfully."""
    files: dict[Path, list[dict[str, Any]]] = {}
    for path in sorted(cards_dir.glob("*.yaml")) if cards_dir.is_dir() else []:
        # The compiler's safe loader first: it reports deep nesting, aliases, bad UTF-8 and
        # duplicate keys as problems, where plain PyYAML would crash or silently lose data.
        from deckbuild.yamlload import load_yaml

        located, problems = load_yaml(path, path.name)
        if problems:
            first = problems[0]
            raise CardsFileError(path, "E340", f"cannot be rewritten safely: {first.format()}")
        try:
            data = _load_yaml(path.read_text(encoding="utf-8")) if located is not None else None
        except yaml.YAMLError as exc:
            raise CardsFileError(path, "E340", f"not valid YAML: {exc}") from exc
        if data is None:
            data = []
        if not isinstance(data, list) or not all(isinstance(c, dict) for c in data):
            raise CardsFileError(path, "E341", "expected a YAML list of cards (mappings)")
        files[path] = data
    return files


def _set_key(card: dict[str, Any], key: str, value: Any) -> None:
    """Set a key; a new key goes to its format.md position, other keys keep theirs."""
    if value is None:
        card.pop(key, None)
        return
    if key in card:
        card[key] = value
        return
    rank = CARD_KEY_ORDER.index(key)
    items = list(card.items())
    insert_at = len(items)
    for index, (existing, _) in enumerate(items):
        if existing in CARD_KEY_ORDER and CARD_KEY_ORDER.index(existing) > rank:
            insert_at = index
            break
    items.insert(insert_at, (key, value))
    card.clear()
    card.update(items)


def _norm_key(text: str) -> str:
    return normalize_ws(text).casefold()


def _match(questions: list[SeedQuestion], candidates: list[_Slot]) -> tuple[dict[int, _Slot], list[_Slot]]:
    """Seed question index -> existing card: exact origin text first, then fuzzy >= 0.8."""
    matched: dict[int, _Slot] = {}
    free = list(candidates)
    by_text: dict[str, _Slot] = {}
    for slot in free:
        by_text.setdefault(_norm_key(str(slot.card["origin"].get("question", ""))), slot)
    for index, seed_q in enumerate(questions):
        hit = by_text.get(_norm_key(seed_q.question))
        if hit is not None and hit in free:
            matched[index] = hit
            free.remove(hit)
    pairs: list[tuple[float, int, int]] = []
    for index, seed_q in enumerate(questions):
        if index in matched:
            continue
        for c_index, slot in enumerate(free):
            ratio = difflib.SequenceMatcher(
                None,
                _norm_key(seed_q.question),
                _norm_key(str(slot.card["origin"].get("question", ""))),
            ).ratio()
            if ratio >= FUZZY_MATCH:
                pairs.append((-ratio, index, c_index))
    taken: set[int] = set()
    for _, index, c_index in sorted(pairs):
        if index in matched or c_index in taken:
            continue
        matched[index] = free[c_index]
        taken.add(c_index)
    remaining = [slot for c_index, slot in enumerate(free) if c_index not in taken]
    return matched, remaining


def _find_curation(seed_q: SeedQuestion, curation: Curation, used: set[str]) -> CurationEntry | None:
    """The curation entry for a new question: same text, else a close rewording."""
    key = _norm_key(seed_q.question)
    unused = [e for e in curation.entries if e.id not in used]
    for entry in unused:
        if _norm_key(entry.question) == key:
            return entry
    best: tuple[float, CurationEntry] | None = None
    for entry in unused:
        ratio = difflib.SequenceMatcher(None, key, _norm_key(entry.question)).ratio()
        if ratio >= FUZZY_MATCH and (best is None or ratio > best[0]):
            best = (ratio, entry)
    return best[1] if best else None


def _unique_id(base: str, taken: set[str]) -> str:
    """base, else base-2, base-3 ... (the rule that gave 004-q083 its '-2')."""
    candidate, n = base, 2
    while candidate in taken:
        candidate, n = f"{base}-{n}", n + 1
    return candidate


def _sort_key(card: dict[str, Any]) -> tuple[str, int, str]:
    """Cards within a file: by source document, then question number."""
    source = str(card.get("source", ""))
    match = re.match(r"^(.*)#q(\d+)$", source)
    if match:
        return match.group(1), int(match.group(2)), str(card.get("id", ""))
    return source, 10**9, str(card.get("id", ""))


def _topic_file(cards_dir: Path, topics: list[str]) -> Path:
    """cards/<primary topic>.yaml, e.g. cards/optimization.yaml."""
    return cards_dir / f"{topics[0].split('::')[0]}.yaml"


def import_seeds(
    project_dir: Path,
    seed_paths: list[Path],
    *,
    curation_path: Path | None = None,
) -> ImportReport:
    """Import seeds into project_dir/cards; writes nothing unless every seed parsed.

    curation_path defaults to project_dir/seeds/curation.yaml.
    Raises SeedFormatError (bad seed) or CardsFileError (unreadable cards file).
    """
    project_dir = Path(project_dir)
    documents: list[SeedDocument] = [parse_seed(Path(p)) for p in seed_paths]
    slugs: dict[str, Path] = {}
    for document in documents:
        if document.slug in slugs:
            raise SeedFormatError(
                document.path,
                None,
                "E331",
                f"seed {document.slug!r} given twice (also {slugs[document.slug]}): expected each seed document once",
            )
        slugs[document.slug] = document.path
    curation = load_curation(curation_path or project_dir / "seeds" / "curation.yaml")
    code = _code_pattern(curation.code_identifiers)
    cards_dir = project_dir / "cards"
    files = _load_cards(cards_dir)
    before = copy.deepcopy(files)

    all_ids = {str(c.get("id")) for cards in files.values() for c in cards if "id" in c}
    managed: list[_Slot] = [
        _Slot(path, card)
        for path, cards in files.items()
        for card in cards
        if isinstance(card.get("origin"), dict) and "question" in card
    ]
    used_curation = set(all_ids)
    report = ImportReport()
    new_cards: list[tuple[_Slot, CurationEntry | None]] = []

    for document in documents:
        seed_report = SeedReport(document.slug)
        report.seeds.append(seed_report)
        candidates = [s for s in managed if s.card["origin"].get("seed") == document.slug]
        questions = list(document.questions)
        matched, missing = _match(questions, candidates)
        for index, seed_q in enumerate(questions):
            slot = matched.get(index)
            if slot is None:
                entry = _find_curation(seed_q, curation, used_curation)
                card = _new_card(seed_q, entry, curation, code, all_ids)
                if entry is not None:
                    used_curation.add(entry.id)
                else:
                    report.warnings.append(
                        f"{seed_q.ref}: new question without curation; gave card "
                        f"'{card['id']}' topic {FALLBACK_TOPIC} - choose its topics by hand"
                    )
                all_ids.add(card["id"])
                path = _topic_file(cards_dir, card["topics"])
                files.setdefault(path, []).append(card)
                new_cards.append((_Slot(path, card), entry))
                seed_report.added.append(card["id"])
                continue
            old = dict(slot.card)
            old_origin = dict(slot.card["origin"])
            _update_card(slot.card, seed_q, curation, code)
            if slot.card != old or slot.card["origin"] != old_origin:
                seed_report.updated.append(str(slot.card["id"]))
            else:
                seed_report.unchanged.append(str(slot.card["id"]))
        for slot in missing:
            seed_report.missing.append(str(slot.card["id"]))
            report.warnings.append(
                f"{slot.card.get('source', document.slug)}: question no longer in "
                f"{document.path}; kept card '{slot.card['id']}' "
                f"({slot.card['origin'].get('question')!r}) - delete it by hand if intended"
            )

    _link_new_cards(files, new_cards, curation, all_ids)

    for path, cards in files.items():
        managed_positions = [i for i, c in enumerate(cards) if isinstance(c.get("origin"), dict)]
        ordered = sorted((cards[i] for i in managed_positions), key=_sort_key)
        for position, card in zip(managed_positions, ordered, strict=True):
            cards[position] = card
        if path in before and cards == before[path]:
            continue  # unchanged data: leave the file's bytes (and hand formatting) alone
        text = dump_cards(cards)
        if _load_yaml(text) != cards:  # pragma: no cover - a dumper bug, never data
            raise CardsFileError(path, "E342", "YAML round trip changed the cards; not written")
        _write_atomic(path, text)
        report.written.append(path)
    return report


def _new_card(
    seed_q: SeedQuestion,
    entry: CurationEntry | None,
    curation: Curation,
    code: re.Pattern[str] | None,
    taken: set[str],
) -> dict[str, Any]:
    """A fresh card for a seed question, with curated id/topics/tags when there are some."""
    if entry is not None and CARD_ID_PATTERN.match(entry.id) and entry.id not in taken:
        card_id = entry.id
    else:
        card_id = _unique_id(slug_for_question(seed_q.question), taken)
    answer, details = render_answer(seed_q, curation, code)
    tags = ([f"level::{seed_q.level}"] if seed_q.level else []) + list(entry.tags if entry else ())
    card: dict[str, Any] = {
        "id": card_id,
        "question": seed_q.question,
        "answer": answer,
        "details": details,
        "difficulty": seed_q.difficulty,
        "topics": list(entry.topics) if entry and entry.topics else [FALLBACK_TOPIC],
        "source": seed_q.ref,
        "tags": tags or None,
        "missing_code": True if entry is not None and entry.missing_code else None,
        "origin": {
            "seed": seed_q.document,
            "question": seed_q.question,
            "answer_sha": answer_sha(seed_q),
        },
    }
    return {k: v for k, v in card.items() if v is not None}


def _update_card(
    card: dict[str, Any],
    seed_q: SeedQuestion,
    curation: Curation,
    code: re.Pattern[str] | None,
) -> None:
    """Bring seed-owned text up to date; curated keys (id, topics, links...) stay as they are."""
    origin = card["origin"]
    if (
        normalize_ws(str(card.get("question", ""))) == normalize_ws(str(origin.get("question", "")))
        and normalize_ws(card["question"]) != seed_q.question
    ):
        card["question"] = seed_q.question  # not hand-edited: follow the seed's rewording
    sha = answer_sha(seed_q)
    if origin.get("answer_sha") != sha:
        answer, details = render_answer(seed_q, curation, code)
        _set_key(card, "answer", answer)
        _set_key(card, "details", details)
    _set_key(card, "source", seed_q.ref)
    new_origin = {
        "seed": seed_q.document,
        "question": seed_q.question,
        "answer_sha": sha,
    }
    if origin != new_origin:
        card["origin"] = {**origin, **new_origin}


def _link_new_cards(
    files: dict[Path, list[dict[str, Any]]],
    new_cards: list[tuple[_Slot, CurationEntry | None]],
    curation: Curation,
    all_ids: set[str],
) -> None:
    """Curated links touching a new card, in both directions, to cards that exist now.

    Links between two cards that already existed are never re-added (a person may have
    removed them on purpose).
    """
    by_id = {str(c.get("id")): c for cards in files.values() for c in cards}
    new_ids = {slot.card["id"] for slot, _ in new_cards}
    for slot, entry in new_cards:
        if entry is None:
            continue
        card = slot.card
        related = [r for r in entry.related if r in all_ids and r != card["id"]]
        _set_key(card, "related", related or None)
        if entry.duplicate_of and entry.duplicate_of in all_ids:
            _set_key(card, "duplicate_of", entry.duplicate_of)
    for entry in curation.entries:
        owner = by_id.get(entry.id)
        if owner is None or entry.id in new_ids:
            continue
        added = [r for r in entry.related if r in new_ids and r not in (owner.get("related") or [])]
        if added:
            order = {r: i for i, r in enumerate(entry.related)}
            merged = list(owner.get("related") or []) + added
            merged.sort(key=lambda r: order.get(r, len(order)))
            _set_key(owner, "related", merged)
        if entry.duplicate_of in new_ids and "duplicate_of" not in owner:
            _set_key(owner, "duplicate_of", entry.duplicate_of)


def run_import(project_dir: Path, seed_paths: list[Path], echo: Callable[[str], None]) -> int:
    """The CLI's `deckbuild import`: summary per seed, warnings, exit code (0 ok, 1 error)."""
    try:
        report = import_seeds(Path(project_dir), [Path(p) for p in seed_paths])
    except (SeedFormatError, CardsFileError) as exc:
        echo(f"error: {exc}")
        echo("nothing written to cards/")
        return 1
    for warning in report.warnings:
        echo(f"warning: {warning}")
    for seed_report in report.seeds:
        echo(seed_report.summary())
    return 0
