"""What slow, hasty or careless clients get from `orchrm serve`: 415, 408 within the timeouts, one log line for
a client that hangs up, and the same question/plan rules as `orchrm score`."""

import logging
import socket
import time

import httpx
import pytest
from fastapi.testclient import TestClient

from fake_rm import FakeRM
from live_server import live_server
from orchrm.adapters import openrlhf
from orchrm.cli.reward_model import read_score_requests
from orchrm.errors import ConfigError
from orchrm.rm._http import header_timeout_protocol
from orchrm.rm.server import create_app

TIMEOUT_S = 0.5


class Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture(scope="module")
def url():
    app = create_app(FakeRM(), max_body_bytes=200_000, body_timeout_s=TIMEOUT_S, routes=[openrlhf.router])
    with live_server(app, http=header_timeout_protocol(TIMEOUT_S)) as base:
        yield base


@pytest.fixture
def server_log():
    handler, logger = Lines(), logging.getLogger("uvicorn.error")
    logger.addHandler(handler)
    old = logger.level
    logger.setLevel(logging.INFO)
    yield handler.records
    logger.setLevel(old)
    logger.removeHandler(handler)


def _connect(url):
    host, port = url.removeprefix("http://").split(":")
    return socket.create_connection((host, int(port)), timeout=10)


def _read_all(sock):
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return data


@pytest.mark.parametrize(
    "path, body",
    [
        ("/score", '{"items": [{"question": "q", "plan": "p"}]}'),
        ("/openrlhf", '{"query": ["q p"], "prompts": ["q"], "labels": ["q"]}'),
    ],
)
@pytest.mark.parametrize("ctype", ["text/plain", "application/x-www-form-urlencoded", None])
def test_a_body_not_sent_as_json_is_415(url, path, body, ctype):
    headers = {"content-type": ctype} if ctype else {}
    r = httpx.post(url + path, content=body.encode(), headers=headers)
    assert r.status_code == 415, r.text
    assert (
        httpx.post(
            url + path, content=body.encode(), headers={"content-type": "application/json; charset=utf-8"}
        ).status_code
        == 200
    )


@pytest.mark.parametrize("sent", [b"", b"POST /score HTTP/1.1\r\nHost: x\r\n"], ids=["nothing", "half-headers"])
def test_headers_held_open_get_408_and_the_connection_closed(url, sent):
    with _connect(url) as sock:
        sock.sendall(sent)
        start = time.monotonic()
        answer = _read_all(sock)
    assert answer.startswith(b"HTTP/1.1 408") and time.monotonic() - start < TIMEOUT_S + 2


def test_a_body_held_open_gets_408_and_the_connection_closed(url):
    with _connect(url) as sock:
        sock.sendall(
            b"POST /score HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{"
        )
        start = time.monotonic()
        answer = _read_all(sock)
    assert answer.startswith(b"HTTP/1.1 408") and b"not received within" in answer
    assert time.monotonic() - start < TIMEOUT_S + 2


def test_a_kept_alive_connection_is_answered_then_timed_out(url):
    with _connect(url) as sock:
        body = b'{"items": [{"question": "q", "plan": "p"}]}'
        sock.sendall(
            b"POST /score HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s"
            % (len(body), body)
        )
        answer = _read_all(sock)
    assert answer.startswith(b"HTTP/1.1 200") and b"HTTP/1.1 408" in answer  # the idle keep-alive then closed


def test_a_client_that_hangs_up_mid_body_is_one_log_line(url, server_log):
    for _ in range(3):
        with _connect(url) as sock:
            sock.sendall(
                b'POST /score HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{"it'
            )
            time.sleep(0.05)
    deadline = time.monotonic() + 5
    while len([r for r in server_log if "disconnected" in r.getMessage()]) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    lines = [r.getMessage() for r in server_log]
    assert sum("client disconnected before its body was read" in line for line in lines) == 3
    assert not any(r.exc_info for r in server_log) and not any("Exception in ASGI" in line for line in lines)


# ---- one rule for what may be scored: the server and `orchrm score` agree --------------------------------

ROWS = [
    ('"q"', '"a plan as text"'),
    ('"q"', '{"agents": []}'),
    ('"q"', "5"),
    ('"q"', "null"),
    ('"q"', "true"),
    ('"q"', "[1]"),
    ('"q"', "1.5"),
    ('""', '"p"'),
    ("5", '"p"'),
    ("null", '"p"'),
    ('"q"', '""'),
]


@pytest.mark.parametrize("question, plan", ROWS)
def test_score_and_the_server_accept_and_refuse_the_same_items(tmp_path, question, plan):
    client = TestClient(create_app(FakeRM()), raise_server_exceptions=False)
    served = client.post(
        "/score",
        content='{"items": [{"question": %s, "plan": %s}]}' % (question, plan),
        headers={"content-type": "application/json"},
    ).status_code
    path = tmp_path / "in.jsonl"
    path.write_text('{"question": %s, "plans": [%s]}\n' % (question, plan))
    try:
        read_score_requests(path)
        read = 200
    except ConfigError:
        read = 422
    assert served == read
