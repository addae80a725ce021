"""`deckbuild serve` as a user meets it: a real process on a loopback port, real edits, a real browser."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

from conftest import write_tree
from previewsite import index_entries

DEADLINE = 60.0  # every wait is bounded; none asserts a duration


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _until(what: str, check: Callable[[], bool]) -> None:
    end = time.monotonic() + DEADLINE
    while time.monotonic() < end:
        if check():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def _get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()
    except OSError:
        return 0, b""


def _raw(port: int, path: str, method: str = "GET") -> tuple[int, bytes]:
    """A request with the path sent exactly as written (urllib would normalise it)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.putrequest(method, path, skip_accept_encoding=True)
        conn.endheaders()
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


@contextlib.contextmanager
def serving(project: Path, *options: str) -> Iterator[tuple[subprocess.Popen[str], str, int]]:
    port = _free_port()
    # Its own temp folder, so a test can see what the server left there (other tests run beside it).
    tmp = _server_tmp(project)
    tmp.mkdir(exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1]), "TMPDIR": str(tmp)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "deckbuild.cli", "serve", "-C", str(project), "--port", str(port), *options],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    base = f"http://127.0.0.1:{port}/"
    try:
        _until("the server", lambda: _get(base)[0] == 200 or proc.poll() is not None)
        assert proc.poll() is None, proc.communicate()[0]
        yield proc, base, port
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate()
        elif proc.stdout is not None:
            proc.stdout.close()


def _server_tmp(project: Path) -> Path:
    return project.parent / "server-tmp"


def _served_output(project: Path, *options: str) -> str:
    """Everything a serve process printed from its start until Ctrl-C stopped it."""
    with serving(project, *options) as (proc, _base, _port):
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=30)
    return out


def test_serving_beyond_loopback_warns_in_one_line_that_anyone_there_can_read_and_download(tmp_path: Path) -> None:
    project = write_tree(
        tmp_path / "deck",
        {
            "deck.yaml": "name: Open\nnamespace: open\nversion: 1.0.0\n",
            "cards/a.yaml": "- id: a\n  question: A?\n  answer: Yes.\n  difficulty: easy\n  topics: [foundations::text]\n",
        },
    )
    lan = _served_output(project, "--host", "0.0.0.0")
    warnings = [line for line in lan.splitlines() if line.startswith("warning:")]
    assert warnings == [
        "warning: the preview and the deck download (.apkg) are open to anyone on every network this computer is on, "
        "with no password; serve with --host 127.0.0.1 to keep them on this computer"
    ], lan
    for host in ("127.0.0.1", "localhost"):
        local = _served_output(project, "--host", host)
        assert "serving http://" in local and "warning:" not in local, local


def test_every_address_but_loopback_is_open() -> None:
    from deckbuild.preview.serve import is_loopback

    assert [h for h in ("127.0.0.1", "127.8.0.1", "::1", "[::1]", "localhost", "LOCALHOST") if not is_loopback(h)] == []
    assert [
        h for h in ("0.0.0.0", "::", "", "192.168.1.20", "10.0.0.1", "my-laptop", "::ffff:192.168.1.2") if is_loopback(h)
    ] == []


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def test_serves_rebuilds_on_edit_shows_problems_and_stops_on_sigint(sample: Path) -> None:
    cards = sample / "cards" / "basics.yaml"
    with serving(sample) as (proc, base, port):
        status, index = _get(base)
        assert status == 200 and b"deckbuild Sample" in index and b'<script src="index/0000.js">' in index
        assert b"cards/math-answer.html" in _get(base + "index/0000.js")[1]
        assert b"/__deckbuild/livereload.js" in index
        status, page = _get(base + "cards/math-answer.html")
        assert status == 200 and b"What does softmax compute?" in page
        # 1. an edit shows up in the served page
        _edit(cards, "What does softmax compute?", "What does the softmax function compute?")
        _until("the edit", lambda: b"the softmax function compute" in _get(base + "cards/math-answer.html")[1])
        # 2. a broken edit: the last good page stays, the problem is reported with file:line and code
        _edit(cards, "  difficulty: medium\n", "  difficulty: [medium\n")
        _until("the problem", lambda: b"basics.yaml:" in _get(base + "__deckbuild/events?since=-1")[1])
        events = _get(base + "__deckbuild/events?since=-1")[1].decode()
        assert "cards/basics.yaml:" in events and " E" in events
        status, page = _get(base + "cards/math-answer.html")
        assert status == 200 and b"the softmax function compute" in page
        _edit(cards, "  difficulty: [medium\n", "  difficulty: medium\n")
        _until("the fix", lambda: b'"problems": []' in _get(base + "__deckbuild/events?since=-1")[1])
        # 3. the package download is the bytes of dist/
        apkg = sorted((sample / "dist").glob("*.apkg"))[-1]
        assert f'href="/{apkg.name}"'.encode() in _get(base)[1]
        assert _get(base + apkg.name) == (200, apkg.read_bytes())
        assert _raw(port, "/" + apkg.name, "POST")[0] in (405, 501)
        proc.send_signal(signal.SIGINT)
        output = proc.communicate(timeout=30)[0]
    assert proc.returncode == 0, output
    assert "rebuilt in" in output and "build failed" in output
    assert not list(sample.rglob("*.tmp")) and not list(_server_tmp(sample).glob("deckbuild-preview-*"))


def _version(base: str) -> int:
    return int(json.loads(_get(base + "__deckbuild/events?since=-1")[1])["version"])


def test_a_full_redraw_says_how_far_it_is_and_a_save_says_one_line(sample: Path) -> None:
    """The first build and a deck.yaml edit redraw every page -- minutes on a large deck -- and
    count the cards rendered and the pages written as `preview` does; a save that updates a
    few pages prints only its `rebuilt in` line."""
    cards = sample / "cards" / "basics.yaml"
    with serving(sample) as (proc, base, _port):
        first = _version(base)
        _edit(cards, "What does softmax compute?", "What does the softmax function compute?")
        _until("the edit", lambda: _version(base) > first)
        _edit(sample / "deck.yaml", "exercises **every** feature", "exercises **each** feature")
        _until("the deck.yaml edit", lambda: _version(base) > first + 1)
        proc.send_signal(signal.SIGINT)
        output = proc.communicate(timeout=30)[0]
    assert proc.returncode == 0, output
    lines = output.splitlines()
    rebuilt = [i for i, line in enumerate(lines) if line.startswith("rebuilt in")]
    assert len(rebuilt) == 3, output
    assert "redrawn" in lines[rebuilt[0]] and "updated" in lines[rebuilt[1]] and "redrawn" in lines[rebuilt[2]], output
    total = len(list(sample.glob("dist/preview/cards/*.html")))
    for start, end in ((0, rebuilt[0]), (rebuilt[1] + 1, rebuilt[2])):  # each full redraw
        counted = [line for line in lines[start:end] if line.startswith("  [")]
        assert f"  [{total}/{total}] rendered cards with the Anki backend" in counted, output
        assert f"  [{total}/{total}] wrote card pages" in counted, output
    assert "  [1/1] rendering diagram grad-clipping" in lines[: rebuilt[0]], output  # drawn once, then cached
    assert not [line for line in lines[rebuilt[0] + 1 : rebuilt[1]] if line.startswith("  [")], output  # the save


def test_a_save_made_while_the_first_build_runs_is_served(sample: Path) -> None:
    """The watches go in before the first build: a save made before the server answers is not lost."""
    cards = sample / "cards" / "basics.yaml"
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    proc = subprocess.Popen(
        [sys.executable, "-m", "deckbuild.cli", "serve", "-C", str(sample), "--port", str(port)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert proc.stdout is not None
    base = f"http://127.0.0.1:{port}/"
    seen = []
    try:
        # The first build has read every card once it says how many it drew; the server is not up yet.
        for line in proc.stdout:
            seen.append(line)
            if "(first build)" in line:
                break
        assert any("(first build)" in line for line in seen), "".join(seen)
        _edit(cards, "What does softmax compute?", "What does the softmax function compute?")
        _until("the edit", lambda: b"the softmax function compute" in _get(base + "cards/math-answer.html")[1])
    finally:
        proc.send_signal(signal.SIGINT)
        output = "".join(seen) + proc.communicate(timeout=30)[0]
    assert proc.returncode == 0, output
    assert "rebuilt in" in output.split("(first build)", 1)[1], output


TRAVERSALS = [
    "/../deck.yaml",
    "/cards/../../deck.yaml",
    "/%2e%2e/deck.yaml",
    "/%2E%2E/%2E%2E/deck.yaml",
    "/%252e%252e/deck.yaml",
    "/..%2fdeck.yaml",
    "/..%5cdeck.yaml",
    "//etc/passwd",
    "/etc/passwd",
    "/%2fetc%2fpasswd",
    "/media/../../../deck.yaml",
    "/out-link/deck.yaml",
    "/cards/",
    "/media",
]


def test_refuses_every_path_outside_the_site(sample: Path) -> None:
    with serving(sample) as (_proc, _base, port):
        site = sample / "dist" / "preview"
        (site / "out-link").symlink_to(sample, target_is_directory=True)
        for path in TRAVERSALS:
            status, body = _raw(port, path)
            assert status in (403, 404), (path, status, body[:200])
            assert b"namespace" not in body and b"root:" not in body and b"<li" not in body, path
        assert _raw(port, "/index.html", "HEAD") == (200, b"")
        (site / "out-link").unlink()


def test_index_titles_never_cut_a_formula_and_the_offline_site_has_no_reload_script(tmp_path: Path) -> None:
    import html
    import re

    from deckbuild.preview.site import write_preview

    repo = Path(__file__).resolve().parents[1]
    out = tmp_path / "site"
    import shutil

    project = tmp_path / "deck"
    for name in ("deck.yaml", "cards", "media", "diagrams"):
        source = repo / name
        if source.is_dir():
            shutil.copytree(source, project / name)
        elif source.exists():
            project.mkdir(exist_ok=True)
            shutil.copyfile(source, project / name)
    write_preview(project, out)
    index = index_entries(out)
    titles = [html.unescape(t) for t in re.findall(r'<span class="pv-title">(.*?)</span>', index)]
    from golden import snapshot

    (apkg,) = (project / "dist").glob("*.apkg")
    assert len(titles) == len(snapshot(apkg)["cards"])  # one entry per card of the deck built here
    for title in titles:
        outside = re.sub(r"\\\(.*?\\\)|\\\[.*?\\\]", "", title)
        assert "\\(" not in outside and "\\[" not in outside and "\\)" not in outside and "\\]" not in outside, title
    for page in [out / "index.html", *sorted((out / "index").iterdir()), *sorted((out / "cards").iterdir())]:
        assert "__deckbuild" not in page.read_text(encoding="utf-8") and "livereload" not in page.read_text(encoding="utf-8")


def test_an_open_page_reloads_by_itself_after_an_edit(sample: Path) -> None:
    from browser import launch_browser

    cards = sample / "cards" / "basics.yaml"
    with serving(sample) as (_proc, base, _port), launch_browser() as browser:
        page = browser.new_page()
        page.goto(base + "cards/math-answer.html")
        page.wait_for_selector("#qa .db-question")
        assert "What does softmax compute?" in page.inner_text("#qa")
        page.evaluate("window.__notReloaded = true")
        _edit(cards, "What does softmax compute?", "What does the softmax layer compute?")
        page.wait_for_function("document.body.innerText.includes('the softmax layer compute')", timeout=int(DEADLINE * 1000))
        assert page.evaluate("window.__notReloaded === undefined")  # a fresh page: it reloaded itself
        # a broken edit shows its problems over the last good page, a fix clears them
        _edit(cards, "  difficulty: medium\n", "  difficulty: [medium\n")
        page.wait_for_selector("#db-serve-problems", timeout=int(DEADLINE * 1000))
        assert "cards/basics.yaml:" in page.inner_text("#db-serve-problems")
        assert "the softmax layer compute" in page.inner_text("#qa")
        _edit(cards, "  difficulty: [medium\n", "  difficulty: medium\n")
        page.wait_for_selector("#db-serve-problems", state="detached", timeout=int(DEADLINE * 1000))


def test_an_open_page_of_another_card_goes_to_the_card_just_saved(sample: Path) -> None:
    """The author keeps one card open and edits another: the open page follows the edit; a page
    of the edited card itself reloads in place."""
    from browser import launch_browser

    cards = sample / "cards" / "basics.yaml"
    with serving(sample) as (_proc, base, _port), launch_browser() as browser:
        page = browser.new_page()
        page.goto(base + "cards/math-answer.html")
        page.wait_for_selector("#qa .db-question")
        _edit(cards, "Which way does a batch-norm axis run?", "Which way does the batch-norm axis run?")
        page.wait_for_url("**/cards/figure-card.html", timeout=int(DEADLINE * 1000))
        page.wait_for_function("document.body.innerText.includes('the batch-norm axis run')", timeout=int(DEADLINE * 1000))
        page.evaluate("window.__notReloaded = true")
        _edit(cards, "Which way does the batch-norm axis run?", "Along which axis does batch norm run?")
        page.wait_for_function("document.body.innerText.includes('Along which axis')", timeout=int(DEADLINE * 1000))
        assert page.url.endswith("/cards/figure-card.html") and page.evaluate("window.__notReloaded === undefined")


def test_incremental_preview_rewrites_only_the_edited_cards_pages_and_matches_a_full_one(sample: Path, tmp_path: Path) -> None:
    from deckbuild.preview.site import write_preview

    def tree(root: Path) -> dict[str, bytes]:
        return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}

    out = sample / "dist" / "preview"
    first = write_preview(sample, out, incremental=True)
    assert "index.html" in first.written and "cards/escaping.html" in first.written
    again = write_preview(sample, out, incremental=True)
    assert again.written == ("index.html",) or again.written == ()
    before = tree(out)
    _edit(sample / "cards" / "basics.yaml", "What does softmax compute?", "What does softmax output?")
    edited = write_preview(sample, out, incremental=True)
    write_preview(sample, tmp_path / "full")
    after = tree(tmp_path / "full")
    assert tree(out) == after
    # exactly the pages that show the edited text (the card, the cards linking to it, the index)
    assert set(edited.written) == {name for name in after if before.get(name) != after[name]}
    assert "cards/math-answer.html" in edited.written and "cards/escaping.html" not in edited.written
    assert len(edited.written) < len(after) // 4
    (out / "cards" / "escaping.html").write_text("tampered", encoding="utf-8")
    assert "cards/escaping.html" in write_preview(sample, out, incremental=True).written
    assert tree(out) == tree(tmp_path / "full")


def test_a_saved_generator_is_redrawn_and_its_card_shows_the_new_picture(tmp_path: Path) -> None:
    """The deck `new` writes has a generator in diagrams/; saving it redraws the picture."""
    import re

    project = tmp_path / "deck"
    made = subprocess.run([sys.executable, "-m", "deckbuild.cli", "new", str(project)], capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    page = "cards/where-a-parabola-crosses-zero.html"
    picture = re.compile(rb"quadratic-[0-9a-f]{12}\.png")
    with serving(project) as (proc, base, _port):
        status, html = _get(base + page)
        assert status == 200, html
        (first,) = set(picture.findall(html))
        _edit(project / "diagrams" / "curves.py", "color=style.BLUE", "color=style.PURPLE")

        def redrawn() -> bool:
            found = set(picture.findall(_get(base + page)[1]))
            return bool(found) and found != {first}

        _until("the redrawn picture", redrawn)
        (second,) = set(picture.findall(_get(base + page)[1]))
        status, png = _get(base + "media/" + second.decode())
        assert status == 200 and png.startswith(b"\x89PNG")
        proc.send_signal(signal.SIGINT)
        output = proc.communicate(timeout=30)[0]
    assert "rebuilt in" in output and "diagrams/curves.py" in output, output
