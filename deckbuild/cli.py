"""The command line: options in, one call, a domain error out as a message and exit code.

Commands import their heavy modules inside the function, so `deckbuild --help` and
no-op rebuilds stay fast.
"""

from __future__ import annotations

import gc
import json
import os
import sys
from collections.abc import Callable, Sequence
from functools import wraps
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import click

from deckbuild import __version__
from deckbuild.errors import DeckbuildError, Problem
from deckbuild.layout import CONFIG_FILE

F = TypeVar("F", bound=Callable[..., Any])

PROJECT_HELP = "The deck project folder (the one holding deck.yaml)  [default: this folder or the nearest one above it]."


def _project_option(*, search: bool = True, required: bool = True) -> Callable[[F], F]:
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
                _no_project(f"no {CONFIG_FILE} in {given}")
            return Path(given)
        if not search:
            return Path(".")
        found = find_project(Path.cwd())
        if found is None:
            if not required:
                return Path(".")
            _no_project(f"no {CONFIG_FILE} in this folder or any folder above it")
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


def _no_project(what: str) -> NoReturn:
    click.echo(
        f"{CONFIG_FILE}: E150 {what}: this is not a deck project. `deckbuild new DIR` starts one;"
        " `-C DIR` points at one (`deckbuild -C DIR COMMAND`)",
        err=True,
    )
    sys.exit(1)


PROJECT_OPTION = _project_option()

IDENTITY_OPTION = click.option(
    "--allow-identity-change",
    is_flag=True,
    help="Accept a deck name changed since the last build (learners must rename their deck in Anki first), or, with"
    " `release --bump major`, a changed namespace (every note becomes new).  See docs/format.md.",
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


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="deckbuild")
@click.option("-C", "--project", "project", type=click.Path(file_okay=False, path_type=Path), default=None, help=PROJECT_HELP)
def main(project: Path | None) -> None:
    """Compile question/answer sources into versioned Anki decks (.apkg).

    A deck project is a folder with deck.yaml, cards/*.yaml and media/.  Typical use:

    \b
      deckbuild new my-deck      # start a deck of your own
      deckbuild check            # every problem, as file:line:col: CODE message
      deckbuild build            # write dist/<deck>-<version>.apkg
      deckbuild import seeds/*.txt   # (re)import the seed question banks into cards/

    Re-importing a rebuilt deck into Anki updates only the notes whose content changed
    and keeps every card's review history.  See README.md for the source format.
    """


@main.command()
@PROJECT_OPTION
@click.option("--strict", is_flag=True, help="Treat warnings as errors (exit 1 if there are any).")
@click.option("-q", "--quiet", is_flag=True, help="Print nothing but errors (no progress, no warnings).")
@click.option("--force", is_flag=True, help="Build even if no source, output or deckbuild itself changed since the last build.")
@click.option(
    "-j",
    "--jobs",
    type=click.IntRange(min=1),
    default=None,
    help="Worker processes for parsing card files and drawing diagrams [default: the number of cores, "
    "parsing in workers only for 1 MB of cards or more]; 1 parses in this process and draws in one worker.",
)
@IDENTITY_OPTION
@click.option(
    "--variant", metavar="KEY", help="Write only this variant's package (deck.yaml's `variants:`), not the full deck's."
)
@handles_errors
def build(
    project: Path, strict: bool, quiet: bool, force: bool, allow_identity_change: bool, jobs: int | None, variant: str | None
) -> None:
    """Validate the sources and write dist/<deck-slug>-<version>.apkg and each variant's package.

    Nothing is written unless every source is valid; the packages and the build record
    (deckbuild.lock, commit it) are replaced atomically, so a failed or interrupted
    build leaves the previous ones intact.  Same sources and record give the same bytes.
    A variant (deck.yaml's `variants:`) is written as dist/<deck-slug>-<key>-<its version>.apkg.
    """
    from deckbuild.commands import build as run_build

    result = run_build(
        project,
        force=force,
        strict=strict,
        allow_identity_change=allow_identity_change,
        jobs=jobs,
        progress=_progress(quiet),
        variant=variant,
    )
    if not quiet:
        warnings = [p for p in result.plan.problems if p.severity == "warning"]
        if warnings:  # as `check` reports them: a successful build must not hide them
            _report(warnings)
            click.echo(f"{len(warnings)} warning(s)", err=True)
        state = "wrote" if result.written else "up to date:"
        changed = "nothing changed" if result.plan.up_to_date else f"{result.changed_notes} notes changed"
        click.echo(
            f"{state} {_relative(result.path)}: {result.notes} notes, {result.cards} cards, {result.media} media files"
            f" ({changed} since the last build)"
        )
        for path, notes in result.variants if variant is None else ():
            click.echo(f"  variant {_relative(path)}: {notes} notes")


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
@IDENTITY_OPTION
@handles_errors
def check(project: Path, fmt: str, strict: bool, allow_identity_change: bool) -> None:
    """Check the sources without writing anything.

    Reports every problem at once, each with its file, line, column and a stable code
    (docs/errors.md lists the codes and how to fix each).  Exit status 1 if there is an error.
    """
    from deckbuild.commands import check as run_check

    problems = run_check(project, allow_identity_change=allow_identity_change)
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


@main.command()
@click.argument("directory", type=click.Path(path_type=Path))
@click.option("--name", help="The deck's name in Anki (default: from DIRECTORY's name).")
@handles_errors
def new(directory: Path, name: str | None) -> None:
    """Start a new deck project in DIRECTORY (which must be new or empty).

    Writes deck.yaml (the deck's name and a unique namespace: its identity in Anki),
    example cards (a question with an image, a formula cloze, a fact cloze), media/,
    .gitignore, a README with the next commands, requirements.txt pinning this deckbuild
    and its libraries, and a GitHub Actions workflow that attaches the built .apkg to each
    tagged release (docs/publishing.md).  Nothing is written if DIRECTORY is not empty.

    \b
      deckbuild new my-deck --name "My Deck"
      cd my-deck && deckbuild check && deckbuild build
    """
    from deckbuild.scaffold.new import deckbuild_requirement, new_project

    written = new_project(directory, name)
    click.echo(f"created {_relative(directory)}/ with {len(written)} files:")
    for path in written:
        click.echo(f"  {path.as_posix()}")
    _line, warning = deckbuild_requirement()
    if warning:
        click.echo("warning: requirements.txt: " + warning.replace("\n", " "), err=True)
    click.echo(f"next: cd {_relative(directory)} && deckbuild check && deckbuild build   (then import dist/*.apkg in Anki)")


@main.command()
@click.argument("source", type=click.Path(path_type=Path))
@click.argument("directory", type=click.Path(path_type=Path))
@click.option(
    "--ids-from",
    "ids_from",
    type=click.Path(path_type=Path),
    metavar="PACKAGE",
    help="An .apkg exported from a collection that has the deck (or that collection): its note-type, field and "
    "template ids are kept, so learners' notes update in place (needed for a CrowdAnki SOURCE).",
)
@handles_errors
def adopt(source: Path, directory: Path, ids_from: Path | None) -> None:
    """Turn an existing deck (SOURCE: an .apkg, or a CrowdAnki export folder) into a project in DIRECTORY.

    Its note types become declared note types (ids kept), its notes cards with their
    GUIDs kept, one card file per subdeck, with its tags and the media its fields use; the
    first build then updates nothing in the collection it came from (docs/adopt.md).
    DIRECTORY must be new or empty; nothing is written anywhere else, or at all on error.
    """
    from deckbuild.adopt.run import adopt as run_adopt

    result = run_adopt(source, directory, ids_from)
    _report(result.warnings)
    click.echo(
        f"adopted '{result.deck_name}' into {_relative(directory)}/: {result.notes} notes, {result.notetypes} note types,"
        f" {result.media} media files ({result.html_fields} fields kept as HTML)"
    )
    click.echo(f"next: cd {_relative(directory)} && deckbuild build")


@main.command("import")
@_project_option(search=False, required=False)
@click.argument("seed_files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@handles_errors
def import_(project: Path, seed_files: tuple[Path, ...]) -> None:
    """Import or re-import seed question banks (SEED_FILES) into cards/*.yaml.

    The format of each file is recognised from its content.  New questions become new
    cards; a question whose answer changed in the seed gets the new text; everything
    curated by hand (ids, topics, splits, links, diagrams) is kept.  A question that
    vanished from a seed is reported, never deleted.  On any error nothing is written.

    \b
      deckbuild import seeds/training-dynamics-43.txt seeds/deep-learning-120.txt
    """
    from deckbuild.commands import run_import

    status = run_import(
        project, list(seed_files), lambda line: click.echo(line, err=line.startswith(("error", "warning", "nothing")))
    )
    if status:
        sys.exit(status)


@main.command()
@PROJECT_OPTION
@click.option(
    "--bump",
    type=click.Choice(["major", "minor", "patch"]),
    help="Override the automatic choice (major: notes retired or a note type changed; minor: notes added; patch: edits only).",
)
@click.option(
    "--allow-schema-change",
    is_flag=True,
    help="Accept a change of a released note type's fields or templates (only with a major release; the changelog says so).",
)
@IDENTITY_OPTION
@click.option(
    "--variant",
    metavar="KEY",
    help="Release this variant instead: its own version, releases/KEY/<v>.jsonl, CHANGELOG-KEY.md and package.",
)
@handles_errors
def release(project: Path, bump: str | None, allow_schema_change: bool, allow_identity_change: bool, variant: str | None) -> None:
    """Record a release: next semantic version, snapshot, changelog entry, package.

    Compares the cards with the last release (releases/<version>.jsonl), picks the next
    version, writes releases/<new>.jsonl, updates deck.yaml's version and CHANGELOG.md,
    and builds dist/<deck>-<new>.apkg.  Cards removed from the sources keep shipping with
    the tag `retired` and a notice, so learners can find and suspend them.  The clock is
    read once here; rebuilding this release later gives the same bytes.  Commit the result.

    With --variant KEY the variant is released on its own: its version in deck.yaml's
    `variants:` entry, releases/KEY/<new>.jsonl, CHANGELOG-KEY.md and its package; the full
    deck's release, changelog and package stay as they are.
    """
    from deckbuild.commands import release as run_release

    result = run_release(
        project,
        bump=bump,
        allow_schema_change=allow_schema_change,
        allow_identity_change=allow_identity_change,
        progress=_progress(quiet=False),
        variant=variant,
    )
    _report(result.warnings)
    click.echo(f"released {f'variant {variant} ' if variant else ''}{result.version}: {result.changes.summary()}")
    click.echo(f"wrote {_relative(result.build.path)}: {result.build.notes} notes, {result.build.cards} cards")


@main.command()
@_project_option(required=False)
@click.argument("old")
@click.argument("new")
@handles_errors
def diff(project: Path, old: str, new: str) -> None:
    """Show what changed between two decks: OLD and NEW are .apkg files or released versions.

    \b
      deckbuild diff 1.0.0 1.1.0
      deckbuild diff dist/deck-1.0.0.apkg dist/deck-1.1.0.apkg

    Lists added, changed (with the fields that changed), retired and removed notes, note
    type changes and media changes.
    """
    from deckbuild.release.diff import diff as run_diff
    from deckbuild.release.diff import load

    click.echo(run_diff(load(old, project), load(new, project)), nl=False)


@main.command()
@PROJECT_OPTION
@click.option(
    "--out",
    "out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Folder to write the site to.  [default: <output>/preview, e.g. dist/preview]",
)
@click.option("-q", "--quiet", is_flag=True, help="Print nothing but errors.")
@click.option(
    "--check-fit",
    is_flag=True,
    help="Then open every card at 360 px, light and night, in headless Chromium; exit 1 (E190) naming each card and side "
    "that would need horizontal scrolling, hides a cloze gap off screen, or shrinks math below 75%.",
)
@handles_errors
def preview(project: Path, out: Path | None, quiet: bool, check_fit: bool) -> None:
    """Build the deck and write a static preview site of every card, front and back.

    Each card is rendered by the official Anki backend with the deck's own templates and
    CSS, math is typeset offline with MathJax 3 as Anki does, and images are included, so
    the site shows what a learner's Anki will show.  Open <out>/index.html in a browser:
    filter by difficulty, topic or text, page with the arrow keys, flip with space, and
    try the Night button (or add ?night=1) and a phone-width window.  Review an edit here
    before importing it.  The folder is replaced on every run; it works offline.
    """
    from deckbuild.preview.site import write_preview

    result = write_preview(project, out, _progress(quiet), check_fit=check_fit)
    if not quiet:
        click.echo(f"wrote {_relative(result.index)}: {result.cards} cards, {result.media} media files")
        if check_fit:
            click.echo(f"all {result.cards} cards fit a 360-px screen, light and night")


@main.command()
@PROJECT_OPTION
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to listen on; 0.0.0.0 serves your LAN (prints its URL and a QR code).",
)
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True, help="Port (the next free one if taken).")
@click.option("--open", "open_browser", is_flag=True, help="Open the preview in a browser.")
@handles_errors
def serve(project: Path, host: str, port: int, open_browser: bool) -> None:
    """Build, serve the preview, rebuild on every save and reload open pages (Ctrl-C stops).

    Watches deck.yaml, cards/, media/ and notetypes/.  An edit that does not build keeps the last good
    preview on screen with every problem over it.  With --host 0.0.0.0 a phone on the same
    network can open the preview and download the deck (.apkg) from its index.
    """
    from deckbuild.preview.serve import serve as run_serve

    gc.enable()  # serve rebuilds for as long as it runs: its cyclic garbage must be collected

    run_serve(project, host=host, port=port, open_browser=open_browser, echo=lambda line: click.echo(line, err=True))


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


@main.command()
@PROJECT_OPTION
@collection_options
@click.option(
    "--dry-run", is_flag=True, help="Report what a push would do; the collection and the project stay byte for byte as they are."
)
@VARIANT_OPTION
@handles_errors
def push(
    project: Path, collection: Path | None, profile: str | None, base: Path | None, fmt: str, dry_run: bool, variant: str | None
) -> None:
    """Build if needed, then update a collection Anki is not running on, keeping what is the learner's.

    Adds new notes, updates exactly the fields the sources changed, keeps review history,
    suspension, flags, the learner's own tags, edits and the 'My notes' field, and lists
    every field where the learner's edit gave way to the author's; backs the collection up
    first (Anki's own backup, in backups/ beside it), delivers every media file the notes
    name that the collection lacks, and applies the note changes in one transaction.  Cards
    of notes that now ship in another deck are moved there, history kept.  A damaged
    collection is refused (E604).  See docs/learners.md.
    """
    from deckbuild.collection.profiles import resolve
    from deckbuild.collection.report import push_text
    from deckbuild.commands import push as run_push

    report = run_push(resolve(collection, profile, base), project, dry_run=dry_run, variant=variant)
    click.echo(json.dumps(report.to_json(), indent=2) if fmt == "json" else push_text(report))


@main.command()
@PROJECT_OPTION
@collection_options
@VARIANT_OPTION
@handles_errors
def status(project: Path, collection: Path | None, profile: str | None, base: Path | None, fmt: str, variant: str | None) -> None:
    """Report which shipped notes the learner edited in Anki, which are missing, which retired ones are active.

    Read-only: the collection (or an exported .apkg of it) is never written, nor any file of
    the project.  Edited notes are listed by field with the shipped and the current text, to
    port back into cards/; media files the collection's media folder lacks are listed too.
    """
    from deckbuild.collection.profiles import resolve
    from deckbuild.collection.report import status_text
    from deckbuild.commands import status as run_status

    report = run_status(resolve(collection, profile, base), project, variant=variant)
    click.echo(json.dumps(report.to_json(), indent=2) if fmt == "json" else status_text(report))


def _progress(quiet: bool) -> Callable[[int, int, str], None]:
    """Progress lines for long work (drawing diagrams, rendering cards) on stderr, unless quiet."""

    def progress(done: int, total: int, what: str) -> None:
        if not quiet:
            click.echo(f"  [{done}/{total}] {what}", err=True)

    return progress


def _relative(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def run() -> None:
    """The `deckbuild` command: main() in a process tuned for what a build allocates.

    A build makes hundreds of thousands of long-lived objects (cards, locations, fields) and
    almost no cyclic garbage, so the cycle collector would walk all of them again and again
    for nothing: during plan()'s stages (which pause it), on the first allocations after them
    (a second at 100k cards), and in a last sweep at exit.  A command that runs once is
    therefore run without it.
    """
    gc.disable()  # a long-running command (serve) turns it back on
    try:
        main()
    finally:
        gc.freeze()  # the process ends here: no last sweep


if __name__ == "__main__":  # pragma: no cover
    run()
