"""The viewer's HTTP server: read-only, on 127.0.0.1, answering from the runs loaded at start.

What it serves is fixed: three static files shipped with the package (read once, by name, from this
package's `static/` folder) and four JSON endpoints over the loaded runs, addressed by run number, question id
and plan index — never by a path. Every answer carries a strict Content-Security-Policy (scripts and styles
from this origin only, nothing inline, no frames, no forms), `nosniff` and `no-store`. A request whose Host is
not this loopback address is refused, so a page elsewhere cannot reach the server through DNS rebinding. Trace
text only ever leaves as JSON; the page puts it into the DOM as text.
"""

from __future__ import annotations

import json
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any
from urllib.parse import parse_qs, urlsplit

from .. import safejson
from .runs import Run, run_index, run_questions, trace_detail

HOST = "127.0.0.1"
#: A `plan=` above this names no trace (runs sample tens of plans per question); a longer one is a 404.
MAX_PLAN_INDEX = 1_000_000

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)

STATIC = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/app.js": ("app.js", "text/javascript; charset=utf-8"),
    "/app.css": ("app.css", "text/css; charset=utf-8"),
}


def static_files() -> dict[str, tuple[bytes, str]]:
    root = resources.files(__package__) / "static"
    return {route: ((root / name).read_bytes(), ctype) for route, (name, ctype) in STATIC.items()}


class ViewServer(ThreadingHTTPServer):
    """Holds the runs and the static files; `url` is where the page is."""

    daemon_threads = True

    def __init__(self, runs: list[Run], port: int = 0) -> None:
        super().__init__((HOST, port), _Handler)
        self.runs = runs
        self.files = static_files()
        self.index = run_index(runs)
        self._questions: dict[int, bytes] = {}
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.server_address[1]}/"

    def allowed_hosts(self) -> set[str]:
        port = self.server_address[1]
        return {f"{HOST}:{port}", f"localhost:{port}"}

    def questions_json(self, run_id: int) -> bytes:
        with self._lock:
            if run_id not in self._questions:
                self._questions[run_id] = _dumps(run_questions(self.runs[run_id]))
            return self._questions[run_id]


def _dumps(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


class _Handler(BaseHTTPRequestHandler):
    server: ViewServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's signature
        pass

    def _send(self, status: int, body: bytes, ctype: str, *, head: bool = False) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Content-Security-Policy", CSP)
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("X-Frame-Options", "DENY")
        self.send_header("Cross-Origin-Resource-Policy", "same-origin")
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def _error(self, status: HTTPStatus, message: str, head: bool = False) -> None:
        self._send(status, _dumps({"error": message}), "application/json", head=head)

    def do_HEAD(self) -> None:
        self._route(head=True)

    def do_GET(self) -> None:
        self._route(head=False)

    def _refuse(self) -> None:
        self._error(HTTPStatus.METHOD_NOT_ALLOWED, "read-only")

    do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _refuse

    def _route(self, head: bool) -> None:
        if self.headers.get("Host") not in self.server.allowed_hosts():
            return self._error(HTTPStatus.MISDIRECTED_REQUEST, "unknown host", head)
        url = urlsplit(self.path)
        path, query = url.path, parse_qs(url.query)
        if path in self.server.files:
            body, ctype = self.server.files[path]
            return self._send(HTTPStatus.OK, body, ctype, head=head)
        if path == "/favicon.ico":  # no icon; answered so the browser logs no error
            return self._send(HTTPStatus.NO_CONTENT, b"", "image/x-icon", head=head)
        parts = path.strip("/").split("/")
        if parts == ["api", "runs"]:
            return self._send(HTTPStatus.OK, _dumps(self.server.index), "application/json", head=head)
        if len(parts) == 4 and parts[:2] == ["api", "runs"]:
            run_id = safejson.bounded_int(parts[2], high=len(self.server.runs) - 1)
            if run_id is None:
                return self._error(HTTPStatus.NOT_FOUND, "no such run", head)
            if parts[3] == "questions":
                return self._send(HTTPStatus.OK, self.server.questions_json(run_id), "application/json", head=head)
            if parts[3] == "trace":
                q, p = query.get("q", [""])[0], query.get("plan", [""])[0]
                plan = safejson.bounded_int(p, high=MAX_PLAN_INDEX)
                detail = trace_detail(self.server.runs[run_id], q, plan) if plan is not None else None
                if detail is None:
                    return self._error(HTTPStatus.NOT_FOUND, "no such trace", head)
                return self._send(HTTPStatus.OK, _dumps(detail), "application/json", head=head)
        return self._error(HTTPStatus.NOT_FOUND, "not found", head)


def serve(runs: list[Run], port: int = 0) -> ViewServer:
    """A server bound to 127.0.0.1 (port 0: any free port), not yet serving; call `serve_forever()`."""
    return ViewServer(runs, port)
