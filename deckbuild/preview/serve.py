"""`deckbuild serve`: build, serve the preview over HTTP, rebuild on every save, reload open pages.

Modelled on `mkdocs serve`: one watcher thread that rebuilds (so never two builds at once,
and a burst of saves debounced into one rebuild; each save's package is made in a thread
of its own, which the next save abandons and waits for before it plans), a threaded HTTP
server that only reads files of the site and the current package, and a long-poll
endpoint the injected live-reload script waits on.  The reload script and the error overlay are added to pages
as they are served; the files on disk are exactly what `deckbuild preview` writes.
"""

from __future__ import annotations

import gc
import http.server
import ipaddress
import json
import posixpath
import signal
import socket
import sys
import threading
import time
import urllib.parse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from deckbuild.errors import DeckbuildError
from deckbuild.layout import CARDS_DIR, CONFIG_FILE, DEFAULT_OUTPUT, DIAGRAMS_DIR, MEDIA_DIR, NOTETYPES_DIR
from deckbuild.preview.live_state import Echo, State, report_failure
from deckbuild.preview.packer import Packer, package_pages

if TYPE_CHECKING:
    from deckbuild.preview.resident import Resident

SERVE_PREFIX = "/__deckbuild/"
WATCHED_DIRS = (CARDS_DIR, MEDIA_DIR, NOTETYPES_DIR, DIAGRAMS_DIR)
"""notetypes/: declared note types, their templates and CSS; diagrams/: the generators (a saved one is redrawn)."""

LIVERELOAD_JS = """\
(function () {
  var version = window.dbServe.version, seq = -1;
  function overlay(problems) {
    var box = document.getElementById("db-serve-problems");
    if (!problems.length) { if (box) box.remove(); return; }
    if (!box) {
      box = document.createElement("div"); box.id = "db-serve-problems";
      box.setAttribute("role", "alert");
      box.style.cssText = "position:fixed;left:0;right:0;bottom:0;max-height:60%;overflow:auto;z-index:99999;" +
        "background:#fff0f0;color:#8a1010;border-top:3px solid #b3261e;padding:10px 14px;" +
        "font:13px/1.5 ui-monospace,monospace;white-space:pre-wrap;";
      document.body.appendChild(box);
    }
    box.textContent = "The last edit does not build (this is the last good preview):\\n" + problems.join("\\n");
  }
  function poll() {
    fetch("/__deckbuild/events?since=" + seq, {cache: "no-store"})
      .then(function (r) { return r.json(); })
      .then(function (s) {
        seq = s.seq;
        if (s.version !== version) {
          // A card page of another card goes to the card just saved; its own page (and the index) reloads.
          var path = location.pathname, here = path.indexOf("/cards/") === 0 && path.slice(-5) === ".html";
          var key = here ? decodeURIComponent(path.slice(7, -5)) : "";
          if (here && s.saved.length && s.saved.indexOf(key) < 0) {
            location.href = "/cards/" + encodeURIComponent(s.saved[0]) + ".html";
          } else { location.reload(); }
          return;
        }
        overlay(s.problems); poll();
      })
      .catch(function () { setTimeout(poll, 1000); });
  }
  poll();
})();
"""


def resolve_request(site: Path, raw_path: str) -> Path | None:
    """The file of `site` a request path names, or None (traversal, absolute, symlink out, missing)."""
    path = urllib.parse.urlsplit(raw_path).path
    decoded = urllib.parse.unquote(path)
    if "\\" in decoded or "\x00" in decoded or not decoded.startswith("/"):
        return None
    parts = [p for p in decoded.split("/") if p]
    if any(p in (".", "..") or ":" in p for p in parts):
        return None
    if posixpath.normpath(decoded) != decoded.rstrip("/") and decoded != "/":
        return None
    root = site.resolve()
    candidate = root.joinpath(*parts)
    if candidate.is_dir():
        candidate = candidate / "index.html"
    try:
        real = candidate.resolve(strict=True)
    except (OSError, RuntimeError):
        return None
    if not real.is_relative_to(root) or not real.is_file():
        return None
    return real


def _inject(page: bytes, state: State, is_index: bool) -> bytes:
    text = page.decode("utf-8")
    script = f'<script>window.dbServe = {{version: {state.version}}};</script><script src="{SERVE_PREFIX}livereload.js"></script>'
    if is_index and state.package is not None:
        name = state.package.name
        link = (
            f'<p class="pv-help pv-download"><a href="/{urllib.parse.quote(name)}" download="{name}">'
            f"Download the deck ({name}, {state.package.stat().st_size // 1024} KiB)</a> — open it on a phone to import it"
            " into AnkiDroid or AnkiMobile.</p>"
        )
        text = text.replace("</header>", link + "\n</header>", 1)
    text = text.replace("</body>", script + "\n</body>", 1) if "</body>" in text else text + script
    return text.encode("utf-8")


EMPTY_PAGE = b"""<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>deckbuild serve</title></head>
<body><p>No good build yet: fix the problems below and save.</p></body></html>"""


def make_handler(site: Path, state: State) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        """GET/HEAD only, files of the site and the current package only; no listings."""

        server_version = "deckbuild-serve"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_HEAD(self) -> None:
            self._answer(head=True)

        def do_GET(self) -> None:
            self._answer(head=False)

        def _send(self, code: int, body: bytes, ctype: str, head: bool, extra: dict[str, str] | None = None) -> None:
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.send_header("X-Content-Type-Options", "nosniff")
            for key, value in (extra or {}).items():
                self.send_header(key, value)
            self.end_headers()
            if not head:
                self.wfile.write(body)

        def _answer(self, head: bool) -> None:
            path = urllib.parse.urlsplit(self.path).path
            if path == SERVE_PREFIX + "livereload.js":
                return self._send(200, LIVERELOAD_JS.encode(), "text/javascript; charset=utf-8", head)
            if path == SERVE_PREFIX + "events":
                query = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
                try:
                    since = int(query.get("since", ["-1"])[0])
                except ValueError:
                    since = -1
                body = json.dumps(state.wait(since)).encode()
                return self._send(200, body, "application/json", head)
            package = state.package
            if package is not None and path == "/" + urllib.parse.quote(package.name):
                disposition = {"Content-Disposition": f'attachment; filename="{package.name}"'}
                return self._send(200, package.read_bytes(), "application/octet-stream", head, disposition)
            target = resolve_request(site, self.path)
            try:
                content = target.read_bytes() if target is not None else None
            except OSError:
                content = None
            if target is None or content is None:
                if path in ("/", "/index.html") and state.version == 0:
                    return self._send(200, _inject(EMPTY_PAGE, state, True), "text/html; charset=utf-8", head)
                return self._send(404, b"not found\n", "text/plain; charset=utf-8", head)
            ctype = _content_type(target)
            if ctype.startswith("text/html"):
                content = _inject(content, state, target == (site.resolve() / "index.html"))
            return self._send(200, content, ctype, head)

    return Handler


def _content_type(path: Path) -> str:
    types = {
        ".html": "text/html; charset=utf-8",
        ".css": "text/css; charset=utf-8",
        ".js": "text/javascript; charset=utf-8",
        ".png": "image/png",
        ".svg": "image/svg+xml",
        ".jpg": "image/jpeg",
        ".jpeg": "image/jpeg",
        ".gif": "image/gif",
        ".webp": "image/webp",
    }
    return types.get(path.suffix.lower(), "application/octet-stream")


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = False

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a browser hanging up mid-response is not worth a traceback


def _bind(host: str, port: int, state: State, site: Path) -> _Server:
    handler = make_handler(site, state)
    last: OSError | None = None
    for candidate in range(port, port + 20) if port else [0]:
        try:
            return _Server((host, candidate), handler)
        except OSError as exc:
            last = exc
    raise ServeError(f"cannot listen on {host} ports {port}-{port + 19}: {last}; choose another with --port")


class ServeError(DeckbuildError):
    """The server cannot start (no free port, bad host)."""


def is_loopback(host: str) -> bool:
    """Whether only this computer can reach `host` (127.0.0.0/8, ::1, localhost)."""
    if host.lower() in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name: it may well be reachable from the network


def open_warning(host: str) -> str:
    """The one line `serve` prints when it listens beyond this computer."""
    where = "every network this computer is on" if host in ("0.0.0.0", "::", "") else f"the network of {host}"
    return (
        f"warning: the preview and the deck download (.apkg) are open to anyone on {where}, with no password; "
        "serve with --host 127.0.0.1 to keep them on this computer"
    )


def lan_address() -> str:
    """This machine's address on the local network (no packet is sent: UDP connect only picks a route)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("10.255.255.255", 1))
            return str(probe.getsockname()[0])
        except OSError:
            return "127.0.0.1"


def _rebuild(site: Resident, state: State, echo: Echo, reason: str) -> bool:
    """One save's pages, published at once; False if the sources do not build (nothing changed)."""
    started = time.perf_counter()
    try:
        drawn = site.redraw_site()  # each file replaced atomically
    except Exception as exc:
        report_failure(state, echo, exc, f"build failed ({reason}); still serving the last good preview:")
        drawn = None
    if drawn is None:
        # The failed plan, cycles included (an exception a frame kept): the collector walks only
        # what came after the last good save (Resident.redraw_site freezes what a save keeps).
        gc.collect()
        return False
    state.publish(True, [], drawn.saved)
    pages = sum(1 for f in drawn.written if f.endswith(".html"))
    how = "redrawn" if drawn.full else "updated"
    echo(f"rebuilt in {time.perf_counter() - started:.2f} s ({reason}): {drawn.cards} cards, {pages} pages {how}")
    return True


def _watch(
    root: Path,
    site: Resident,
    state: State,
    stop: threading.Event,
    echo: Echo,
    debounce_ms: int,
    watching: threading.Event,
    built: threading.Event,
) -> None:
    """Rebuild on every batch of saves; `watching` is set once the watches are in place.

    The watches go in before the first build, and saves seen before `built` is set are kept
    for the first rebuild after it: a save made while the first build ran (or before the
    server answered) is never lost.
    """
    import watchfiles  # already imported by serve(), in the main thread

    root_abs = root.resolve()

    class SourceFilter(watchfiles.DefaultFilter):
        def __call__(self, change: watchfiles.Change, path: str) -> bool:
            try:
                rel = Path(path).resolve().relative_to(root_abs)
            except ValueError:
                return False
            ok = rel.as_posix() == CONFIG_FILE or (bool(rel.parts) and rel.parts[0] in WATCHED_DIRS)
            return ok and super().__call__(change, path)

    pending: set[str] = set()
    packer = Packer(site, state, echo)
    try:
        # A timeout yields an empty batch: the first one (or the first save) says the watches are in.
        for changes in watchfiles.watch(
            root_abs,
            watch_filter=SourceFilter(),
            debounce=debounce_ms,
            step=50,
            stop_event=stop,
            rust_timeout=100,
            yield_on_timeout=True,
        ):
            watching.set()
            pending |= {Path(p).resolve().relative_to(root_abs).as_posix() for _c, p in changes}
            if not pending or not built.is_set():
                continue
            names = sorted(pending)
            pending = set()
            packer.abandon()  # before the next plan reads the project and the cache
            _rebuild(site, state, echo, ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else ""))
            if site.pending is not None:  # the pages shown (this save's, or the last good ones) owe a package
                packer.start()
    finally:
        packer.finish()  # stopping: the last save's package is written before serve exits


def serve(root: Path, *, host: str, port: int, open_browser: bool, echo: Echo, debounce_ms: int = 200) -> None:
    """Build, serve on host:port, rebuild on every save, until Ctrl-C (returns normally then).

    The watches go in first, so a save made during the first build is rebuilt after it.
    Until the server runs, Ctrl-C (or SIGTERM) raises KeyboardInterrupt, so a long first
    build stops at once (the watcher thread only waits meanwhile).  From then on it only
    sets the stop event, which every thread polls: a KeyboardInterrupt raised in the main thread while another thread imports
    a module can be lost in importlib's lock callbacks and leave that import locked for good
    (seen: serve ignored Ctrl-C and never exited).  Every module the threads need is imported
    here, in the main thread, before they start.
    """
    import platform  # noqa: F401  (watchfiles imports it when its watches start, in the watcher thread)

    import watchfiles  # noqa: F401  (see above: never first imported by the watcher thread)

    from deckbuild.config import load_config
    from deckbuild.preview.resident import Resident

    if host in ("0.0.0.0", ""):
        import segno
    if open_browser:
        import webbrowser
    # Only deck.yaml is read here, for where the site goes; the first rebuild plans the project.
    config, _problems = load_config(root)
    out = root / (config.output if config is not None else DEFAULT_OUTPUT) / "preview"
    state = State()
    # A full redraw (the first build, a deck.yaml or note type edit) takes a while on a large
    # deck: its diagrams, cards rendered and pages written are counted as the preview counts them.
    site = Resident(root, out, progress=lambda done, total, what: echo(f"  [{done}/{total}] {what}"))
    stop = threading.Event()

    def interrupt(*_: object) -> None:
        raise KeyboardInterrupt

    def stop_serving(*_: object) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, interrupt) for sig in (signal.SIGINT, signal.SIGTERM)}
    server: _Server | None = None
    watcher: threading.Thread | None = None
    watching, built = threading.Event(), threading.Event()
    try:
        watcher = threading.Thread(
            target=_watch, args=(root, site, state, stop, echo, debounce_ms, watching, built), name="deckbuild-watch"
        )
        watcher.start()
        while watcher.is_alive() and not watching.wait(0.1):
            pass
        echo("building the deck and its preview ...")
        if _rebuild(site, state, echo, "first build"):
            package_pages(site, state, echo)
        built.set()
        server = _bind(host, port, state, out)
        if not is_loopback(host):  # said before the first request can be answered
            echo(open_warning(host))
        bound = server.server_address[1]
        for sig in previous:
            signal.signal(sig, stop_serving)
        threading.Thread(target=server.serve_forever, name="deckbuild-http", daemon=True).start()
        local = f"http://{'127.0.0.1' if host in ('0.0.0.0', '') else host}:{bound}/"
        echo(f"serving {local} (watching deck.yaml, cards/, media/, notetypes/, diagrams/; Ctrl-C stops)")
        if host in ("0.0.0.0", ""):
            lan = f"http://{lan_address()}:{bound}/"
            echo(f"on your network: {lan} (scan to open it on a phone):")
            segno.make(lan).terminal(out=sys.stdout, compact=True)
            sys.stdout.flush()
        if open_browser:
            webbrowser.open(local)
        while watcher.is_alive() and not stop.wait(0.5):
            pass
        if stop.is_set():
            echo("stopping ...")
    except KeyboardInterrupt:
        echo("stopping ...")
    finally:
        stop.set()
        with state.changed:
            state.stopping = True
            state.changed.notify_all()
        if server is not None:
            server.shutdown()
            server.server_close()
        if watcher is not None:
            watcher.join()
        site.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    echo("stopped")
