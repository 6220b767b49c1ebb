"""Reward adapters vs `RewardModel.score`: on real orchestrator outputs, does every adapter give each
(question, plan) item exactly the RM's score, and what does each cost per item?

    python bench/adapters.py --runs bench/results/rm_run [--epochs 1]

Trains a MiniLM RM on the runs' pairs (the scores only need a real backbone, not a good one), serves it
with `orchrm serve`'s app (the OpenRLHF route included) on 127.0.0.1, then scores every trace's raw plan text
through each adapter, wrapped the way its framework delivers it: TRL conversational completions, verl
responses with the end token left in, OpenRLHF prompt+response queries, one sample per request. The mark is
the largest |adapter - RewardModel.score(question, [plan])| over all items. Writes bench/results/adapters.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import socket
import threading
import time
from pathlib import Path

import httpx

from orchrm import read_traces
from orchrm.adapters import AsyncTRLReward, TRLReward, openrlhf, verl
from orchrm.mas import locate_traces
from orchrm.pairs import PairConfig, build_pairs
from orchrm.rm import RMConfig, create_app, train_reward_model
from stamp import stamp  # bench/stamp.py: the commit and machine a result measured

RESULTS = Path(__file__).parent / "results" / "adapters.json"
PROMPT = "<|im_start|>system\nWrite a plan.<|im_end|>\n<|im_start|>user\n{q}<|im_end|>\n<|im_start|>assistant\n"


def _serve(rm) -> str:
    import uvicorn

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(create_app(rm, routes=[openrlhf.router]), host="127.0.0.1", port=port, log_level="warning")
    )
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.05)
    return f"http://127.0.0.1:{port}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=Path, nargs="+", required=True)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()

    traces = [t for run in args.runs for t in read_traces(locate_traces(run))]
    pairs = build_pairs(traces, PairConfig())
    rm = train_reward_model(pairs.train, pairs.val, RMConfig(epochs=args.epochs), progress=False).model
    items = [(t.question, t.plan_text) for t in traces]
    questions, plans = [q for q, _ in items], [p for _, p in items]
    t0 = time.perf_counter()
    expected = [rm.score(q, [p])[0] for q, p in items]
    timings = {"RewardModel.score, one item a call": time.perf_counter() - t0}
    url = _serve(rm)
    folder = Path(os.environ.get("TMPDIR", "/tmp")) / f"orchrm-bench-adapters-{os.getpid()}"
    rm.save(folder)

    chat = [[{"role": "assistant", "content": p}] for p in plans]
    ended = [p + "<|im_end|>" for p in plans]

    def trl(reward):
        out = reward(prompts=[[]] * len(items), completions=chat, question=questions)
        return asyncio.run(out) if asyncio.iscoroutine(out) else out

    def openrlhf_http():
        out = []
        with httpx.Client(timeout=60) as client:
            for q, p in items:
                prompt = PROMPT.format(q=q)
                body = {"query": [prompt + p + "<|im_end|>"], "prompts": [prompt], "labels": [q]}
                out += client.post(f"{url}/openrlhf", json=body).json()["rewards"]
        return out

    def openrlhf_file(**env):
        os.environ.update(env)
        try:
            prompts = [PROMPT.format(q=q) for q in questions]
            return openrlhf.reward_func([pr + p + "<|im_end|>" for pr, p in zip(prompts, plans)], prompts, questions)[
                "rewards"
            ]
        finally:
            for k in env:
                os.environ.pop(k)

    infos = [{"question": q} for q in questions]
    adapters = {
        "TRL sync, in process": lambda: trl(TRLReward(rm)),
        "TRL async, in process": lambda: trl(AsyncTRLReward(rm)),
        "TRL sync, server": lambda: trl(TRLReward(url=url)),
        "TRL async, server": lambda: trl(AsyncTRLReward(url=url)),
        "verl compute_score, server": lambda: [
            verl.compute_score("x", s, None, i, url=url)["score"] for s, i in zip(ended, infos)
        ],
        "verl compute_score_batch, in process": lambda: [
            r["score"]
            for r in verl.compute_score_batch(["x"] * len(items), ended, [None] * len(items), infos, rm=str(folder))
        ],
        "OpenRLHF POST /openrlhf, one sample a request": openrlhf_http,
        "OpenRLHF reward_func, in process": lambda: openrlhf_file(ORCHRM_RM=str(folder)),
        "OpenRLHF reward_func, server": lambda: openrlhf_file(ORCHRM_URL=url),
    }
    report_rows = {}
    for name, run in adapters.items():
        t0 = time.perf_counter()
        got = run()
        seconds = time.perf_counter() - t0
        diff = max(abs(a - b) for a, b in zip(got, expected, strict=True))
        report_rows[name] = {"max_abs_diff": diff, "ms_per_item": round(1000 * seconds / len(items), 2)}
        print(f"  {name:48s} max |diff| {diff:.2e}   {1000 * seconds / len(items):7.2f} ms/item")
    parsed = sum(t.plan is not None for t in traces)
    report = {
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "load_average": os.getloadavg()},
        "runs": [str(r) for r in args.runs],
        "items": len(items),
        "items_with_a_valid_plan": parsed,
        "questions": len(set(questions)),
        "rm": {"backbone": rm.card.backbone, "epochs": args.epochs, "score_range": [min(expected), max(expected)]},
        "reference_ms_per_item": round(1000 * timings["RewardModel.score, one item a call"] / len(items), 2),
        "adapters": report_rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({**report, "stamp": stamp()}, indent=2) + "\n")
    print(
        f"{len(items)} items ({parsed} valid plans), RM scores in "
        f"[{min(expected):.3f}, {max(expected):.3f}]; wrote {args.out}"
    )


if __name__ == "__main__":
    main()
