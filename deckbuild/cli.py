"""The command line: options in, one call, a domain error out as a message and exit code.

Commands import their heavy modules inside the function, so `deckbuild --help` and
no-op rebuilds stay fast.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Sequence
from functools import wraps
from pathlib import Path
from typing import Any, TypeVar

import click

from deckbuild import __version__
from deckbuild.errors import DeckbuildError, Problem

F = TypeVar("F", bound=Callable[..., Any])

PROJECT_OPTION = click.option(
    "-C",
    "--project",
    "project",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("."),
    show_default=True,
    help="The deck project folder (the one holding deck.yaml).",
)


def _report(problems: Sequence[Problem]) -> None:
    for problem in problems:
        click.echo(problem.format(), err=True)


def handles_errors(func: F) -> F:
    """Turn a DeckbuildError into its located messages and exit status; no traceback."""

    @wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except DeckbuildError as exc:
            problems = exc.problems()
            _report(problems)
            if not problems or any(p.severity == "error" for p in problems):
                click.secho(f"error: {exc}", fg="red", err=True)
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


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="deckbuild")
def main() -> None:
    """Compile question/answer sources into versioned Anki decks (.apkg).

    A deck project is a folder with deck.yaml, cards/*.yaml and media/.  Typical use:

    \b
      deckbuild check            # every problem, as file:line:col: CODE message
      deckbuild build            # write dist/<deck>-<version>.apkg
      deckbuild import seeds/*.txt   # (re)import the seed question banks into cards/

    Re-importing a rebuilt deck into Anki updates only the notes whose content changed
    and keeps every card's review history.  See README.md for the source format.
    """


@main.command()
@PROJECT_OPTION
@click.option("--strict", is_flag=True, help="Treat warnings as errors (exit 1 if there are any).")
@click.option("-q", "--quiet", is_flag=True, help="Print nothing but errors.")
@handles_errors
def build(project: Path, strict: bool, quiet: bool) -> None:
    """Validate the sources and write dist/<deck-slug>-<version>.apkg.

    Nothing is written unless every source is valid; the package and the build record
    (deckbuild.lock, commit it) are replaced atomically, so a failed or interrupted
    build leaves the previous ones intact.  Same sources and record give the same bytes.
    """
    from deckbuild.build import build as run_build

    def progress(done: int, total: int, what: str) -> None:
        if not quiet:
            click.echo(f"  [{done}/{total}] {what}", err=True)

    result = run_build(project, progress=progress, strict=strict)
    if not quiet:
        rel = _relative(result.path)
        state = "wrote" if result.written else "up to date:"
        click.echo(
            f"{state} {rel}: {result.notes} notes, {result.cards} cards, {result.media} media files"
            f" ({result.changed_notes} notes changed since the last build)"
        )


@main.command()
@PROJECT_OPTION
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="text: one 'file:line:col: CODE message' line per problem; json: a list of objects for tools.",
)
@click.option("--strict", is_flag=True, help="Exit 1 on warnings too.")
@handles_errors
def check(project: Path, fmt: str, strict: bool) -> None:
    """Check the sources without writing anything.

    Reports every problem at once, each with its file, line, column and a stable code
    (the README lists the codes and how to fix each).  Exit status 1 if there is an error.
    """
    from deckbuild.build import check as run_check

    problems = run_check(project)
    if fmt == "json":
        click.echo(json.dumps([p.to_json() for p in problems], indent=2))
    else:
        _report(problems)
    errors = sum(1 for p in problems if p.severity == "error")
    warnings = len(problems) - errors
    if fmt == "text":
        click.echo(f"{errors} error(s), {warnings} warning(s)", err=True)
    if errors or (strict and warnings):
        sys.exit(1)


def _relative(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


if __name__ == "__main__":  # pragma: no cover
    main()
