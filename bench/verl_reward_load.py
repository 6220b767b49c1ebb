"""verl's own reward manager, 64 threads, 1,000 samples against one `orchrm serve` (issue 39).

    .venv-verl/bin/python bench/verl_reward_load.py            # trains a small MiniLM RM first
    .venv-verl/bin/python bench/verl_reward_load.py --samples 1000 --threads 64 --rm path/to/rm

Run in verl 0.9.1's venv (`ci/frameworks/run.sh verl` builds .venv-verl). The RM is trained and served by
orchrm's main venv (.venv/bin/python): `orchrm serve --rm RM --port PORT` in its own process, twice: with the
default scoring queue (512 requests, 2,048 items) and with `--queue-requests 32 --queue-items 1024` (the queue of
before, where a burst of 64 one-item requests is partly answered 503).

verl is driven as tests/frameworks/test_verl_framework.py drives it: its Hydra config composed from verl's packaged
`ppo_trainer.yaml` plus the README's verl override lines (`reward.custom_reward_function.path` = orchrm's
adapters/verl.py, `.name=compute_score`, `+reward.custom_reward_function.reward_kwargs.url=URL`) and validated as
`main_ppo` validates it; verl's `RewardLoopWorker` builds the registered `naive` manager with `load_reward_manager`,
and its `compute_score_batch` scores one `DataProto` of `--samples` rows (left-padded chat prompts, responses
that are valid plans from tests/support/synthetic_pairs.plan_json, the question in `extra_info["question"]`),
as a reward worker does each step. The worker runs in this process rather than as a Ray actor (so its executor
can be sized; the code that runs is the same, as in the test).

The thread pool: verl 0.9.1 has no setting for it. `NaiveRewardManager.run_single` calls both the tokenizer's
decode and `compute_score` with `loop.run_in_executor(None, ...)`, i.e. the default executor of the worker's
event loop, which asyncio sizes `min(32, os.cpu_count() + 4)` (6 on a 2-CPU machine), and
`compute_score_batch` starts every row's task at once. Here that same loop gets
`set_default_executor(ThreadPoolExecutor(64))` before the batch, so verl's own calls run on 64 threads.

Per run: samples scored (a reward in (0, 1), not flagged), penalised (-1.0 / `orchrm_invalid`), unscored
(`orchrm_unscored`), whether verl's batch raised (more than `max_unscored` = 0 unscored samples stop the step),
wall time of the batch, p50 / p99 / max latency of one `compute_score` call (timed around the function verl
holds, in its executor threads; queueing for a thread is not in it), the most calls in flight at once, whether each
reward matches the contract's value of the server's own `/score` for the same item, and the server log's 503 lines
and tracebacks. Mark: 0 penalised and 0 unscored in both runs. Before each run the 1-minute load average is
waited for (under 1.5, polled every 30 s, up to 10 min) and recorded. Results: bench/results/verl_reward_load.json.
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
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from reward_load import run_server as start_server
from stamp import stamp  # bench/stamp.py: the commit and machine a result measured

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests" / "support"), str(ROOT / "tests" / "frameworks")]

OUT = Path(__file__).parent / "results" / "verl_reward_load.json"
MAIN_PYTHON = ROOT / ".venv" / "bin" / "python"
QUEUES = {"default (512 requests, 2,048 items)": None, "before (32 requests, 1,024 items)": (32, 1024)}
LOAD_LIMIT, LOAD_POLL_S, LOAD_WAIT_S = 1.5, 30, 600


def wait_for_quiet(limit: float = LOAD_LIMIT) -> dict:
    """Wait (up to LOAD_WAIT_S) until the 1-minute load average is under `limit`; what it was when we went on."""
    start = time.monotonic()
    while (load := os.getloadavg()[0]) >= limit and time.monotonic() - start < LOAD_WAIT_S:
        print(f"load {load:.2f} >= {limit}: waiting", flush=True)
        time.sleep(LOAD_POLL_S)
    return {"load_1min": round(load, 2), "waited_s": round(time.monotonic() - start), "under_limit": load < limit}


def train_rm(folder: Path) -> Path:
    """A small MiniLM RM (bench/server_fair.train_small_rm), trained by orchrm's main venv, which serves it."""
    code = (
        f"import sys; sys.path[:0] = [{str(ROOT / 'bench')!r}, {str(ROOT / 'tests' / 'support')!r}]; "
        "from pathlib import Path; from server_fair import train_small_rm; "
        f"print(train_small_rm(Path({str(folder)!r})))"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    out = subprocess.run([str(MAIN_PYTHON), "-c", code], env=env, check=True, capture_output=True, text=True)
    return Path(out.stdout.strip().splitlines()[-1])


def run_server(rm: Path, queue: tuple[int, int] | None, log: Path) -> tuple[subprocess.Popen, str]:
    """`orchrm serve` from the main venv (this script runs in .venv-verl): reward_load's starter."""
    return start_server(rm, queue, log, python=str(MAIN_PYTHON))


def items(n: int) -> list[tuple[str, str]]:
    from synthetic_pairs import plan_json, question

    return [(question(i), plan_json("good" if i % 2 else "bad", i)) for i in range(n)]


def server_rewards(url: str, pairs: list[tuple[str, str]]) -> list[float | None]:
    """The contract's value of the server's own `/score` for each item (the reference verl's rewards must match)."""
    from orchrm.rm import RewardContract

    contract, out = RewardContract(), []
    with httpx.Client(timeout=300) as client:
        for i in range(0, len(pairs), 256):
            body = {"items": [{"question": q, "plan": json.loads(p)} for q, p in pairs[i : i + 256]]}
            r = client.post(f"{url}/score", json=body)
            r.raise_for_status()
            out += [None if s is None else contract.value(s) for s in r.json()["scores"]]
    return out


class Timed:
    """The `compute_score` verl holds, timed per call, with the number of calls in flight at once."""

    def __init__(self, fn):
        self.fn, self.lock, self.in_flight, self.most, self.latencies = fn, threading.Lock(), 0, 0, []

    def __call__(self, *args, **kwargs):
        with self.lock:
            self.in_flight += 1
            self.most = max(self.most, self.in_flight)
        t0 = time.perf_counter()
        try:
            return self.fn(*args, **kwargs)
        finally:
            elapsed = time.perf_counter() - t0
            with self.lock:
                self.in_flight -= 1
                self.latencies.append(elapsed)


def verl_run(url: str, policy: Path, pairs: list[tuple[str, str]], threads: int) -> dict:
    from test_verl_framework import batch, compose, readme_overrides
    from verl.experimental.reward_loop import RewardLoopWorker

    from orchrm.adapters import FAILURES

    common, choice = readme_overrides(policy, url)
    config = compose([*common, choice["url"]], policy)
    assert config.reward.reward_manager.name == "naive"
    assert dict(config.reward.custom_reward_function.reward_kwargs) == {"url": url}
    worker = RewardLoopWorker(config)  # verl's worker: load_reward_manager -> the registered naive manager
    manager = worker.reward_manager
    assert type(manager).__name__ == "NaiveRewardManager" and manager.loop is worker.loop
    executor = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="verl-reward")
    worker.loop.set_default_executor(executor)  # the pool run_single's run_in_executor(None, ...) uses
    timed = manager.compute_score = Timed(manager.compute_score)
    data = batch(worker.input_tokenizer, pairs)
    FAILURES.count = 0
    start = time.perf_counter()
    try:
        out, raised = worker.loop.run_until_complete(worker.compute_score_batch(data)), None
    except Exception as exc:  # noqa: BLE001 - recorded: the mark is that verl's step does not stop
        out, raised = [], f"{type(exc).__name__}: {exc}"[:300]
    wall = time.perf_counter() - start
    executor.shutdown(wait=True)
    infos = [o["reward_extra_info"] for o in out]
    rewards = [o["reward_score"] for o in out]
    unscored = sum(i["orchrm_unscored"] == 1.0 for i in infos)
    penalised = sum(i["orchrm_invalid"] == 1.0 or r == -1.0 for i, r in zip(infos, rewards))
    scored = sum(
        0.0 < r < 1.0 and i["orchrm_unscored"] == 0.0 and i["orchrm_invalid"] == 0.0 for i, r in zip(infos, rewards)
    )
    lat = sorted(timed.latencies)
    want = server_rewards(url, pairs)
    diffs = [abs(r - w) for r, w in zip(rewards, want) if w is not None]
    return {
        "samples": len(pairs),
        "results": len(out),
        "scored": scored,
        "penalised": penalised,
        "unscored": unscored,
        "verl_batch_raised": raised,
        "errors": sorted({i["orchrm_error"] for i in infos if i["orchrm_error"]})[:5],
        "wall_s": round(wall, 2),
        "samples_per_s": round(len(out) / wall, 1) if out else 0.0,
        "compute_score_calls": len(lat),
        "p50_s": round(statistics.median(lat), 3) if lat else None,
        "p99_s": round(lat[min(len(lat) - 1, int(0.99 * len(lat)))], 3) if lat else None,
        "max_s": round(lat[-1], 3) if lat else None,
        "most_calls_in_flight": timed.most,
        "match_server_score": bool(out) and len(diffs) == len(out) and max(diffs) < 1e-5,
        "max_abs_diff_vs_server": round(max(diffs), 8) if diffs else None,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rm", type=Path, help="An RM folder; default: train a small MiniLM RM first.")
    p.add_argument("--samples", type=int, default=1000)
    p.add_argument("--threads", type=int, default=64)
    p.add_argument("--max-load", type=float, default=LOAD_LIMIT, help="The 1-minute load to wait for before a run.")
    args = p.parse_args()
    import verl

    from tiny_policy import tiny_policy

    pairs = items(args.samples)
    out: dict = {
        "verl": verl.__version__,
        "samples": args.samples,
        "threads": args.threads,
        "verl_default_executor_threads": min(32, (os.cpu_count() or 1) + 4),
        "runs": {},
    }
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        rm = args.rm or train_rm(Path(tmp))
        out["rm_train_s"] = None if args.rm else round(time.perf_counter() - t0, 1)
        policy = tiny_policy(Path(tmp) / "policy")  # its byte-level tokenizer (chat template) is the policy's
        for name, queue in QUEUES.items():
            log = Path(tmp) / "server.log"
            server, url = run_server(rm, queue, log)
            try:
                httpx.post(
                    f"{url}/score",
                    json={"items": [{"question": pairs[0][0], "plan": json.loads(pairs[0][1])}]},
                    timeout=120,
                ).raise_for_status()  # warm-up
                before = wait_for_quiet(args.max_load)
                run = verl_run(url, policy, pairs, args.threads)
                run["load_before"], run["load_1min_after"] = before, round(os.getloadavg()[0], 2)
            finally:
                server.terminate()
                server.wait(30)
            text = log.read_text()
            run["server_log"] = {
                "lines": len(text.splitlines()),
                "503s": text.count(" 503 "),
                "tracebacks": text.count("Traceback"),
            }
            out["runs"][name] = run
            print(name, json.dumps(run, indent=1), flush=True)
    runs = out["runs"].values()
    out["mark_0_penalised_0_unscored"] = all(
        r["results"] == args.samples and r["penalised"] == 0 and r["unscored"] == 0 and not r["verl_batch_raised"]
        for r in runs
    )
    out["all_scored_and_match_server"] = all(r["scored"] == args.samples and r["match_server_score"] for r in runs)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({**out, "stamp": stamp()}, indent=2) + "\n")
    print("mark (0 penalised, 0 unscored, in both runs):", out["mark_0_penalised_0_unscored"])


if __name__ == "__main__":
    main()
