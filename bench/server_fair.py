"""A 1-item request beside heavy clients, and connections held open, against `orchrm serve` (issue 25).

    PYTHONPATH=src python bench/server_fair.py                # trains a small MiniLM RM first
    PYTHONPATH=src python bench/server_fair.py --rm path/to/rm --probes 200

Starts `orchrm serve` in its own process (a real MiniLM RM, max_length 256) and measures:

- the latency of a 1-item `/score` request alone, then while `--heavy` clients (default 4) each send maximal
  valid requests back to back: `max_items` (256) items per request, each item as long as the 2 MB body limit
  allows (~7,600 characters, so every item fills the model's 256 tokens); p50 / p99 / max over `--probes`
  probes, one at a time, 50 ms apart (mark: p99 < 0.5 s);
- the heavy clients' items/s (every item of every heavy request, from the first sent until the last
  answered: each client finishes the request it is in when the probes end) and the 503s (queue full) they got;
- how long the server holds a connection that sends no headers, half its headers, or a body that never
  completes (mark: closed within the configured `--read-timeout`, with a 408).

Results go to bench/results/server_fair.json.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

from stamp import stamp  # bench/stamp.py: the commit and machine a result measured

sys.path.insert(0, str(Path(__file__).parent.parent / "tests" / "support"))

OUT = Path(__file__).parent / "results" / "server_fair.json"
MAX_ITEMS, MAX_BODY = 256, 2_000_000


def train_small_rm(folder: Path) -> Path:
    from orchrm.rm import RMConfig, train_reward_model
    from synthetic_pairs import make_rows

    result = train_reward_model(
        make_rows(16), make_rows(4, offset=100), RMConfig(epochs=1, batch_size=8), progress=False
    )
    return result.model.save(folder / "rm")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def heavy_body() -> bytes:
    plan = {
        "agents": [
            {"id": f"a{i}", "type": "cot", "input": "Work out the sum of the numbers step by step. " * 3}
            for i in range(40)
        ]
    }
    text = json.dumps(plan)
    per_item = (MAX_BODY - 100) // MAX_ITEMS
    budget = per_item
    while True:  # the plan text as long as the body limit allows once its quotes are escaped
        item = {"question": "What is 17 + 25?", "plan": (text * (budget // len(text) + 1))[:budget]}
        if len(json.dumps(item)) + 2 <= per_item:
            break
        budget -= 50
    body = json.dumps({"items": [item] * MAX_ITEMS}).encode()
    assert len(body) <= MAX_BODY, len(body)
    return body


PROBE = json.dumps(
    {"items": [{"question": "What is 2 + 3?", "plan": {"agents": [{"id": "a", "type": "cot", "input": "2 + 3"}]}}]}
).encode()
JSON = {"content-type": "application/json"}


def probe_latencies(url: str, n: int) -> list[float]:
    out = []
    with httpx.Client(timeout=60) as client:
        for _ in range(n):
            start = time.perf_counter()
            r = client.post(f"{url}/score", content=PROBE, headers=JSON)
            out.append(time.perf_counter() - start)
            assert r.status_code == 200, r.text
            time.sleep(0.05)
    return out


def heavy_clients(url: str, n: int, stop: threading.Event, tally: dict) -> list[threading.Thread]:
    body = heavy_body()

    def run() -> None:
        with httpx.Client(timeout=300) as client:
            while not stop.is_set():
                r = client.post(f"{url}/score", content=body, headers=JSON)
                key = "items_scored" if r.status_code == 200 else f"http_{r.status_code}"
                with tally["lock"]:
                    tally[key] = tally.get(key, 0) + (MAX_ITEMS if r.status_code == 200 else 1)
                if r.status_code == 503:
                    time.sleep(float(r.headers.get("retry-after", "1")))

    threads = [threading.Thread(target=run, daemon=True) for _ in range(n)]
    for t in threads:
        t.start()
    return threads


def summary(xs: list[float]) -> dict:
    xs = sorted(xs)
    return {
        "n": len(xs),
        "p50_s": round(statistics.median(xs), 4),
        "p99_s": round(xs[max(0, int(len(xs) * 0.99) - 1)], 4),
        "max_s": round(xs[-1], 4),
    }


def held_open(url: str, sent: bytes) -> dict:
    host, port = url.removeprefix("http://").split(":")
    start = time.perf_counter()
    with socket.create_connection((host, int(port)), timeout=60) as sock:
        sock.sendall(sent)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    return {"closed_after_s": round(time.perf_counter() - start, 3), "status": data[:12].decode("latin-1")}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rm", type=Path, help="An RM folder; default: train a small MiniLM RM first.")
    p.add_argument("--heavy", type=int, default=4)
    p.add_argument("--probes", type=int, default=200)
    p.add_argument("--read-timeout", type=float, default=2.0)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        rm = args.rm or train_small_rm(Path(tmp))
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).parent.parent / "src")}
        log_path = Path(tmp) / "server.log"
        with open(log_path, "w") as log_file:
            server = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "orchrm",
                    "serve",
                    "--rm",
                    str(rm),
                    "--port",
                    str(port),
                    "--read-timeout",
                    str(args.read_timeout),
                ],
                env=env,
                stdout=log_file,
                stderr=subprocess.STDOUT,
            )
            try:
                result = measure(url, args)
            finally:
                server.terminate()
                server.wait(30)
        log = log_path.read_text()
    result["server_log"] = {
        "lines": len(log.splitlines()),
        "tracebacks": log.count("Traceback"),
        "asgi_exceptions": log.count("Exception in ASGI application"),
    }
    result["marks"] = {
        "probe_p99_under_0.5s": result["with_heavy"]["p99_s"] < 0.5,
        "held_open_closed_in_time": all(
            h["closed_after_s"] < args.read_timeout + 1 and h["status"].endswith("408")
            for h in result["held_open"].values()
        ),
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({**result, "stamp": stamp()}, indent=2) + "\n")
    print(json.dumps(result, indent=2))


def measure(url: str, args: argparse.Namespace) -> dict:
    deadline = time.monotonic() + 120
    while True:
        try:
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            raise SystemExit("the server did not start")
        time.sleep(0.5)
    probe_latencies(url, 5)  # warm-up
    alone = summary(probe_latencies(url, min(args.probes, 50)))
    stop, tally = threading.Event(), {"lock": threading.Lock()}
    heavy_start = time.perf_counter()
    threads = heavy_clients(url, args.heavy, stop, tally)
    time.sleep(3)  # the queue fills
    loaded = summary(probe_latencies(url, args.probes))
    stop.set()  # each heavy client finishes the request it is in, then stops
    for t in threads:
        t.join(900)
    heavy_elapsed = time.perf_counter() - heavy_start
    tally.pop("lock")
    held = {
        "no headers": held_open(url, b""),
        "half the headers": held_open(url, b"POST /score HTTP/1.1\r\nHost: x\r\n"),
        "half a body": held_open(
            url,
            b"POST /score HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\n"
            b'content-length: 1000\r\n\r\n{"items": [',
        ),
    }
    return {
        "read_timeout_s": args.read_timeout,
        "heavy_clients": args.heavy,
        "heavy_request_items": MAX_ITEMS,
        "heavy_request_bytes": len(heavy_body()),
        "alone": alone,
        "with_heavy": loaded,
        "heavy_items_per_s": round(tally.get("items_scored", 0) / heavy_elapsed, 1),
        "heavy_seconds": round(heavy_elapsed, 1),
        "heavy_tally": tally,
        "held_open": held,
    }


if __name__ == "__main__":
    main()
