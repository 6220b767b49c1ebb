"""The viewer's server: loopback only, read-only, a strict CSP, and nothing but its own files and JSON."""

import http.client
import json
from urllib.parse import quote

import pytest

from orchrm.view import CSP
from view_runs import PAYLOAD


def request(viewer, path, method="GET", host=None):
    port = viewer.server.server_address[1]
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.putrequest(method, path, skip_host=True)
    conn.putheader("Host", host or f"127.0.0.1:{port}")
    conn.endheaders()
    res = conn.getresponse()
    body = res.read()
    conn.close()
    return res, body


def test_binds_loopback_only(viewer):
    assert viewer.server.server_address[0] == "127.0.0.1"
    assert viewer.url.startswith("http://127.0.0.1:")


@pytest.mark.parametrize("path", ["/", "/app.js", "/app.css", "/api/runs", "/api/runs/0/questions", "/nope"])
def test_every_answer_has_the_security_headers(viewer, path):
    res, _ = request(viewer, path)
    assert res.getheader("Content-Security-Policy") == CSP
    assert res.getheader("X-Content-Type-Options") == "nosniff"
    assert res.getheader("Cache-Control") == "no-store"


def test_csp_allows_no_inline_script_or_style():
    assert "'unsafe-inline'" not in CSP and "'unsafe-eval'" not in CSP
    assert "default-src 'none'" in CSP and "script-src 'self'" in CSP and "frame-ancestors 'none'" in CSP


def test_page_has_no_inline_script_and_js_no_html_sinks(viewer):
    _, html = request(viewer, "/")
    assert b'<script src="/app.js"' in html and html.count(b"<script") == 1 and b"style=" not in html
    _, js = request(viewer, "/app.js")
    for sink in (b"innerHTML =", b"innerHTML=", b"outerHTML", b"insertAdjacentHTML", b"document.write", b"eval("):
        assert sink not in js


def test_json_endpoints(viewer):
    res, body = request(viewer, "/api/runs")
    assert res.status == 200 and res.getheader("Content-Type") == "application/json"
    assert json.loads(body)[0]["kind"] == "bon"
    _, body = request(viewer, "/api/runs/0/questions")
    qid = json.loads(body)["questions"][0]["id"]
    res, body = request(viewer, f"/api/runs/0/trace?q={quote(qid)}&plan=0")
    assert res.status == 200 and json.loads(body)["trace"]["question"] == f"What is {PAYLOAD}?"


@pytest.mark.parametrize(
    "path",
    [
        "/../../../../etc/passwd",
        "/%2e%2e/%2e%2e/etc/passwd",
        "/static/app.js",
        "/index.html",
        "/view/static/app.js",
        "/api/runs/1/questions",
        "/api/runs/-1/questions",
        "/api/runs/%C2%B2/questions",
        "/api/runs/0/../../run.json",
        "/api/runs/0/trace?q=q1&plan=x",
        "/api/runs/0/trace?q=q1&plan=%C2%B2",
        "/api/runs/0/trace?q=../../etc/passwd&plan=0",
        "/api/runs/0/trace",
        "/api/runs/0/traces.jsonl",
        "/results.json",
        "/heldout/traces.jsonl",
        "/api/runs/" + "9" * 5000 + "/questions",
        "/api/runs/0/trace?q=q1&plan=" + "9" * 5000,
        "/api/runs/" + "0" * 5000 + "1/questions",
        "/api/runs/0/trace?q=q1&plan=99999999999",
    ],
)
def test_nothing_but_its_own_routes(viewer, path):
    res, body = request(viewer, path)
    assert res.status == 404 and json.loads(body) == {"error": json.loads(body)["error"]}


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH", "OPTIONS"])
def test_read_only(viewer, method):
    res, _ = request(viewer, "/api/runs", method=method)
    assert res.status == 405


@pytest.mark.parametrize("host", ["evil.example:80", "evil.example", "127.0.0.1", "127.0.0.1:1"])
def test_other_hosts_are_refused(viewer, host):
    # A page on another site that rebinds its name to 127.0.0.1 sends its own Host: refused.
    res, _ = request(viewer, "/api/runs", host=host)
    assert res.status == 421


def test_localhost_with_the_port_is_accepted(viewer):
    res, _ = request(viewer, "/api/runs", host=f"localhost:{viewer.server.server_address[1]}")
    assert res.status == 200


def test_head(viewer):
    res, body = request(viewer, "/api/runs", method="HEAD")
    assert res.status == 200 and body == b"" and int(res.getheader("Content-Length")) > 0
