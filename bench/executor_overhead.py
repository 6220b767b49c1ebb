"""What orchrm's own LLM stack costs per call, against a fast fake OpenAI-compatible server.

A minimal asyncio HTTP/1.1 server (its own process, keep-alive, a fixed chat completion after an optional
`--server-delay-ms`) answers N requests kept in flight C at a time, from five clients in the same run:

- `httpx`: a bare `httpx.AsyncClient` POST and `json.loads` (the floor);
- `openai_sdk`: the bare `openai.AsyncOpenAI` client orchrm is built on;
- `backend`: orchrm's `OpenAIBackend.complete` (request building, parsing into a `Completion`);
- `llm`: `LLM.agenerate` over that backend (cache key, semaphore, token ledger, schema check), no cache;
- `llm_cached`: the same with the SQLite response cache on (a miss and a write per call).

Per client: wall time, throughput (calls/s), the client process's CPU time per call (what the stack itself
costs: the server runs in another process, so this excludes the server's own time), and the mean latency
minus the server's delay. The stack's overhead over the bare SDK is the difference in CPU ms per call.

    PYTHONPATH=src python bench/executor_overhead.py [--concurrency 256 512] [--calls 4096]

Writes bench/results/executor_overhead.json (`--out` to change).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import os
import platform
import socket
import statistics
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from stamp import stamp  # bench/stamp.py: the commit and machine a result measured

RESULTS = Path(__file__).parent / "results" / "executor_overhead.json"
CLIENTS = ("httpx", "openai_sdk", "backend", "llm", "llm_cached")

_BODY = json.dumps(
    {
        "id": "cmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "fake-model",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "42"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 11, "completion_tokens": 5, "total_tokens": 16},
    }
).encode()
_MODELS = json.dumps({"object": "list", "data": [{"id": "fake-model", "object": "model"}]}).encode()


# ---------------------------------------------------------------- the fake server (its own process)


class _Http(asyncio.Protocol):
    """Just enough HTTP/1.1 for keep-alive clients: Content-Length bodies, one fixed answer per path."""

    def __init__(self, delay_s: float) -> None:
        self.delay_s = delay_s
        self.buf = b""
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.buf += data
        while True:
            head_end = self.buf.find(b"\r\n\r\n")
            if head_end < 0:
                return
            head = self.buf[:head_end].decode("latin-1")
            length = 0
            for line in head.split("\r\n")[1:]:
                name, _, value = line.partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value.strip())
            if len(self.buf) < head_end + 4 + length:
                return
            self.buf = self.buf[head_end + 4 + length :]
            path = head.split(" ", 2)[1]
            body = _MODELS if path.endswith("/models") else _BODY
            if self.delay_s and not path.endswith("/models"):
                asyncio.get_running_loop().call_later(self.delay_s, self._reply, body)
            else:
                self._reply(body)

    def _reply(self, body: bytes) -> None:
        if self.transport is None or self.transport.is_closing():
            return
        head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        self.transport.write(head.encode() + body)

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None


def _serve(sock: socket.socket, delay_s: float) -> None:
    async def main() -> None:
        server = await asyncio.get_running_loop().create_server(lambda: _Http(delay_s), sock=sock, backlog=4096)
        async with server:
            await server.serve_forever()

    asyncio.run(main())


def fake_server(delay_s: float) -> tuple[str, mp.Process]:
    """Start the fake server in a forked process; its URL (ending in /v1) and the process."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(4096)
    port = sock.getsockname()[1]
    proc = mp.get_context("fork").Process(target=_serve, args=(sock, delay_s), daemon=True)
    proc.start()
    sock.close()
    return f"http://127.0.0.1:{port}/v1", proc


# ---------------------------------------------------------------- the clients


async def _make_client(
    name: str, url: str, concurrency: int, cache_dir: Path
) -> tuple[Callable[[int], Awaitable[Any]], Callable[[], Awaitable[None]]]:
    """(call(i), close()) for one client kind."""
    messages = lambda i: [{"role": "user", "content": f"question {i}: what is 6 x 7?"}]  # noqa: E731
    if name == "httpx":
        import httpx

        limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
        client = httpx.AsyncClient(base_url=url, limits=limits, timeout=60.0)

        async def call(i: int) -> Any:
            r = await client.post(
                "/chat/completions", json={"model": "fake-model", "messages": messages(i), "max_tokens": 16}
            )
            return json.loads(r.content)["choices"][0]["message"]["content"]

        return call, client.aclose
    if name == "openai_sdk":
        import openai

        sdk = openai.AsyncOpenAI(base_url=url, api_key="none", timeout=60.0, max_retries=0)

        async def call(i: int) -> Any:
            r = await sdk.chat.completions.create(model="fake-model", messages=messages(i), max_tokens=16)
            return r.choices[0].message.content

        return call, sdk.close
    from orchrm.llm import LLM, GenerateConfig, Message, OpenAIBackend, ResponseCache

    backend = OpenAIBackend(url, "fake-model", api_key="none", timeout_s=60.0, max_retries=0, concurrency=concurrency)
    if name == "backend":
        cfg = GenerateConfig(max_tokens=16)

        async def call(i: int) -> Any:
            return (
                await backend.complete([Message(role="user", content=f"question {i}: what is 6 x 7?")], cfg, None)
            ).text

        return call, backend.aclose
    # A fresh file per run: every measured call is a miss and a write, never a hit from an earlier repeat.
    cache = ResponseCache(cache_dir / f"responses-{uuid.uuid4().hex}.db") if name == "llm_cached" else None
    llm = LLM(backend, cache=cache, config=GenerateConfig(max_tokens=16))

    async def call(i: int) -> Any:
        return (await llm.agenerate(f"question {i}: what is 6 x 7?", category="execute"))[0].text

    return call, llm.aclose


async def _run(name: str, url: str, concurrency: int, calls: int, delay_s: float, cache_dir: Path) -> dict[str, Any]:
    call, close = await _make_client(name, url, concurrency, cache_dir)
    # Warm up: open the connections, import lazily-imported code, learn nothing else.
    await asyncio.gather(*(call(-1 - i) for i in range(concurrency)))
    latencies: list[float] = []
    sem = asyncio.Semaphore(concurrency)

    async def one(i: int) -> None:
        async with sem:
            t = time.perf_counter()
            out = await call(i)
            latencies.append(time.perf_counter() - t)
            assert out == "42", out

    cpu, wall = time.process_time(), time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(calls)))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    await close()
    return {
        "calls": calls,
        "wall_s": round(wall, 3),
        "throughput_calls_s": round(calls / wall, 1),
        "client_cpu_ms_per_call": round(cpu / calls * 1000, 3),
        "mean_latency_ms": round(statistics.fmean(latencies) * 1000, 2),
        "mean_latency_minus_server_ms": round((statistics.fmean(latencies) - delay_s) * 1000, 2),
        "p50_latency_ms": round(statistics.median(latencies) * 1000, 2),
    }


def measure(concurrency: int, calls: int, delay_s: float, repeats: int, clients: tuple[str, ...]) -> dict[str, Any]:
    url, proc = fake_server(delay_s)
    try:
        out: dict[str, Any] = {}
        with tempfile.TemporaryDirectory() as tmp:
            for name in clients:
                runs = [asyncio.run(_run(name, url, concurrency, calls, delay_s, Path(tmp))) for _ in range(repeats)]
                # The best of the repeats: the machine is shared, so the slowest run measures the neighbours.
                best = min(runs, key=lambda r: r["client_cpu_ms_per_call"])
                best["cpu_ms_per_call_all_repeats"] = [r["client_cpu_ms_per_call"] for r in runs]
                out[name] = best
                print(
                    f"  c={concurrency} {name:11s} {best['client_cpu_ms_per_call']:.3f} ms CPU/call  "
                    f"{best['throughput_calls_s']:8.1f} calls/s  "
                    f"latency-server {best['mean_latency_minus_server_ms']:.1f} ms",
                    flush=True,
                )
        sdk = out.get("openai_sdk", {}).get("client_cpu_ms_per_call")
        if sdk is not None:
            out["orchrm_overhead_over_sdk_ms_per_call"] = {
                k: round(out[k]["client_cpu_ms_per_call"] - sdk, 3)
                for k in ("backend", "llm", "llm_cached")
                if k in out
            }
        return out
    finally:
        proc.terminate()
        proc.join()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--concurrency", type=int, nargs="+", default=[256, 512])
    p.add_argument("--calls", type=int, default=4096)
    p.add_argument("--server-delay-ms", type=float, default=20.0)
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--clients", nargs="+", default=list(CLIENTS), choices=CLIENTS)
    p.add_argument("--label", default=None, help="Key under which this run is stored (e.g. before/after).")
    p.add_argument("--out", type=Path, default=RESULTS)
    args = p.parse_args()
    load = os.getloadavg()
    rows = {
        str(c): measure(c, args.calls, args.server_delay_ms / 1000, args.repeats, tuple(args.clients))
        for c in args.concurrency
    }
    run = {
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
            "shared": "2 CPU cores shared with other jobs; timings are the best of the repeats",
            "load_average_at_start": [round(x, 2) for x in load],
        },
        "calls": args.calls,
        "server_delay_ms": args.server_delay_ms,
        "repeats": args.repeats,
        "by_concurrency": rows,
    }
    existing = json.loads(args.out.read_text()) if args.out.exists() else {}
    existing[args.label or "latest"] = run
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({**existing, "stamp": stamp()}, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
