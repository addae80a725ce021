"""`deckbuild serve` as a user meets it: a real process on a loopback port, real edits, a real browser."""

from __future__ import annotations

import contextlib
import http.client
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

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
def serving(project: Path) -> Iterator[tuple[subprocess.Popen[str], str, int]]:
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    proc = subprocess.Popen(
        [sys.executable, "-m", "deckbuild.cli", "serve", "-C", str(project), "--port", str(port)],
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


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def test_serves_rebuilds_on_edit_shows_problems_and_stops_on_sigint(sample: Path) -> None:
    cards = sample / "cards" / "basics.yaml"
    with serving(sample) as (proc, base, port):
        status, index = _get(base)
        assert status == 200 and b"deckbuild Sample" in index and b"cards/math-answer.html" in index
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
    assert not list(sample.rglob("*.tmp")) and not list(Path(os.environ.get("TMPDIR", "/tmp")).glob("deckbuild-preview-*"))


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
