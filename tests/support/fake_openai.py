"""A real HTTP server on 127.0.0.1 that speaks just enough of the OpenAI chat API to test clients.

Each request pops the next scripted behaviour; when the script is empty it answers `default_text`.
Runs in a thread inside the test process, or as a process (`python fake_openai.py --port N`), which is
how the fake llama-server uses it.
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """One scripted behaviour."""

    text: str = "hello from the fake server"
    status: int = 200
    body: bytes | None = None  # raw body, sent as-is (for malformed responses)
    delay_s: float = 0.0
    drop: bool = False  # close the connection without answering
    usage: dict[str, int] | None = field(default_factory=lambda: {"prompt_tokens": 11, "completion_tokens": 5})
    finish_reason: str = "stop"


class FakeOpenAI:
    """`owner` "llamacpp" makes it look like a llama-server (its /models owner, /props, /apply-template and
    /completion with `n_cmpl`). `n_mode` says how it treats a request for n completions: "ok", "ignore"
    (answers one), "fewer" (one less), "reversed" (out of order), "refuse" (HTTP 400)."""

    def __init__(
        self,
        default_text: str = "hello from the fake server",
        model: str = "fake-model",
        *,
        owner: str = "openai",
        n_mode: str = "ok",
        slots: int = 4,
    ) -> None:
        self.default_text = default_text
        self.model = model
        self.owner = owner
        self.n_mode = n_mode
        self.slots = slots
        self.script: deque[Reply] = deque()
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None

    def queue(self, *replies: Reply) -> None:
        with self._lock:
            self.script.extend(replies)

    def next_reply(self, request: dict[str, Any]) -> Reply:
        with self._lock:
            self.requests.append(request)
            return self.script.popleft() if self.script else Reply(text=self.default_text)

    def more_replies(self, k: int) -> list[Reply]:
        """The next k scripted replies of a request already recorded (a group's other completions)."""
        with self._lock:
            return [self.script.popleft() if self.script else Reply(text=self.default_text) for _ in range(k)]

    def start(self, port: int = 0) -> str:
        self._httpd = ThreadingHTTPServer(("127.0.0.1", port), _handler(self))
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()
        return self.url

    @property
    def url(self) -> str:
        assert self._httpd is not None
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None


def _handler(fake: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def _send(self, status: int, body: bytes, ctype: str = "application/json") -> None:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            if self.path == "/health":
                self._send(200, b'{"status":"ok"}')
            elif self.path == "/v1/models":
                models = [{"id": fake.model, "object": "model", "owned_by": fake.owner}]
                self._send(200, json.dumps({"object": "list", "data": models}).encode())
            elif self.path == "/props" and fake.owner == "llamacpp":
                self._send(200, json.dumps({"total_slots": fake.slots}).encode())
            else:
                self._send(404, b'{"error":{"message":"not found"}}')

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", 0))
            raw = self.rfile.read(length)
            if fake.owner == "llamacpp" and self.path in ("/apply-template", "/completion"):
                self._native(json.loads(raw))
                return
            if self.path != "/v1/chat/completions":
                self._send(404, b'{"error":{"message":"not found"}}')
                return
            request = json.loads(raw)
            request["_auth"] = self.headers.get("Authorization")
            n = int(request.get("n", 1))
            if n > 1:
                self._group_chat(request, n)
                return
            reply = fake.next_reply(request)
            if reply.delay_s:
                time.sleep(reply.delay_s)
            if reply.drop:
                self.close_connection = True
                self.connection.close()
                return
            if reply.body is not None:
                self._send(reply.status, reply.body)
                return
            if reply.status != 200:
                self._send(reply.status, json.dumps({"error": {"message": reply.text}}).encode())
                return
            payload: dict[str, Any] = {
                "id": "cmpl-1",
                "object": "chat.completion",
                "created": 0,
                "model": request.get("model", fake.model),
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": reply.text},
                        "finish_reason": reply.finish_reason,
                    }
                ],
            }
            if reply.usage is not None:
                payload["usage"] = {**reply.usage, "total_tokens": sum(reply.usage.values())}
            self._send(200, json.dumps(payload).encode())

        def _replies(self, request: dict[str, Any], n: int) -> list[tuple[int, Reply]] | None:
            """The scripted replies for n completions, by index, as `n_mode` deals them (None: refused)."""
            if fake.n_mode == "refuse":
                fake.next_reply(request)
                self._send(400, json.dumps({"error": {"message": "'n' is not supported"}}).encode())
                return None
            replies = list(enumerate([fake.next_reply(request), *fake.more_replies(n - 1)]))
            if fake.n_mode == "ignore":
                return replies[:1]
            if fake.n_mode == "fewer":
                return replies[:-1]
            if fake.n_mode == "reversed":
                return replies[::-1]
            return replies

        def _group_chat(self, request: dict[str, Any], n: int) -> None:
            dealt = self._replies(request, n)
            if dealt is None:
                return
            choices = [
                {"index": i, "message": {"role": "assistant", "content": r.text}, "finish_reason": r.finish_reason}
                for i, r in dealt
            ]
            usage = {"prompt_tokens": 11, "completion_tokens": sum(len(r.text.split()) for _, r in dealt)}
            self._send(
                200,
                json.dumps(
                    {
                        "id": "c",
                        "object": "chat.completion",
                        "created": 0,
                        "model": fake.model,
                        "choices": choices,
                        "usage": usage,
                    }
                ).encode(),
            )

        def _native(self, request: dict[str, Any]) -> None:
            if self.path == "/apply-template":
                text = "".join(f"<{m['role']}>{m['content']}" for m in request["messages"]) + "<assistant>"
                self._send(200, json.dumps({"prompt": text}).encode())
                return
            request["_native"] = True
            n = int(request.get("n_cmpl", 1))
            dealt = self._replies(request, n) if n > 1 else [(0, fake.next_reply(request))]
            if dealt is None:
                return
            prompt_tokens = len(request["prompt"])  # a token per character: the counts only need to be known
            items = [
                {
                    "index": i,
                    "content": r.text,
                    "tokens_predicted": len(r.text.split()),
                    "tokens_evaluated": prompt_tokens,
                    "stop_type": "limit" if r.finish_reason == "length" else "eos",
                    "timings": {"cache_n": 2 if i == 0 else 0, "prompt_n": prompt_tokens - 2},
                }
                for i, r in dealt
            ]
            self._send(200, json.dumps(items if len(items) > 1 else items[0]).encode())

    return Handler


if __name__ == "__main__":
    # Stand-in for llama-server: accepts its flags, serves on --port until killed.
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--alias", default="fake-model")
    args, _ = parser.parse_known_args()
    server = FakeOpenAI(model=args.alias, owner="llamacpp")
    server.start(args.port)
    print(f"fake llama-server listening on {server.url}", flush=True)
    threading.Event().wait()
