"""How long the main job takes cold: `orchrm demo` from an empty run folder with an empty response cache, at this
tree and at the commit the work started from, in one sitting (these machines are noisy: read the ratio).

    python bench/demo_time.py                         # both arms, the demo's defaults; bench/results/demo_time.json
    python bench/demo_time.py --arms current          # one arm
    python bench/demo_time.py --demo-args "--train-questions 2 --test-questions 2 --n-plans 2" \
        --out /tmp/demo_time_smoke.json               # a smoke run: small sizes, written elsewhere
    python bench/demo_time.py --arms base,current,current-c8 --arm-args "current-c8=--concurrency 8"
                                                      # a variant in the same sitting: more server slots

Each arm runs `python -m orchrm demo --json` as a new process with `ORCHRM_RESPONSE_CACHE` pointing at a fresh
file of its own (the user's cache, `~/.cache/orchrm/responses.sqlite`, is never read or touched), into a run
folder emptied first; models and llama-server come from the usual cache folder. The baseline arm runs the same
interpreter on a `git worktree` of `--base` (its `src/` first on `PYTHONPATH`; the arm records which orchrm it
imported). `total_s` is the process's wall clock; each stage's seconds are read from the demo's own JSON progress
lines as they arrive (first line to its `done` line, with its start and end offsets, since stages now overlap).
Resumable: an arm already in the result file for these demo arguments is kept; a killed arm runs again from
empty (a half-run is not a cold run). The file is written atomically after each arm.
"""

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

from pydantic import BaseModel, Field

from files import write_text_atomic  # bench/files.py: a kill leaves the old file or the new one
from stamp import ROOT, stamp  # bench/stamp.py: the commit and machine a result measured

OUT = Path(__file__).parent / "results" / "demo_time.json"
#: The commit issue #49's work started from: the demo as a new user found it.
BASE = "4ff4a85"


class StageTime(BaseModel):
    """One progress stage: from its first line to its `done` line, as offsets from the process start."""

    start_s: float
    end_s: float | None = None  # None: never reported done
    seconds: float | None = None
    done: int = 0
    total: int | None = None
    info: str = ""


class ArmResult(BaseModel):
    arm: str  # "current" or "base"
    commit: str
    orchrm_path: str  # which orchrm the process imported
    demo_args: list[str]
    returncode: int
    total_s: float
    demo_wall_s: float | None = None  # the demo's own clock (its --json summary)
    stages: dict[str, StageTime] = Field(default_factory=dict)
    notes: list[tuple[float, str]] = Field(default_factory=list)  # (offset, note)
    tokens_spent: dict[str, int] = Field(default_factory=dict)  # per category, what reached the model
    accuracy: dict[str, float] = Field(default_factory=dict)  # per method: the table it printed
    load_average_at_start: list[float]
    stderr_tail: str = ""


class DemoTime(BaseModel):
    stamp: dict[str, object]
    base: str
    demo_args: list[str]
    arms: dict[str, ArmResult] = Field(default_factory=dict)
    ratio_total: float | None = None  # current / base, total_s


def _git(*args: str, cwd: Path = ROOT) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout.strip()


def tree_of(arm: str, base: str, work: Path) -> Path:
    """The source tree an arm runs: this checkout (`current`, `current-<variant>`), or a worktree of `base` (`base`,
    `base-<variant>`; made once, reused)."""
    kind = arm.split("-", 1)[0]
    if kind not in ("current", "base"):
        raise SystemExit(f"--arms: {arm!r} is neither current[-variant] nor base[-variant]")
    if kind == "current":
        return ROOT
    tree = work / f"tree-{base}"
    if not (tree / "src" / "orchrm").is_dir():
        subprocess.run(["git", "worktree", "add", "--detach", str(tree), base], cwd=ROOT, check=True)
    return tree


def _stage_lines(line: str, offset: float, arm: ArmResult) -> None:
    """Fold one line of the demo's stderr into the arm's stages and notes (non-JSON lines are the human ones)."""
    try:
        event = json.loads(line)
    except json.JSONDecodeError:
        return
    if not isinstance(event, dict):
        return
    if "note" in event and "elapsed_s" not in event:  # a note's heartbeat repeats it with its elapsed time
        arm.notes.append((round(offset, 1), str(event["note"])))
    name = event.get("stage")
    if not isinstance(name, str):
        return
    stage = arm.stages.setdefault(name, StageTime(start_s=round(offset, 1)))
    stage.done, stage.total, stage.info = int(event.get("done") or 0), event.get("total"), str(event.get("info", ""))
    if event.get("finished") and stage.end_s is None:
        stage.end_s = round(offset, 1)
        stage.seconds = round(stage.end_s - stage.start_s, 1)


def run_arm(arm: str, tree: Path, demo_args: list[str], work: Path) -> ArmResult:
    """One cold demo run in a new process: an empty run folder and an empty response cache of its own."""
    folder = work / arm
    shutil.rmtree(folder, ignore_errors=True)  # our own scratch folder: a half-run is not a cold run
    folder.mkdir(parents=True)
    env = {**os.environ, "ORCHRM_RESPONSE_CACHE": str(folder / "responses.sqlite")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(tree / "src"), env.get("PYTHONPATH", "")) if p)
    where = subprocess.run(
        [sys.executable, "-c", "import orchrm; print(orchrm.__file__)"], env=env, capture_output=True, text=True
    )
    cmd = [sys.executable, "-m", "orchrm", "demo", "--out", str(folder / "run"), "--json", *demo_args]
    result = ArmResult(
        arm=arm,
        commit=_git("rev-parse", "HEAD", cwd=tree),
        orchrm_path=where.stdout.strip(),
        demo_args=demo_args,
        returncode=-1,
        total_s=0.0,
        load_average_at_start=[round(x, 2) for x in os.getloadavg()],
    )
    print(f"[{arm}] {shlex.join(cmd)}  (orchrm from {result.orchrm_path})", flush=True)
    start = time.monotonic()
    summary = folder / "summary.json"
    with open(summary, "w") as out:  # a file, not a pipe: a large summary must not block the demo's last write
        proc = subprocess.Popen(cmd, cwd=tree, env=env, stdout=out, stderr=subprocess.PIPE, text=True)
        tail: list[str] = []
        assert proc.stderr is not None
        for line in proc.stderr:  # read as it comes: each stage's offsets are when its lines arrived
            _stage_lines(line, time.monotonic() - start, result)
            tail = [*tail[-30:], line.rstrip()]
        result.returncode = proc.wait()
    stdout = summary.read_text()
    result.total_s = round(time.monotonic() - start, 1)
    result.stderr_tail = "\n".join(tail)
    _summary(stdout, result)
    return result


def _summary(stdout: str, result: ArmResult) -> None:
    """The demo's --json summary line: its own wall clock, the tokens that reached the model, each accuracy."""
    lines = [line for line in stdout.splitlines() if line.startswith("{")]
    if not lines:
        return
    summary = json.loads(lines[-1])
    result.demo_wall_s = summary.get("wall_s")
    for category, t in (summary.get("tokens_this_run") or {}).items():
        result.tokens_spent[category] = int(t.get("spent_prompt_tokens", 0)) + int(t.get("spent_completion_tokens", 0))
    for method, m in (summary.get("methods") or {}).items():
        result.accuracy[method] = m["accuracy"]["value"]


def _read(path: Path, base: str, demo_args: list[str]) -> DemoTime:
    """The result file when it measured these demo arguments against this base; else a fresh one."""
    if path.exists():
        old = DemoTime.model_validate_json(path.read_text())
        if old.base == base and old.demo_args == demo_args:
            return old
    return DemoTime(stamp=stamp(), base=base, demo_args=demo_args)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arms", default="base,current", help="Which arms, in the order they run.")
    parser.add_argument("--base", default=BASE, help="The baseline commit (a worktree of it runs the base arm).")
    parser.add_argument("--demo-args", default="", help="Extra `orchrm demo` options (a smoke run's small sizes).")
    parser.add_argument("--work", type=Path, default=Path("/tmp/orchrm-demo-time"), help="Scratch folder.")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--again", action="store_true", help="Run arms already in the result file again.")
    parser.add_argument(
        "--arm-args", action="append", default=[], metavar="ARM=ARGS", help="More demo options for one arm only."
    )
    args = parser.parse_args()
    demo_args = shlex.split(args.demo_args)
    own = dict(a.split("=", 1) for a in args.arm_args)
    record = _read(args.out, args.base, demo_args)
    for arm in args.arms.split(","):
        if arm in record.arms and not args.again and record.arms[arm].returncode == 0:
            print(f"[{arm}] already measured: {record.arms[arm].total_s} s", flush=True)
            continue
        arm_args = [*demo_args, *shlex.split(own.get(arm, ""))]
        result = run_arm(arm, tree_of(arm, args.base, args.work), arm_args, args.work)
        record.arms[arm] = result
        done = {a.arm: a.total_s for a in record.arms.values() if a.returncode == 0}
        record.ratio_total = round(done["current"] / done["base"], 3) if {"current", "base"} <= set(done) else None
        record.stamp = stamp()
        write_text_atomic(args.out, record.model_dump_json(indent=2) + "\n")
        stages = ", ".join(f"{k} {v.seconds}" for k, v in result.stages.items())
        print(f"[{arm}] rc {result.returncode} · total {result.total_s} s · {stages}", flush=True)
    if record.ratio_total is not None:
        print(f"current / base total: {record.ratio_total}", flush=True)


if __name__ == "__main__":
    main()
