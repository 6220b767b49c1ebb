"""`RemoteScorer` under load: a busy server is waited out (Retry-After honoured, bounded), a dead one fails at the
deadline in one line, a connection closed mid-response is tried again."""

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from adapter_fakes import GOOD
from orchrm.adapters import RewardServerError
from orchrm.adapters._remote import MAX_RETRY_AFTER_S, Backoff, RemoteScorer, retry_after
from orchrm.rm.reward import RewardContract

VALID = RewardContract().check(GOOD)


class Script:
    """A server answering POSTs from a script: (status, body, headers) per request, the last one repeated;
    status None closes the connection without an answer."""

    def __init__(self, answers):
        self.answers, self.posts, self.times = list(answers), 0, []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers.get("content-length", 0)))
                status, body, headers = outer.answers[min(outer.posts, len(outer.answers) - 1)]
                outer.posts += 1
                outer.times.append(time.monotonic())
                if status is None:
                    self.wfile.write(b'HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\n{"scor')
                    self.close_connection = True
                    return
                self.send_response(status)
                for k, v in {"content-type": "application/json", **headers}.items():
                    self.send_header(k, v)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()


@pytest.fixture
def script():
    made = []

    def make(*answers):
        made.append(Script(answers))
        return made[-1]

    yield make
    for s in made:
        s.httpd.shutdown()


OK = (200, b'{"scores": [0.5], "errors": [null]}', {})


def test_a_busy_server_is_waited_out_as_it_asks(script):
    s = script((503, b"scoring queue full", {"Retry-After": "1"}), (503, b"full", {"Retry-After": "1"}), OK)
    assert RemoteScorer(s.url, deadline_s=30).score([("q", VALID)]) == [0.5]
    assert s.posts == 3 and s.times[1] - s.times[0] >= 0.95 and s.times[2] - s.times[1] >= 0.95


@pytest.mark.parametrize("status", [429, 502, 504, 500])
def test_every_not_now_answer_is_retried(script, status):
    s = script((status, b"later", {}), OK)
    assert RemoteScorer(s.url, deadline_s=10).score([("q", VALID)]) == [0.5] and s.posts == 2


def test_a_connection_closed_mid_response_is_retried(script):
    s = script((None, b"", {}), OK)
    assert RemoteScorer(s.url, deadline_s=10).score([("q", VALID)]) == [0.5] and s.posts == 2


def test_a_server_busy_forever_stops_at_the_deadline_in_one_line(script):
    s = script((503, b"scoring queue full", {"Retry-After": "0.2"}))
    start = time.monotonic()
    with pytest.raises(RewardServerError) as err:
        RemoteScorer(s.url, deadline_s=1.5).score([("q", VALID)])
    took = time.monotonic() - start
    assert 1.4 <= took < 6.0 and s.posts >= 3  # the deadline, plus one request's time on a loaded machine
    assert str(err.value).startswith(f"reward server {s.url} still unavailable after 1.5 s")
    assert "HTTP 503: scoring queue full" in str(err.value) and "\n" not in str(err.value)


def test_a_4xx_fails_at_once(script):
    s = script((401, b'{"detail": "missing or wrong bearer token"}', {}))
    with pytest.raises(RewardServerError, match="HTTP 401"):
        RemoteScorer(s.url, deadline_s=30).score([("q", VALID)])
    assert s.posts == 1


@pytest.mark.parametrize(
    ("header", "seconds"),
    [
        ("1", 1.0),
        (" 2.5 ", 2.5),
        ("0", 0.0),
        ("99999", MAX_RETRY_AFTER_S),
        ("-1", None),
        ("soon", None),
        ("1e9", None),
        ("Wed, 21 Oct 2015 07:28:00 GMT", None),
        ("", None),
        (None, None),
        ("1" * 50, None),
    ],
)
def test_retry_after_is_bounded(header, seconds):
    assert retry_after(header) == seconds


def test_the_backoff_grows_jittered_and_never_passes_the_deadline():
    b = Backoff(deadline_s=5.0)
    waits = [b.wait(None, "x") for _ in range(6)]
    assert all(0 < w <= 5.0 for w in waits) and waits[0] <= 0.375 and max(waits) >= 1.0
    assert Backoff(deadline_s=0).wait(5.0, "x") is None
    assert Backoff(deadline_s=0.5).wait(MAX_RETRY_AFTER_S, "x") <= 0.5


def test_a_plan_as_text_is_sent_as_written_like_reward_model_score_takes_it(script):
    # RewardModel.score takes a Plan or the orchestrator's raw text; a served RM takes the same.
    import json

    bodies = []
    server = script((200, b'{"scores": [0.5, 0.25], "errors": [null, null]}', {}))
    handler = server.httpd.RequestHandlerClass
    original = handler.do_POST

    def recording(self):
        length = int(self.headers.get("content-length", 0))
        raw = self.rfile.read(length)
        bodies.append(json.loads(raw))
        self.rfile = __import__("io").BytesIO(raw)
        self.headers.replace_header("content-length", str(len(raw)))
        original(self)

    handler.do_POST = recording
    assert RemoteScorer(server.url).score([("q", VALID), ("q", GOOD)]) == [0.5, 0.25]
    plans = [item["plan"] for item in bodies[0]["items"]]
    assert plans[0] == VALID.model_dump(mode="json") and plans[1] == GOOD
