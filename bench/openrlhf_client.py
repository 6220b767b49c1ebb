"""OpenRLHF's own remote-reward client at its default rollout batch against one `orchrm serve` (issue 48, item 3).

    PYTHONPATH=src python bench/openrlhf_client.py                  # both RMs: MiniLM, then the 0.5B decoder
    PYTHONPATH=src python bench/openrlhf_client.py --rms minilm --samples 64

OpenRLHF 0.11.2's rollout pays each sample by one HTTP request (`SingleTurnAgentExecutor._fetch_rewards_via_http`:
a new session per request, a 180 s total timeout, 5 tries 1 s apart, Retry-After ignored); a sample whose tries
all fail keeps `reward=None` (an empty reward) and the step goes on. Its default rollout batch is 1,024 samples,
all in flight at once. Here the installed wheel's own executor (`execute`, from .venv-openrlhf, built by
`INSTALL_ONLY=1 ci/frameworks/run.sh`) runs 1,024 samples concurrently against one `orchrm serve` (the main
venv's CLI, default options) on `POST /openrlhf`; only vLLM's generation is stood in for (each response a valid
plan, every one different, so no score is reused). Prompts: `orchrm prompts --format openrlhf`'s 64 chain_sum
questions (the README's `orchrm prompts` line) under a byte-level chat template, 16 samples each.

Per RM: `samples`, `scored` (a reward in (0, 1), the sigmoid of the RM's score), `empty` (reward None: OpenRLHF
gave up), `penalised`, the wall time of the burst, OpenRLHF's logged request errors (each a retry), the 503s in
the server's log, and the scoring queue's peak depth seen by /health. RMs: MiniLM (`all-minilm-l6-v2`) and the
decoder (`qwen2.5-coder-0.5b`, LoRA + value head, from orchrm's model registry: never a hub), each trained for
one epoch on 8 synthetic pairs (what is timed is serving, not accuracy); folders under
~/.cache/orchrm/bench/openrlhf_client/. Result: bench/results/openrlhf_client.json, rewritten after each RM.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "support"))

OUT = ROOT / "bench" / "results" / "openrlhf_client.json"
FOLDERS = Path.home() / ".cache" / "orchrm" / "bench" / "openrlhf_client"
CLIENT_PYTHON = ROOT / ".venv-openrlhf" / "bin" / "python"
RMS = {"minilm": "all-minilm-l6-v2", "decoder": "qwen2.5-coder-0.5b"}


# ---- the client side: runs in .venv-openrlhf (OpenRLHF's wheel), prints one JSON line ----


class Engine:
    """vLLM's AsyncLLMEngine, stood in for: the i-th generate call for a prompt gets that prompt's next response."""

    def __init__(self, tokenizer, responses: dict[str, list[str]]) -> None:
        self.tokenizer, self.responses = tokenizer, responses

    async def generate(self, prompt_token_ids, sampling_params, multi_modal_data=None):
        prompt = self.tokenizer.decode(prompt_token_ids, skip_special_tokens=False)
        ids = self.tokenizer(self.responses[prompt].pop(), add_special_tokens=False)["input_ids"]
        ids.append(self.tokenizer.eos_token_id)
        return SimpleNamespace(outputs=[SimpleNamespace(token_ids=ids, finish_reason="stop", logprobs=None)])


def _samples(tokenizer, rows_file: str, n: int) -> tuple[list[tuple[str, str]], dict[str, list[str]]]:
    """(prompt, label) per sample, the file's questions' chat prompts in turn, and each prompt's distinct plans."""
    from synthetic_pairs import plan_json

    rows = [json.loads(line) for line in Path(rows_file).read_text().splitlines() if line.strip()]
    prompts = [
        (tokenizer.apply_chat_template(r["prompt"], tokenize=False, add_generation_prompt=True), r) for r in rows
    ]
    pairs, responses = [], {}
    for i in range(n):
        prompt, row = prompts[i % len(prompts)]
        pairs.append((prompt, row["question"]))
        responses.setdefault(prompt, []).append(plan_json("good", i))
    return pairs, responses


class _Count(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def client(url: str, rows_file: str, n: int) -> dict:
    """OpenRLHF's rollout reward step for `n` samples at once, as each vLLM rollout actor runs it."""
    from openrlhf.utils import agent

    from tiny_policy import tiny_tokenizer

    log = _Count()
    agent.logger.addHandler(log)
    tokenizer = tiny_tokenizer()
    pairs, responses = _samples(tokenizer, rows_file, n)
    executor = agent.SingleTurnAgentExecutor(url)
    params = SimpleNamespace(max_tokens=1024, logprobs=None)
    engine = Engine(tokenizer, responses)

    async def burst():
        return await asyncio.gather(
            *(executor.execute(prompt, label, params, 4096, tokenizer, engine) for prompt, label in pairs)
        )

    started = time.monotonic()
    outputs = asyncio.run(burst())
    wall = time.monotonic() - started
    rewards = [None if o["reward"] is None else o["reward"][0] for o in outputs]
    return {
        "samples": n,
        "scored": sum(r is not None and 0.0 < r < 1.0 for r in rewards),
        "empty": sum(r is None for r in rewards),
        "penalised": sum(r is not None and r <= -1.0 for r in rewards),
        "unscored_flagged": sum(o["extra_logs"].get("orchrm_unscored", [0.0])[0] == 1.0 for o in outputs),
        "wall_s": round(wall, 1),
        "openrlhf_request_errors": sum("error" in line.lower() for line in log.lines),
        "openrlhf_failed_fetches": sum("Failed to fetch reward" in line for line in log.lines),
        "first_error": next((line[:300] for line in log.lines if "error" in line.lower()), None),
    }


# ---- the driver: runs in the main venv ----


def rm_folder(name: str) -> tuple[Path, int]:
    """The RM trained once for one epoch on 8 synthetic pairs (reused when its folder exists), and its max_length."""
    from orchrm.rm import RewardModel, RMConfig, train_reward_model
    from synthetic_pairs import make_rows

    folder = FOLDERS / name
    if not folder.exists():
        config = RMConfig(backbone=RMS[name], epochs=1, batch_size=4)
        print(f"{name}: training on 8 synthetic pairs", flush=True)
        train_reward_model(make_rows(8), make_rows(4, offset=100), config, progress=False).model.save(folder)
    return folder, RewardModel.load(folder).card.max_length  # verified against its card


def _watch_queue(url: str, stop: threading.Event, peak: dict[str, int]) -> None:
    import httpx

    while not stop.wait(0.5):
        try:
            queue = httpx.get(f"{url}/health", timeout=5).json()["queue"]
        except (httpx.HTTPError, ValueError, KeyError):
            continue
        for key in ("requests", "items", "held"):
            peak[key] = max(peak.get(key, 0), queue.get(key, 0))


def run_one(name: str, samples: int) -> dict:
    import httpx

    from server_fair import free_port

    folder, max_length = rm_folder(name)
    rows = tempfile.NamedTemporaryFile(suffix=".jsonl", delete=False)
    rows.close()
    exe = Path(sys.executable).parent / "orchrm"
    # the README's line: train-orchestrator's chain_sum prompts as OpenRLHF rows
    subprocess.run(
        [str(exe), "prompts", "--task", "chain_sum", "--format", "openrlhf", "--out", rows.name],
        check=True,
        capture_output=True,
    )
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryFile("w+") as server_log:
        server = subprocess.Popen(
            [str(exe), "serve", "--rm", str(folder), "--port", str(port)], stdout=server_log, stderr=subprocess.STDOUT
        )
        try:
            deadline = time.monotonic() + 300
            while True:
                try:
                    if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                if server.poll() is not None or time.monotonic() > deadline:
                    sys.exit(f"orchrm serve did not come up for {name}")
                time.sleep(0.5)
            stop, peak = threading.Event(), {}
            watcher = threading.Thread(target=_watch_queue, args=(f"{url}", stop, peak), daemon=True)
            watcher.start()
            print(f"{name}: {samples} samples through OpenRLHF's client", flush=True)
            load = os.getloadavg()
            env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}:{ROOT / 'bench'}"}
            done = subprocess.run(
                [str(CLIENT_PYTHON), __file__, "--client", f"{url}/openrlhf", rows.name, "--samples", str(samples)],
                capture_output=True,
                text=True,
                env=env,
            )
            stop.set()
            if done.returncode != 0:
                sys.exit(f"client failed: {done.stderr[-3000:]}")
            result = json.loads(done.stdout.strip().splitlines()[-1])
        finally:
            server.terminate()
            server.wait(30)
            os.unlink(rows.name)
        server_log.seek(0)
        text = server_log.read()
    return {
        "rm": RMS[name],
        "rm_max_length": max_length,
        **result,
        "server_503s": text.count(" 503 "),
        "server_tracebacks": text.count("Traceback"),
        "queue_peak": peak,
        "load_average_at_start": [round(x, 2) for x in load],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rms", nargs="+", choices=list(RMS), default=list(RMS))
    parser.add_argument("--samples", type=int, default=1024, help="OpenRLHF's default rollout batch")
    parser.add_argument("--client", nargs=2, help=argparse.SUPPRESS)  # internal: URL ROWS, in .venv-openrlhf
    args = parser.parse_args()
    if args.client:
        print(json.dumps(client(*args.client, args.samples)))
        return
    if not CLIENT_PYTHON.exists():
        sys.exit("no .venv-openrlhf: run INSTALL_ONLY=1 ci/frameworks/run.sh openrlhf")
    from stamp import stamp

    before = json.loads(OUT.read_text()) if OUT.exists() else {}
    results = before.get("rms", {})
    for name in args.rms:
        results[RMS[name]] = run_one(name, args.samples)
        print(json.dumps(results[RMS[name]]), flush=True)
        out = {
            "what": "OpenRLHF 0.11.2's own remote-reward client (SingleTurnAgentExecutor), one request per sample, "
            "all samples at once, against one `orchrm serve` on POST /openrlhf",
            "openrlhf": _client_version(),
            "rms": results,
            "notes": before.get("notes"),  # written by hand after reading a run
            "stamp": stamp(),
        }
        OUT.parent.mkdir(parents=True, exist_ok=True)
        tmp = OUT.with_suffix(".tmp")
        tmp.write_text(json.dumps(out, indent=2) + "\n")
        tmp.replace(OUT)


def _client_version() -> str:
    code = "import importlib.metadata as m; print(m.version('openrlhf'))"
    return subprocess.run([str(CLIENT_PYTHON), "-c", code], capture_output=True, text=True).stdout.strip()


if __name__ == "__main__":
    main()
