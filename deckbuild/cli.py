"""The command line: options in, one call, a domain error out as a message and exit code.

Commands import their heavy modules inside the function, so `deckbuild --help` and
no-op rebuilds stay fast.
"""

from __future__ import annotations

import contextlib
import gc
import json
import sys
from pathlib import Path
from typing import TypeVar

import click

from deckbuild import __version__
from deckbuild.cli_options import (
    IDENTITY_OPTION,
    PROJECT_HELP,
    PROJECT_OPTION,
    VARIANT_OPTION,
    collection_options,
    handles_errors,
    progress_lines,
    project_option,
    relative,
    report,
)

T = TypeVar("T")


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
    "parsing in workers only for 1 MB of cards or more]; 1 parses in this process and draws in one worker. "
    "With 2 or more, a rebuild of 15,000 cards or more is also checked by a forked copy of the build "
    "while the build goes on. The package is deflated by a thread per core (up to 4) either way.",
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

    result = kept_to_the_end(
        run_build(
            project,
            force=force,
            strict=strict,
            allow_identity_change=allow_identity_change,
            jobs=jobs,
            progress=progress_lines(quiet),
            variant=variant,
        )
    )
    if not quiet:
        warnings = [p for p in result.plan.problems if p.severity == "warning"]
        if warnings:  # as `check` reports them: a successful build must not hide them
            report(warnings)
            click.echo(f"{len(warnings)} warning(s)", err=True)
        # Built, but nothing to write (--force, or an edit that changes no output byte): said so,
        # not "up to date", which means the last build was taken as it is.
        state = "wrote" if result.written else "up to date:" if result.plan.up_to_date else "built, unchanged:"
        changed = result.changed_line
        click.echo(
            f"{state} {relative(result.path)}: {result.notes} notes, {result.cards} cards, {result.media} media files"
            f" ({changed} since the last build)"
        )
        for path, notes in result.variants if variant is None else ():
            click.echo(f"  variant {relative(path)}: {notes} notes")


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
    from deckbuild.commands import checked

    problems, silenced = checked(project, allow_identity_change=allow_identity_change)
    if fmt == "json":  # a silenced warning: severity "silenced" and the card's reason
        shown = [p.to_json() for p in problems]
        shown += [{**p.to_json(), "severity": "silenced", "reason": reason} for p, reason in silenced]
        click.echo(json.dumps(shown, indent=2))
    else:
        report(problems)
    errors = sum(1 for p in problems if p.severity == "error")
    warnings = len(problems) - errors
    if fmt == "text":
        quiet = f", {len(silenced)} silenced by 'lint:'" if silenced else ""
        click.echo(f"{errors} error(s), {warnings} warning(s){quiet}", err=True)
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
    click.echo(f"created {relative(directory)}/ with {len(written)} files:")
    for path in written:
        click.echo(f"  {path.as_posix()}")
    _line, warning = deckbuild_requirement()
    if warning:
        click.echo("warning: requirements.txt: " + warning.replace("\n", " "), err=True)
    click.echo(f"next: cd {relative(directory)} && deckbuild check && deckbuild build   (then import dist/*.apkg in Anki)")


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
    report(result.warnings)
    click.echo(
        f"adopted '{result.deck_name}' into {relative(directory)}/: {result.notes} notes, {result.notetypes} note types,"
        f" {result.media} media files ({result.html_fields} fields kept as HTML)"
    )
    click.echo(f"next: cd {relative(directory)} && deckbuild build")


@main.command("import")
@project_option(search=False, required=False)
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
        progress=progress_lines(quiet=False),
        variant=variant,
    )
    report(result.warnings)
    click.echo(f"released {f'variant {variant} ' if variant else ''}{result.version}: {result.changes.summary()}")
    click.echo(f"wrote {relative(result.build.path)}: {result.build.notes} notes, {result.build.cards} cards")


@main.command()
@project_option(required=False)
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
    from deckbuild.apply import settle
    from deckbuild.release.diff import diff as run_diff
    from deckbuild.release.diff import load

    if project is not None:
        settle(project, writing=False)  # releases/ may be half-written: refused, like check and status
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

    result = write_preview(project, out, progress_lines(quiet), check_fit=check_fit)
    if not quiet:
        click.echo(f"wrote {relative(result.index)}: {result.cards} cards, {result.media} media files")
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
    except SystemExit as exc:
        end_process(exc.code)  # returns only when the usual exit must run
        raise
    finally:
        gc.freeze()  # the process ends here: no last sweep


_KEPT: list[object] = []


def kept_to_the_end(result: T) -> T:
    """`result`, held until the process ends: run() then leaves a large deck's plan to the
    system instead of freeing it object by object (0.19 s of a 100,000-card rebuild)."""
    _KEPT[:] = [result]
    return result


def end_process(code: object) -> None:
    """End the process now, as mypy does after a run: exit handlers run and the output is
    flushed, but nothing is freed or torn down one object at a time (that is the last tenth
    of a large rebuild, and the system takes the memory back at once).  Returns, for the
    usual exit, when another thread is running (serve's) or the code is a message."""
    threading = sys.modules.get("threading")
    if not (code is None or isinstance(code, int)) or (threading is not None and threading.active_count() > 1):
        return
    import atexit
    import os

    atexit._run_exitfuncs()  # the diagram workers' server is stopped there (diagrams/pool.py)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code or 0)


if __name__ == "__main__":  # pragma: no cover
    run()
