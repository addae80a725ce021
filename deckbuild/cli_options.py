"""What every command of the command line shares: finding the project (-C, --project), the
collection and variant options, progress lines, and a domain error turned into its messages
and exit status (never a traceback)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from functools import wraps
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import click

from deckbuild.errors import DeckbuildError, Problem
from deckbuild.layout import CONFIG_FILE

F = TypeVar("F", bound=Callable[..., Any])

PROJECT_HELP = "The deck project folder (the one holding deck.yaml)  [default: this folder or the nearest one above it]."


def project_option(*, search: bool = True, required: bool = True) -> Callable[[F], F]:
    """`-C DIR`, after the command name (or before it, on `deckbuild`: the same option, given once).

    Without it the project is this folder or, as git finds its repository, the nearest one
    above that holds deck.yaml (stopping at a git root); `search=False` (import) takes this folder.
    `required=False` (diff of two .apkg files) falls back to this folder when there is none.
    """

    def resolve(ctx: click.Context, _param: click.Parameter, value: Path | None) -> Path:
        before = ctx.parent.params.get("project") if ctx.parent is not None else None
        if value is not None and before is not None:
            raise click.UsageError("-C given twice (before and after the command name); give it once", ctx)
        given = value if value is not None else before
        if given is not None:
            if required and not os.path.lexists(given / CONFIG_FILE):
                no_project(f"no {CONFIG_FILE} in {given}")
            return Path(given)
        if not search:
            return Path(".")
        found = find_project(Path.cwd())
        if found is None:
            if not required:
                return Path(".")
            no_project(f"no {CONFIG_FILE} in this folder or any folder above it")
        if found.resolve() != Path.cwd().resolve():
            click.echo(f"using the deck project in {found}", err=True)
        return found

    return click.option(
        "-C",
        "--project",
        "project",
        type=click.Path(file_okay=False, path_type=Path),
        default=None,
        callback=resolve,
        help=PROJECT_HELP,
    )


def find_project(start: Path) -> Path | None:
    """The nearest folder from `start` up that holds deck.yaml, stopping at a git root or the filesystem's root."""
    here = start.resolve()
    for folder in (here, *here.parents):
        if os.path.lexists(folder / CONFIG_FILE):
            return folder if folder != here else start
        if (folder / ".git").exists():
            return None
    return None


def no_project(what: str) -> NoReturn:
    click.echo(
        f"{CONFIG_FILE}: E150 {what}: this is not a deck project. `deckbuild new DIR` starts one;"
        " `-C DIR` points at one (`deckbuild -C DIR COMMAND`)",
        err=True,
    )
    sys.exit(1)


PROJECT_OPTION = project_option()

IDENTITY_OPTION = click.option(
    "--allow-identity-change",
    is_flag=True,
    help="Accept a deck name changed since the last build (learners must rename their deck in Anki first), or, with"
    " `release --bump major`, a changed namespace (every note becomes new).  See docs/format.md.",
)


def report(problems: Sequence[Problem]) -> None:
    """One line per problem, in one write (click.echo flushes each call: 3,000 warnings were 3,000 writes)."""
    if problems:
        click.echo("\n".join(problem.format() for problem in problems), err=True)


def handles_errors(func: F) -> F:
    """Turn a DeckbuildError into its located messages and exit status; no traceback."""

    @wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except DeckbuildError as exc:
            problems = exc.problems()
            report(problems)
            # A summary ("3 error(s) in the sources") follows the problems; an error that is one
            # located problem (LocatedError) has said everything in its one line.
            summary = str(exc)
            if summary not in {p.format() for p in problems} and (not problems or any(p.severity == "error" for p in problems)):
                click.secho(f"error: {summary}", fg="red", err=True)
            sys.exit(exc.exit_code)
        except KeyboardInterrupt:
            click.echo("interrupted; outputs left as they were", err=True)
            sys.exit(130)
        except (click.exceptions.Exit, click.ClickException, SystemExit):
            raise
        except Exception as exc:  # a bug in deckbuild, never a user's mistake: those are DeckbuildErrors
            if os.environ.get("DECKBUILD_DEBUG"):
                raise
            click.secho(
                f"internal error: {type(exc).__name__}: {exc}; outputs left as they were.\n"
                "This is a bug in deckbuild, please report it (DECKBUILD_DEBUG=1 shows the traceback).",
                fg="red",
                err=True,
            )
            sys.exit(2)

    return wrapper  # type: ignore[return-value]


COLLECTION_OPTIONS = [
    click.option(
        "--collection",
        type=click.Path(dir_okay=False, path_type=Path),
        help="The collection file (collection.anki2); for status also an exported .apkg of one.",
    ),
    click.option("--profile", help="An Anki desktop profile name, e.g. 'User 1' (instead of --collection)."),
    click.option(
        "--base",
        type=click.Path(file_okay=False, path_type=Path),
        help="Anki's base folder, if not the default (~/.local/share/Anki2, ~/Library/Application Support/Anki2, %APPDATA%\\Anki2; or $ANKI_BASE).",
    ),
    click.option(
        "--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True, help="json: one object."
    ),
]


VARIANT_OPTION = click.option(
    "--variant", metavar="KEY", help="Use this variant's package (deck.yaml's `variants:`) instead of the full deck's."
)


def collection_options(func: F) -> F:
    for option in reversed(COLLECTION_OPTIONS):
        func = option(func)
    return func


def progress_lines(quiet: bool) -> Callable[[int, int, str], None]:
    """Progress lines for long work (drawing diagrams, rendering cards) on stderr, unless quiet."""

    def progress(done: int, total: int, what: str) -> None:
        if not quiet:
            click.echo(f"  [{done}/{total}] {what}", err=True)

    return progress


def relative(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)
