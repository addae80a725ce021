"""Parse the seed question banks (plain text captured from web pages) into questions.

Two formats exist (see seeds/README.md); which one a file is follows from its content,
never from a flag.  Both parsers are strict line-by-line state machines: every line is
classified, and any line that does not fit the expected grammar is an error with a file
position and a stable code, because a silently mis-parsed seed would ship wrong cards.

Error codes (stable, for tests and users):

* E301 empty seed file
* E302 format not recognised
* E303 not UTF-8 text
* E310-E319 training-dynamics format (question / difficulty / bullet grammar)
* E320-E329 question-bank format (headings, list, numbered answers)
* E330 the same question twice in one seed
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from deckbuild.errors import LocatedError, Location
from deckbuild.model import DIFFICULTIES

LEVELS = ("Beginners", "Intermediate", "Experienced")
LEVEL_TAG = {
    "Beginners": "beginner",
    "Intermediate": "intermediate",
    "Experienced": "experienced",
}
LEVEL_DIFFICULTY = {
    "Beginners": "easy",
    "Intermediate": "medium",
    "Experienced": "hard",
}

FORM_BULLETS = "bullets"
FORM_PROSE = "prose"


class SeedFormatError(LocatedError):
    """A seed file that cannot be parsed; says where, what was expected and what was found."""

    def __init__(self, path: Path | str, line: int | None, code: str, message: str) -> None:
        super().__init__(Location(str(Path(path)), line or 0, 1 if line else 0), code, message)

    @property
    def line(self) -> int | None:
        """The 1-based line, or None for the whole file (an empty or undecodable seed)."""
        return self.location.line or None


@dataclass(frozen=True)
class SeedQuestion:
    """One question of a seed with its answer blocks, exactly as the seed gives them."""

    document: str
    """Slug of the seed document, e.g. "training-dynamics-43" (the file's stem)."""
    number: int
    """Position in the file (training dynamics) or the source's own number (question bank)."""
    question: str
    answer: tuple[str, ...]
    """Bullets (form "bullets") or paragraphs (form "prose"), whitespace-normalised."""
    form: str
    difficulty: str
    level: str | None
    """"beginner" / "intermediate" / "experienced" for the question bank, else None."""
    line: int
    """1-based line of the question (of the numbered answer in the question bank)."""

    @property
    def ref(self) -> str:
        """Where the question is in its seed: "training-dynamics-43#q05"."""
        width = 2 if self.form == FORM_BULLETS else 3
        return f"{self.document}#q{self.number:0{width}d}"


@dataclass(frozen=True)
class SeedDocument:
    """A parsed seed: its slug, which format it was, and its questions in file order."""

    path: Path
    slug: str
    kind: str
    questions: tuple[SeedQuestion, ...]


def normalize_ws(text: str) -> str:
    """Collapse runs of whitespace so that re-wrapped seed text compares equal."""
    return " ".join(text.split())


def _read_lines(path: Path) -> list[str]:
    """The file's lines without line ends or blank lines' content (the last line need not end with a newline)."""
    data = path.read_bytes()
    if not data.strip():
        raise SeedFormatError(path, None, "E301", "empty seed file: expected questions, found no text")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise SeedFormatError(path, line, "E303", f"not UTF-8 text (byte {exc.start})") from exc
    return [line.rstrip("\r") for line in text.split("\n")]


# --- format A: "43 interview questions on training dynamics" -------------------------

_TD_HEADER = re.compile(r"^(\d+) interview questions\b.*$")
_TD_FIRST = re.compile(rf"^({'|'.join(DIFFICULTIES)})- (.*)$")
_TD_BULLET = re.compile(r"^- (.*)$")


def _parse_training_dynamics(path: Path, lines: list[str], slug: str) -> list[SeedQuestion]:
    """Header, then per question: question line, "DIFF- first bullet", further "- " bullets."""
    header = _TD_HEADER.match(lines[0])
    assert header
    claimed = int(header.group(1))
    questions: list[SeedQuestion] = []
    current: dict[str, Any] | None = None
    state = "expect-question"  # after the header or after a question's bullets

    def close() -> None:
        if current is not None:
            questions.append(
                SeedQuestion(
                    document=slug,
                    number=len(questions) + 1,
                    question=current["question"],
                    answer=tuple(current["bullets"]),
                    form=FORM_BULLETS,
                    difficulty=current["difficulty"],
                    level=None,
                    line=current["line"],
                )
            )

    for lineno, raw in enumerate(lines[1:], start=2):
        line = raw.strip()
        if not line:
            continue
        first = _TD_FIRST.match(line)
        bullet = _TD_BULLET.match(line)
        if state == "expect-difficulty":
            assert current is not None  # a question line set it and moved to this state
            if not first:
                raise SeedFormatError(
                    path,
                    lineno,
                    "E311",
                    f"expected '<easy|medium|hard>- <first bullet>' after the question on line "
                    f"{current['line']}, found {line[:60]!r}",
                )
            current["difficulty"] = first.group(1)
            current["bullets"].append(normalize_ws(first.group(2)))
            state = "in-bullets"
        elif first:
            raise SeedFormatError(
                path,
                lineno,
                "E312",
                f"difficulty line without a question before it: found {line[:60]!r}",
            )
        elif bullet:
            if state != "in-bullets":
                raise SeedFormatError(
                    path,
                    lineno,
                    "E313",
                    f"bullet before any question: found {line[:60]!r}",
                )
            assert current is not None  # "in-bullets" is reached only with a current question
            current["bullets"].append(normalize_ws(bullet.group(1)))
        else:
            close()
            current = {
                "question": normalize_ws(line),
                "bullets": [],
                "difficulty": None,
                "line": lineno,
            }
            state = "expect-difficulty"
    if state == "expect-difficulty":
        assert current is not None  # a question line set it and moved to this state
        raise SeedFormatError(
            path,
            len(lines),
            "E314",
            f"file ends after the question on line {current['line']} without its answer "
            "(truncated?): expected a '<difficulty>- ' line",
        )
    close()
    if len(questions) != claimed:
        raise SeedFormatError(
            path,
            1,
            "E315",
            f"header announces {claimed} questions, found {len(questions)} (truncated or edited "
            "seed? update the header's count if the change is intended)",
        )
    return questions


# --- format B: "Deep Learning Interview Questions" bank -------------------------------

_BANK_ANSWERS = re.compile(r"^(.+) Interview Questions and Answers$")
_NUMBERED = re.compile(r"^(\d{1,3})\. (.+)$")


def _parse_question_bank(path: Path, lines: list[str], slug: str) -> list[SeedQuestion]:
    """Preamble, three listed levels, three answered levels, page trailer."""
    title = next(m.group(1) for line in lines if (m := _BANK_ANSWERS.match(line.strip())))
    list_heading = {f"{title} Interview Questions for {lv}": lv for lv in LEVELS}
    answer_heading = {f"{title} Interview Questions and Answers for {lv}": lv for lv in LEVELS}
    answers_intro = f"{title} Interview Questions and Answers"
    trailer = f"{title} Documentation and Further Reading"

    listed: list[tuple[str, str]] = []  # (question, level)
    answered: list[dict[str, Any]] = []
    state = "preamble"
    level_index = -1  # position in LEVELS of the current section
    after_description = "list"  # the state a heading's one description line leads to
    for lineno, raw in enumerate(lines, start=1):
        line = normalize_ws(raw)
        if not line:
            continue
        if state == "trailer":
            continue
        if state == "description":
            state = after_description
            continue
        if line in list_heading:
            level = list_heading[line]
            if state not in ("preamble", "list") or LEVELS.index(level) != level_index + 1:
                raise SeedFormatError(
                    path,
                    lineno,
                    "E321",
                    f"expected the list heading for {LEVELS[level_index + 1] if level_index < 2 else 'answers'}"
                    f" here, found {line!r}",
                )
            level_index += 1
            state, after_description = "description", "list"
            continue
        if line == answers_intro:
            if state != "list" or level_index != 2:
                raise SeedFormatError(
                    path,
                    lineno,
                    "E321",
                    f"answers start before all three question lists: {line!r}",
                )
            state, after_description = "description", "answers-wait"
            level_index = -1
            continue
        if line in answer_heading:
            level = answer_heading[line]
            if state not in ("answers-wait", "answers") or LEVELS.index(level) != level_index + 1:
                raise SeedFormatError(path, lineno, "E322", f"answer heading out of order: found {line!r}")
            level_index += 1
            state, after_description = "description", "answers"
            continue
        if line == trailer:
            if state != "answers" or level_index != 2:
                raise SeedFormatError(
                    path,
                    lineno,
                    "E322",
                    f"page trailer before the Experienced answers: {line!r}",
                )
            state = "trailer"
            continue
        if state == "list":
            listed.append((line, LEVELS[level_index]))
        elif state == "answers":
            numbered = _NUMBERED.match(line)
            expected = len(answered) + 1
            if numbered and int(numbered.group(1)) == expected:
                if expected > len(listed) or listed[expected - 1][0] != numbered.group(2):
                    found = listed[expected - 1][0] if expected <= len(listed) else "nothing"
                    raise SeedFormatError(
                        path,
                        lineno,
                        "E323",
                        f"answer {expected} repeats a question that differs from list item "
                        f"{expected}: listed {found!r}, answered {numbered.group(2)!r}",
                    )
                if listed[expected - 1][1] != LEVELS[level_index]:
                    raise SeedFormatError(
                        path,
                        lineno,
                        "E324",
                        f"question {expected} is listed as {listed[expected - 1][1]} but answered under {LEVELS[level_index]}",
                    )
                answered.append(
                    {
                        "number": expected,
                        "question": numbered.group(2),
                        "paragraphs": [],
                        "level": LEVELS[level_index],
                        "line": lineno,
                    }
                )
            elif numbered:
                raise SeedFormatError(
                    path,
                    lineno,
                    "E325",
                    f"answers are not numbered consecutively: expected {expected}, found {numbered.group(1)}",
                )
            elif not answered:
                raise SeedFormatError(
                    path,
                    lineno,
                    "E325",
                    f"expected '1. <question>', found {line[:60]!r}",
                )
            else:
                answered[-1]["paragraphs"].append(line)
    if state in ("preamble", "list", "answers-wait", "description") or not answered:
        raise SeedFormatError(
            path,
            len(lines),
            "E326",
            f"file ends before the numbered answers (state {state}): truncated?",
        )
    for item in answered:
        if not item["paragraphs"]:
            raise SeedFormatError(
                path,
                item["line"],
                "E327",
                f"question {item['number']} has no answer text (truncated?)",
            )
    if len(answered) != len(listed):
        raise SeedFormatError(
            path,
            len(lines),
            "E328",
            f"the list has {len(listed)} questions but the answers stop at {len(answered)} (truncated?)",
        )
    if state != "trailer":
        raise SeedFormatError(
            path,
            len(lines),
            "E329",
            f"expected the page trailer {trailer!r} after answer {len(answered)}, found the end of the file (truncated?)",
        )
    return [
        SeedQuestion(
            document=slug,
            number=item["number"],
            question=item["question"],
            answer=tuple(item["paragraphs"]),
            form=FORM_PROSE,
            difficulty=LEVEL_DIFFICULTY[item["level"]],
            level=LEVEL_TAG[item["level"]],
            line=item["line"],
        )
        for item in answered
    ]


KIND_TRAINING_DYNAMICS = "training-dynamics"
KIND_QUESTION_BANK = "question-bank"


def detect_kind(lines: list[str]) -> str | None:
    """Which format the lines are in, from content alone; None if neither."""
    first = next((line.strip() for line in lines if line.strip()), "")
    if _TD_HEADER.match(first):
        return KIND_TRAINING_DYNAMICS
    if any(_BANK_ANSWERS.match(line.strip()) for line in lines):
        return KIND_QUESTION_BANK
    return None


def parse_seed(path: Path) -> SeedDocument:
    """Parse one seed file; raises SeedFormatError with a position and code on any doubt."""
    path = Path(path)
    lines = _read_lines(path)
    slug = path.name.removesuffix(".txt")
    kind = detect_kind(lines)
    if kind == KIND_TRAINING_DYNAMICS:
        questions = _parse_training_dynamics(path, lines, slug)
    elif kind == KIND_QUESTION_BANK:
        questions = _parse_question_bank(path, lines, slug)
    else:
        first = next((line.strip() for line in lines if line.strip()), "")
        raise SeedFormatError(
            path,
            1,
            "E302",
            "unrecognised seed format: expected a header like '43 interview questions on ...' "
            "or a '<Title> Interview Questions and Answers' heading, found "
            f"{first[:60]!r}",
        )
    seen: dict[str, int] = {}
    for q in questions:
        key = q.question.casefold()
        if key in seen:
            raise SeedFormatError(
                path,
                q.line,
                "E330",
                f"question repeated from line {seen[key]}: {q.question!r}",
            )
        seen[key] = q.line
    return SeedDocument(path=path, slug=slug, kind=kind, questions=tuple(questions))
