"""How busy llama-server is kept during a benchmark, and what its compute goes to: a companion to
`orchestration.py`'s decode mark, which counts only decoded tokens.

    python bench/server_busy.py poll --out busy.jsonl &        # beside a running bench; stop it with kill
    python bench/server_busy.py summarize --poll busy.jsonl --logs ~/.cache/orchrm/logs --since 00:12 \
        --out bench/results/orchestration/server_busy.json

`poll` asks every running llama-server (found by its `--port`) for `/slots` twice a second and writes one line
per sample: how many of its slots are processing. `summarize` reads those samples and the servers' own logs
(orchrm writes them under `<cache>/logs/`, one per server start): per server, the share of slots busy while it
served the benchmark (from its first busy sample after the start-up reference to its last), and the tokens
its slots spent on prompts against decoding, from llama-server's per-request timing lines.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import time
import urllib.request
from collections import defaultdict
from pathlib import Path

import clock
from stamp import stamp  # bench/stamp.py: the commit and machine a result measured

PORT = re.compile(r"--port (\d+)")
PROMPT = re.compile(r"prompt eval time =\s+([\d.]+) ms /\s+(\d+) tokens")
DECODE = re.compile(r"\|\s+eval time =\s+([\d.]+) ms /\s+(\d+) tokens")
PORT_IN_LOG = re.compile(r"listening on http://127\.0\.0\.1:(\d+)")


def poll(out: Path, every_s: float) -> None:
    with out.open("a") as f:
        while True:
            ps = subprocess.run(["pgrep", "-af", "llama-server"], capture_output=True, text=True).stdout
            row: dict = {"t": round(time.time(), 2), "servers": []}
            for port in PORT.findall(ps):
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/slots", timeout=2) as r:
                        slots = json.load(r)
                    busy = sum(bool(s.get("is_processing")) for s in slots)
                    row["servers"].append({"port": port, "busy": busy, "slots": len(slots)})
                except (OSError, ValueError) as e:  # starting, stopping, or a server without /slots
                    row["servers"].append({"port": port, "error": type(e).__name__})
            f.write(json.dumps(row) + "\n")
            f.flush()
            time.sleep(every_s)


def occupancy(samples: list[tuple[float, int, int]], skip_s: float) -> dict | None:
    """Slots busy from the first busy sample after `skip_s` (the start-up reference decode) to the last."""
    start = samples[0][0] + skip_s
    rest = [s for s in samples if s[0] >= start]
    busy_at = [i for i, s in enumerate(rest) if s[1] > 0]
    if not busy_at:
        return None
    span = rest[busy_at[0] : busy_at[-1] + 1]
    slots = span[0][2]
    counts = [b for _, b, _ in span]
    return {
        "seconds": round(span[-1][0] - span[0][0], 1),
        "samples": len(span),
        "slots": slots,
        "mean_busy_slots": round(statistics.fmean(counts), 2),
        "share_all_busy": round(sum(c == slots for c in counts) / len(counts), 3),
        "share_idle": round(sum(c == 0 for c in counts) / len(counts), 3),
    }


def log_split(path: Path) -> dict:
    """Prompt tokens processed (the cached part of a prompt costs nothing and is not in these lines) and
    tokens decoded, with the slot-seconds each took, summed over the requests of one server's log."""
    p_ms = p_n = d_ms = d_n = requests = 0.0
    port = None
    for line in path.read_text(errors="replace").splitlines():
        if m := PROMPT.search(line):
            p_ms, p_n, requests = p_ms + float(m[1]), p_n + int(m[2]), requests + 1
        elif m := DECODE.search(line):
            d_ms, d_n = d_ms + float(m[1]), d_n + int(m[2])
        elif port is None and (m := PORT_IN_LOG.search(line)):
            port = m[1]
    return {
        "log": path.name,
        "port": port,
        "requests": int(requests),
        "prompt_tokens_processed": int(p_n),
        "prompt_slot_s": round(p_ms / 1000, 1),
        "decoded_tokens": int(d_n),
        "decode_slot_s": round(d_ms / 1000, 1),
        "decode_tok_per_slot_s": round(d_n / (d_ms / 1000), 2) if d_ms else None,
    }


def summarize(poll_file: Path, logs: Path, since: float, skip_s: float) -> dict:
    by_port: dict[str, list[tuple[float, int, int]]] = defaultdict(list)
    for line in poll_file.read_text().splitlines():
        row = json.loads(line)
        for s in row["servers"]:
            if "busy" in s and row["t"] >= since:
                by_port[s["port"]].append((row["t"], s["busy"], s["slots"]))
    splits = {
        s["port"]: s
        for s in (log_split(p) for p in sorted(logs.glob("llama-server-*.log")) if p.stat().st_mtime >= since)
    }
    servers = []
    for port, samples in sorted(by_port.items(), key=lambda kv: kv[1][0][0]):
        occ = occupancy(samples, skip_s)
        if occ is not None:
            servers.append(
                {
                    "port": port,
                    "started": time.strftime("%H:%M:%S", time.localtime(samples[0][0])),
                    "occupancy": occ,
                    "tokens": splits.get(port),
                }
            )
    return {"poll_file": str(poll_file), "skip_s": skip_s, "servers": servers}


def since_of(hhmm: str | None) -> float:
    if hhmm is None:
        return 0.0
    return clock.at(hhmm, ahead=False)  # a time already past: where the logs start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("poll")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--every", type=float, default=0.5)
    s = sub.add_parser("summarize")
    s.add_argument("--poll", type=Path, required=True)
    s.add_argument("--logs", type=Path, required=True, help="orchrm's llama-server logs (<cache>/logs)")
    s.add_argument("--since", default=None, help="local HH:MM today: samples and logs from then on")
    s.add_argument("--skip", type=float, default=20.0, help="seconds after a server's first sample to leave out")
    s.add_argument("--out", type=Path)
    args = ap.parse_args()
    if args.cmd == "poll":
        poll(args.out, args.every)
        return
    report = summarize(args.poll, args.logs, since_of(args.since), args.skip)
    text = json.dumps({**report, "stamp": stamp()}, indent=1) + "\n"
    if args.out:
        args.out.write_text(text)
    for srv in report["servers"]:
        o, t = srv["occupancy"], srv["tokens"] or {}
        print(
            f"{srv['started']} port {srv['port']}: {o['mean_busy_slots']}/{o['slots']} slots busy "
            f"over {o['seconds']:.0f} s "
            f"(all busy {100 * o['share_all_busy']:.0f}%, idle {100 * o['share_idle']:.0f}%); prompt tokens processed "
            f"{t.get('prompt_tokens_processed')}, decoded {t.get('decoded_tokens')} "
            f"({t.get('decode_tok_per_slot_s')} tok/s a busy slot)"
        )


if __name__ == "__main__":
    main()
