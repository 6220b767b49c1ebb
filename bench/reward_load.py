"""Reward under a training job's load (issue 39): 200 concurrent clients against one `orchrm serve`.

    PYTHONPATH=src python bench/reward_load.py                 # trains a small MiniLM RM first
    PYTHONPATH=src python bench/reward_load.py --clients 200 --rm path/to/rm

Starts `orchrm serve` (a real MiniLM RM) in its own process, twice: with the default scoring queue (512 requests,
2,048 items) and with the queue of before (32 requests, 1,024 items), where most of a 200-client burst is
answered 503 at first. Each time, `--clients` threads start at one barrier and each asks for one valid plan's
reward through one path: `RemoteScorer`, `TRLReward(url=)`, verl's `compute_score(url=)`, OpenRLHF's
`reward_func` (`ORCHRM_URL`), and OpenRLHF's protocol route `POST /openrlhf` (one sample a request, as its
workers send them; a 503 there is counted as an error, since OpenRLHF's own client retries it).

Per path: scored (a reward in (0, 1)), penalised (the invalid-plan penalty), unscored, errors (an exception), wall
time of the burst and p50 / p99 / max latency of one call. Mark: 200 of 200 scored, 0 penalised, 0 errors, for
every orchrm client under either queue and for the route under the default queue.
Results go to bench/results/reward_load.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from server_fair import free_port, train_small_rm
from stamp import stamp  # bench/stamp.py: the commit and machine a result measured

sys.path.insert(0, str(Path(__file__).parent.parent / "tests" / "support"))

OUT = Path(__file__).parent / "results" / "reward_load.json"
QUEUES = {"default (512 requests, 2,048 items)": None, "before (32 requests, 1,024 items)": (32, 1024)}


def _items(n: int) -> list[tuple[str, str]]:
    from synthetic_pairs import plan_json, question

    return [(question(i), plan_json("good" if i % 2 else "bad", i)) for i in range(n)]


def _paths(url: str) -> dict[str, Callable[[str, str], float | None]]:
    """One call per client, through each way a trainer asks for a reward; each returns the reward."""
    from orchrm.adapters import RemoteScorer, TRLReward
    from orchrm.adapters.openrlhf import reward_func
    from orchrm.adapters.verl import compute_score
    from orchrm.rm import RewardContract

    contract, remote, trl = RewardContract(), RemoteScorer(url), TRLReward(url=url)
    os.environ["ORCHRM_URL"] = url
    prompt = "<|im_start|>user\nplan it<|im_end|>\n<|im_start|>assistant\n"

    def remote_score(q: str, text: str) -> float | None:
        raw = remote.score([(q, contract.check(text))])[0]
        return contract.value(raw) if isinstance(raw, float) else None

    def route(q: str, text: str) -> float | None:
        body = {"query": [prompt + text + "<|im_end|>"], "prompts": [prompt], "labels": [q]}
        r = httpx.post(f"{url}/openrlhf", json=body, timeout=300)
        if r.status_code != 200:
            raise RuntimeError(f"HTTP {r.status_code}: {r.text[:100]}")
        return r.json()["rewards"][0] if not r.json()["extra_logs"]["orchrm_unscored"][0] else None

    return {
        "RemoteScorer": remote_score,
        "TRLReward(url=)": lambda q, t: trl(prompts=[prompt], completions=[t], question=[q])[0],
        "verl compute_score(url=)": lambda q, t: (lambda r: None if r["orchrm_unscored"] else r["score"])(
            compute_score("orchrm", t, None, {"question": q}, url=url)
        ),
        "OpenRLHF reward_func": lambda q, t: (
            lambda r: None if r["extra_logs"]["orchrm_unscored"][0] else r["rewards"][0]
        )(reward_func([prompt + t + "<|im_end|>"], [prompt], [q])),
        "OpenRLHF POST /openrlhf": route,
    }


def burst(call: Callable[[str, str], float | None], items: list[tuple[str, str]]) -> dict:
    from orchrm.adapters import FAILURES

    FAILURES.count = 0
    barrier = threading.Barrier(len(items))
    results: list[tuple[str, float]] = [("", 0.0)] * len(items)

    def one(i: int) -> None:
        barrier.wait()
        t0 = time.perf_counter()
        try:
            reward = call(*items[i])
            kind = "unscored" if reward is None else "penalised" if reward == -1.0 else "scored"
        except Exception:  # noqa: BLE001 - counted: the mark is 0
            kind = "errors"
        results[i] = (kind, time.perf_counter() - t0)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(items))]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - start
    lat = sorted(s for _, s in results)
    counts = {k: sum(r[0] == k for r in results) for k in ("scored", "penalised", "unscored", "errors")}
    return {
        **counts,
        "wall_s": round(wall, 2),
        "p50_s": round(statistics.median(lat), 3),
        "p99_s": round(lat[min(len(lat) - 1, int(0.99 * len(lat)))], 3),
        "max_s": round(lat[-1], 3),
    }


def run_server(
    rm: Path, queue: tuple[int, int] | None, log: Path, python: str = sys.executable
) -> tuple[subprocess.Popen, str]:
    """`orchrm serve` on `rm` with the given queue limits (None: the defaults) under `python`, once /health answers."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parent.parent / "src")}
    extra = ["--queue-requests", str(queue[0]), "--queue-items", str(queue[1])] if queue else []
    server = subprocess.Popen(
        [python, "-m", "orchrm", "serve", "--rm", str(rm), "--port", str(port), *extra],
        env=env,
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                return server, url
        except httpx.HTTPError:
            time.sleep(0.5)
    server.terminate()
    raise SystemExit(f"the server did not start: {log.read_text()[-2000:]}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rm", type=Path, help="An RM folder; default: train a small MiniLM RM first.")
    p.add_argument("--clients", type=int, default=200)
    args = p.parse_args()
    items = _items(args.clients)
    out: dict = {"clients": args.clients, "queues": {}, "load_1min_before": os.getloadavg()[0]}
    with tempfile.TemporaryDirectory() as tmp:
        rm = args.rm or train_small_rm(Path(tmp))
        for name, queue in QUEUES.items():
            log = Path(tmp) / "server.log"
            server, url = run_server(rm, queue, log)
            try:
                out["queues"][name] = {path: burst(call, items) for path, call in _paths(url).items()}
            finally:
                server.terminate()
                server.wait(30)
            text = log.read_text()
            out["queues"][name]["server_log"] = {"tracebacks": text.count("Traceback"), "503s": text.count(" 503 ")}
            print(name, json.dumps(out["queues"][name], indent=1), flush=True)
    # The mark: every orchrm client (RemoteScorer and each adapter in url= mode) under either queue, and the
    # OpenRLHF route under the default queue. The route under the old queue shows what a client that does not
    # wait out a 503 meets (OpenRLHF's own client retries a few times; this bench sends once).
    paths = [
        r
        for name, q in out["queues"].items()
        for k, r in q.items()
        if k != "server_log" and (k != "OpenRLHF POST /openrlhf" or name.startswith("default"))
    ]
    out["mark_all_scored"] = all(r["scored"] == args.clients and not r["errors"] and not r["penalised"] for r in paths)
    out["load_1min_after"] = os.getloadavg()[0]
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({**out, "stamp": stamp()}, indent=2) + "\n")
    print("mark (every orchrm client scored, both queues; the route, default queue):", out["mark_all_scored"])


if __name__ == "__main__":
    main()
