"""Items and a garbage-answering server for the reward adapters' tests."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from synthetic_pairs import plan_json, question

#: (question, plan text) items of every shape an orchestrator writes: plans, a direct answer, prose, junk.
ITEMS = [
    (question(1), plan_json("good", 1)),
    (question(1), plan_json("bad", 1)),
    (question(2), json.dumps({"answer": "8"})),
    (question(2), "I would first search, then answer: ```json\n" + plan_json("good", 2) + "\n```"),
    (question(3), "{ not a plan"),
]


class Garbage:
    """A server that answers every POST with whatever the test sets (status, body)."""

    def __init__(self):
        self.status, self.body, self.posts = 200, b"", 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers.get("content-length", 0)))
                outer.posts += 1
                self.send_response(outer.status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(outer.body)))
                self.end_headers()
                self.wfile.write(outer.body)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
