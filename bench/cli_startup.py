"""How long `orchrm --help` takes to start, against a bare interpreter measured in the same run.

    python bench/cli_startup.py              # 5 runs each, writes bench/results/cli_startup.json
    python bench/cli_startup.py --runs 9

Runs `python -c pass` and `python -m orchrm --help` alternately (so a busy machine slows both alike) and
prints the median wall time of each and their difference: what orchrm's imports cost before any verb runs.
`-m orchrm` with this interpreter measures the code on its path, not whichever `orchrm` is on $PATH.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

from stamp import stamp  # bench/stamp.py: the commit and machine a result measured

OUT = Path(__file__).parent / "results" / "cli_startup.json"
COMMANDS = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "orchrm --help": [sys.executable, "-m", "orchrm", "--help"],
}


def wall(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    for cmd in COMMANDS.values():
        wall(cmd)  # warm the file cache and the bytecode, which a user's second call has too
    times: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for _ in range(args.runs):
        for name, cmd in COMMANDS.items():
            times[name].append(wall(cmd))
    medians = {name: statistics.median(ts) for name, ts in times.items()}
    result = {
        "runs": args.runs,
        "median_seconds": {k: round(v, 3) for k, v in medians.items()},
        "orchrm_over_python_seconds": round(medians["orchrm --help"] - medians["python -c pass"], 3),
        "all_seconds": {k: [round(t, 3) for t in ts] for k, ts in times.items()},
        "python": platform.python_version(),
        "machine": f"{platform.machine()}, {platform.system()}",
    }
    print(json.dumps(result, indent=2))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({**result, "stamp": stamp()}, indent=2) + "\n")


if __name__ == "__main__":
    main()
