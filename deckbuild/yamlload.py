"""Safe YAML loading that remembers where every value came from.

PyYAML's safe loader silently keeps the last of two equal keys and forgets line numbers.
Card authors need both: a key given twice is a mistake to report, and every later error
must point at `file:line:col`.  So we compose the node tree (C-accelerated where
available) and build plain Python values ourselves, refusing anchors and aliases (the
"billion laughs" bomb) and absurd nesting.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from deckbuild.errors import Location, Problem

_Loader: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
MAX_DEPTH = 50
MAX_FILE_BYTES = 20 * 1024 * 1024
_PLAIN_COLLECTION_TAGS = (None, "!", "tag:yaml.org,2002:seq", "tag:yaml.org,2002:map")


class LocatedMap(dict[str, Any]):
    """A mapping that knows where it and each of its keys' values start."""

    loc: Location
    key_locs: dict[str, Location]
    value_locs: dict[str, Location]


class LocatedList(list[Any]):
    """A sequence that knows where it and each of its items start."""

    loc: Location
    item_locs: list[Location]


def to_plain(value: Any) -> Any:
    """The same value with plain dicts and lists (for code that rewrites YAML, like the importer)."""
    if isinstance(value, dict):
        return {key: to_plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [to_plain(item) for item in value]
    return value


class _Abort(Exception):
    def __init__(self, problem: Problem) -> None:
        self.problem = problem


def read_text(path: Path, display: str) -> tuple[str | None, list[Problem]]:
    """Read a UTF-8 source file (a BOM is allowed and dropped; CRLF is accepted)."""
    from deckbuild.fsutil import not_regular_message, special_kind

    kind = special_kind(path)
    if kind is not None:
        return None, [Problem(Location(display), "E125", not_regular_message(kind))]
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            return None, [
                Problem(Location(display), "E117", f"file is larger than {MAX_FILE_BYTES // 1024 // 1024} MB; split it")
            ]
        raw = path.read_bytes()
    except OSError as exc:
        return None, [Problem(Location(display), "E118", f"cannot read file: {exc.strerror}")]
    return decode_text(raw, display)


def decode_text(raw: bytes, display: str) -> tuple[str | None, list[Problem]]:
    """Decode a source file's bytes (see read_text); split out so a caller can hash what it parses."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        col = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        return None, [
            Problem(
                Location(display, line, col),
                "E102",
                f"file is not valid UTF-8: byte 0x{raw[exc.start]:02x} cannot be decoded; save the file as UTF-8",
            )
        ]
    return text.removeprefix("\ufeff"), []


def load_yaml(path: Path, display: str) -> tuple[Any, list[Problem]]:
    """Parse one YAML file into plain values with locations; problems instead of exceptions."""
    text, problems = read_text(path, display)
    if text is None:
        return None, problems
    return parse_yaml(text, display)


def parse_yaml(text: str, display: str) -> tuple[Any, list[Problem]]:
    """Parse YAML text (see load_yaml)."""
    problems: list[Problem] = []
    try:
        try:
            value = _build_from_events(text, display, problems, _Loader)
        except yaml.MarkedYAMLError as exc:
            if not _is_nesting_limit(exc) or _Loader is yaml.SafeLoader:
                raise
            # libyaml's scanner looks up to 1024 characters ahead and stops at its own limit
            # of 1000 levels (PyYAML >= 6.0.4's bundled libyaml) before we see the event that
            # passes ours; the pure-Python parser streams them, so E115 lands where it belongs.
            problems.clear()
            value = _build_from_events(text, display, problems, yaml.SafeLoader)
    except _Abort as abort:
        return None, [abort.problem]
    except yaml.reader.ReaderError as exc:
        # a control character (NUL, BEL, ...): locate it instead of quoting PyYAML's offset
        line = text.count("\n", 0, exc.position) + 1
        col = exc.position - (text.rfind("\n", 0, exc.position) + 1) + 1
        char = exc.character if isinstance(exc.character, str) else chr(exc.character)
        return None, [
            Problem(
                Location(display, line, col),
                "E100",
                f"YAML syntax error: control character U+{ord(char):04X} is not allowed; remove it",
            )
        ]
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = Location(display, mark.line + 1, mark.column + 1) if mark else Location(display)
        if _is_nesting_limit(exc):
            return None, [Problem(where, "E115", f"YAML nested too deeply (limit {MAX_DEPTH} levels)")]
        what = exc.problem or "invalid YAML"
        lines = text.splitlines()
        line_text = lines[mark.line] if mark and mark.line < len(lines) else ""
        hint = " (YAML indentation must use spaces, not tabs)" if mark and "\t" in line_text[: mark.column + 1] else ""
        return None, [Problem(where, "E100", f"YAML syntax error: {what}{hint}")]
    except yaml.YAMLError as exc:
        return None, [Problem(Location(display), "E100", f"YAML syntax error: {exc}")]
    return value, problems


def _is_nesting_limit(exc: yaml.MarkedYAMLError) -> bool:
    return "nesting depth" in (exc.problem or "")


def _brace_hint(text: str, loc: Location) -> str:
    """The fix when the mapping used as a key is the `{{` of an unquoted cloze value."""
    lines = text.splitlines()
    line = lines[loc.line - 1] if 0 < loc.line <= len(lines) else ""
    start = max(loc.col - 2, 0)
    if "{{" not in line[start : loc.col + 1]:
        return ""
    return "; a value that starts with '{{' is read as a YAML mapping: quote the whole value, e.g. fact: '{{c1::...}} ...'"


def _build_from_events(text: str, display: str, problems: list[Problem], loader_class: type) -> Any:
    """Build values from the parser's event stream.

    Iterative on purpose: the recursive composer overflows the C stack on deeply nested
    input, which no `except` can catch.
    """
    loader = loader_class("")
    stack: list[Any] = []  # containers being filled
    pending_key: list[Any] = []  # per mapping on the stack: the key waiting for its value
    root: Any = None
    documents = 0

    def where(event: Any) -> Location:
        return Location(display, event.start_mark.line + 1, event.start_mark.column + 1)

    def attach(value: Any, loc: Location) -> None:
        nonlocal root
        if not stack:
            root = value
            return
        parent = stack[-1]
        if isinstance(parent, LocatedList):
            parent.append(value)
            parent.item_locs.append(loc)
            return
        key_slot = pending_key[-1]
        if key_slot is None:
            if isinstance(value, (LocatedList, LocatedMap)):
                raise _Abort(Problem(loc, "E106", "a mapping key must be a plain word" + _brace_hint(text, loc)))
            pending_key[-1] = (str(value), loc)
            return
        key, key_loc = key_slot
        pending_key[-1] = None
        if key in parent:
            first = parent.key_locs[key]
            problems.append(
                Problem(key_loc, "E101", f"key '{key}' is given twice in one mapping (first at line {first.line}); keep one")
            )
            return
        parent[key] = value
        parent.key_locs[key] = key_loc
        parent.value_locs[key] = loc

    # A scalar whose tag the resolver would make `str` is its own text: decided here without
    # building a node for the constructor (most values of a card file are such texts).
    # Exactly resolve()'s rule: a quoted or block scalar (not implicit) is a string; a plain
    # one is too unless an implicit resolver is registered for its first character.
    resolvers = loader.yaml_implicit_resolvers
    plain_is_str = not loader.yaml_path_resolvers and not resolvers.get(None)
    str_tag = loader.DEFAULT_SCALAR_TAG
    scalar_event = yaml.ScalarEvent
    try:
        for event in yaml.parse(text, Loader=loader_class):
            if type(event) is scalar_event and event.anchor is None and event.tag is None and plain_is_str:
                value = event.value
                if not event.implicit[0] or (value and value[0] not in resolvers):
                    attach(value, where(event))
                    continue
            if isinstance(event, yaml.DocumentStartEvent):
                documents += 1
                if documents > 1:
                    raise _Abort(Problem(where(event), "E100", "YAML syntax error: only one document per file (remove '---')"))
            elif isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
                raise _Abort(
                    Problem(
                        where(event), "E114", "YAML anchors and aliases (&name, *name) are not supported; write the value out"
                    )
                )
            elif isinstance(event, yaml.ScalarEvent):
                tag = event.tag
                if tag is None or tag == "!":
                    tag = loader.resolve(yaml.ScalarNode, event.value, event.implicit)
                if tag == str_tag:  # what construct_yaml_str would return
                    attach(event.value, where(event))
                    continue
                # the C and pure-Python marks are different classes with the same fields
                node = yaml.ScalarNode(tag, event.value, event.start_mark, event.end_mark, event.style)  # type: ignore[arg-type]
                try:
                    value = loader.construct_object(node, deep=True)
                except yaml.constructor.ConstructorError as exc:
                    raise _Abort(Problem(where(event), "E106", f"cannot read value: {exc.problem}")) from None
                except (ValueError, OverflowError, TypeError) as exc:
                    # e.g. an integer of more than 4,300 digits, or a date like 2024-02-30
                    raise _Abort(Problem(where(event), "E106", f"cannot read value: {exc}")) from None
                attach(value, where(event))
            elif isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
                if event.tag not in _PLAIN_COLLECTION_TAGS:
                    # `!!python/object/apply:...`, `!!set`, `!!omap`: never constructed, always refused
                    raise _Abort(Problem(where(event), "E106", f"YAML tag '{event.tag}' is not supported; remove it"))
                if len(stack) >= MAX_DEPTH:
                    raise _Abort(Problem(where(event), "E115", f"YAML nested too deeply (limit {MAX_DEPTH} levels)"))
                container: Any
                if isinstance(event, yaml.SequenceStartEvent):
                    container = LocatedList()
                    container.item_locs = []
                else:
                    container = LocatedMap()
                    container.key_locs = {}
                    container.value_locs = {}
                container.loc = where(event)
                attach(container, container.loc)
                stack.append(container)
                pending_key.append(None)
            elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
                stack.pop()
                pending_key.pop()
    finally:
        loader.dispose()
    return root
