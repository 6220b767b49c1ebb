"""Run untrusted Python (model-written code evidence, skill verifier scripts) in a separate, confined process.

The caller's side: write the script into a fresh scratch directory, start `_runner.py` (which sets
up namespaces, a minimal root, an unprivileged uid and rlimits, then execs the script), enforce a
wall-clock limit, and classify how the run ended. A hostile script — infinite loop, fork bomb, memory
bomb, oversized file, reading files outside its scratch directory, opening a socket — ends as a `SandboxResult` with an
`outcome` that says so; the caller goes on. Which isolation layers were really in place is recorded on
every result (`isolation`, `notes`): where a layer is unavailable the run still happens, degraded and
labelled, never silently.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from .. import safejson

Outcome = Literal[
    "ok", "error", "timeout", "cpu_limit", "memory_limit", "process_limit", "output_limit", "sandbox_failure"
]
LAYERS = ("pid", "net", "fs", "uid", "rlimits")

_RUNNER = Path(__file__).with_name("_runner.py")
_SANDBOX_UIDS = (200_000, 260_000)  # a uid of its own per run, so RLIMIT_NPROC counts only the sandbox


@dataclass(frozen=True)
class SandboxLimits:
    """What one sandboxed run may use."""

    cpu_s: int = 5
    wall_s: float = 10.0
    memory_bytes: int = 512 * 2**20
    output_bytes: int = 64 * 2**10  # stdout and stderr each; also the size limit of any file it writes
    processes: int = 16
    open_files: int = 64


class SandboxResult(BaseModel):
    """How a sandboxed run ended, what it printed, and what confined it."""

    outcome: Outcome
    exit_code: int | None = Field(None, description="The script's exit status; None when a signal ended it.")
    signal: str | None = None
    stdout: str = ""
    stderr: str = ""
    truncated: bool = Field(False, description="stdout or stderr hit the output limit.")
    wall_s: float = 0.0
    isolation: dict[str, bool] = Field(default_factory=dict, description="Each layer and whether it was in place.")
    notes: list[str] = Field(default_factory=list, description="Why a layer is missing, and other caveats.")

    @property
    def ok(self) -> bool:
        return self.outcome == "ok"

    @property
    def fully_isolated(self) -> bool:
        return all(self.isolation.get(layer, False) for layer in LAYERS)

    def summary(self, max_chars: int = 2000) -> str:
        """A compact text form for an agent's observation."""
        parts = [f"outcome={self.outcome} exit_code={self.exit_code} signal={self.signal}"]
        if self.stdout:
            parts.append("stdout:\n" + self.stdout[:max_chars])
        if self.stderr:
            parts.append("stderr:\n" + self.stderr[-max_chars:])
        return "\n".join(parts)


def run_python(
    code: str,
    *,
    limits: SandboxLimits | None = None,
    files: dict[str, str] | None = None,
    isolation: tuple[str, ...] = ("pid", "net", "fs"),
) -> SandboxResult:
    """Run `code` as a Python script in the sandbox; `files` are written into its scratch directory first.

    `isolation` names the namespace layers to request (all by default); dropping one is for tests of the
    degraded path. The uid and rlimit layers are always applied where possible.
    """
    limits = limits or SandboxLimits()
    work = Path(tempfile.mkdtemp(prefix="orchrm-sandbox-"))
    try:
        return _run(code, limits, files or {}, isolation, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


async def arun_python(code: str, **kwargs: object) -> SandboxResult:
    """`run_python` off the event loop."""
    return await asyncio.to_thread(run_python, code, **kwargs)  # type: ignore[arg-type]


def _run(
    code: str, limits: SandboxLimits, files: dict[str, str], isolation: tuple[str, ...], work: Path
) -> SandboxResult:
    script, uid = _prepare(work, code, files)
    spec = _spec(script, work, isolation, uid, limits)
    status_r, status_w = os.pipe()
    start = time.monotonic()
    try:
        proc, timed_out = _start_and_wait(spec, work, status_w, limits.wall_s)
    except OSError as exc:
        os.close(status_r)
        return SandboxResult(outcome="sandbox_failure", notes=[f"could not start the sandbox: {exc}"])
    wall = time.monotonic() - start
    _kill_group(proc.pid)  # anything left in its session (only reachable when no pid namespace was available)
    with os.fdopen(status_r, "rb") as f:
        raw_status = f.read()
    return _result(proc.returncode, timed_out, raw_status, work, limits, isolation, wall)


def _prepare(work: Path, code: str, files: dict[str, str]) -> tuple[Path, int | None]:
    """The scratch directory with the script and its input files, owned by a fresh uid when we are root;
    returns the script's path and that uid."""
    scratch, root = work / "scratch", work / "root"
    scratch.mkdir()
    root.mkdir()
    for name, content in files.items():
        target = (scratch / name).resolve()
        if scratch.resolve() not in target.parents:
            raise ValueError(f"sandbox input file {name!r} would land outside the scratch directory")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content)
    script = scratch / "main.py"
    script.write_text(code)
    uid = None
    if os.geteuid() == 0:
        uid = random.randrange(*_SANDBOX_UIDS)
        for path in [scratch, *scratch.rglob("*")]:
            os.chown(path, uid, uid)
    work.chmod(0o711)  # the unprivileged uid must traverse to its scratch directory when no chroot hides it
    return script, uid


def _spec(
    script: Path, work: Path, isolation: tuple[str, ...], uid: int | None, limits: SandboxLimits
) -> dict[str, Any]:
    """What `_runner.py` is told to set up (uid and gid are the same number)."""
    return {
        "python": os.path.realpath(sys.executable),
        "script": str(script),
        "scratch": str(script.parent),
        "root_dir": str(work / "root"),
        "readonly_paths": ["/usr", "/bin", "/lib", "/lib64", "/lib32", "/libx32", sys.base_prefix],
        "isolation": list(isolation),
        "uid": uid,
        "gid": uid,
        "limits": {
            "cpu_s": limits.cpu_s,
            "memory_bytes": limits.memory_bytes,
            "file_bytes": limits.output_bytes,
            "processes": limits.processes,
            "open_files": limits.open_files,
        },
    }


def _start_and_wait(
    spec: dict[str, Any], work: Path, status_w: int, wall_s: float
) -> tuple[subprocess.Popen[bytes], bool]:
    """Start the runner in a session of its own and wait up to `wall_s`, then kill its process group.
    Returns the process and whether it timed out; `status_w` is closed here either way."""
    with open(work / "stdout", "wb") as out, open(work / "stderr", "wb") as err:
        try:
            proc = subprocess.Popen(
                [spec["python"], "-I", "-S", "-B", str(_RUNNER), json.dumps(spec), str(status_w)],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                pass_fds=(status_w,),
                env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
                cwd=str(work),
                start_new_session=True,
            )
        finally:
            os.close(status_w)
        try:
            proc.wait(timeout=wall_s)
        except subprocess.TimeoutExpired:
            _kill_group(proc.pid)
            proc.wait()
            return proc, True
    return proc, False


def _result(
    returncode: int,
    timed_out: bool,
    raw_status: bytes,
    work: Path,
    limits: SandboxLimits,
    isolation: tuple[str, ...],
    wall: float,
) -> SandboxResult:
    """How the run ended, what it printed (capped) and which layers the runner reported in place."""
    status = (
        safejson.loads(raw_status) if raw_status else {"layers": {}, "notes": ["the runner died before setting up"]}
    )
    stdout, t1 = _read_capped(work / "stdout", limits.output_bytes)
    stderr, t2 = _read_capped(work / "stderr", limits.output_bytes)
    code, sig = (None, signal.Signals(-returncode).name) if returncode < 0 else (returncode, None)
    notes = list(status["notes"]) + [
        f"{layer}: not requested" for layer in ("pid", "net", "fs") if layer not in isolation
    ]
    return SandboxResult(
        outcome=_classify(timed_out, code, sig, stderr, t1 or t2, raw_status),
        exit_code=code,
        signal=sig,
        stdout=stdout,
        stderr=stderr,
        truncated=t1 or t2,
        wall_s=round(wall, 3),
        isolation={layer: bool(status["layers"].get(layer, False)) for layer in LAYERS},
        notes=notes,
    )


def _classify(
    timed_out: bool, code: int | None, sig: str | None, stderr: str, truncated: bool, status: bytes
) -> Outcome:
    if not status:
        return "sandbox_failure"
    if timed_out:
        return "timeout"
    if sig in ("SIGXCPU",) or (sig == "SIGKILL" and not truncated):
        return "cpu_limit"
    if sig == "SIGXFSZ" or truncated:
        return "output_limit"
    if "MemoryError" in stderr or sig == "SIGSEGV":
        return "memory_limit"
    if code not in (0, None):
        # Python ignores SIGXFSZ, and fork() under RLIMIT_NPROC fails with EAGAIN: a script that does not
        # catch either dies of an ordinary exception, which its last stderr line (the uncaught one) names.
        # Forked children print their own tracebacks to the same stderr, and under Python 3.13 (a traceback
        # written a line at a time, with caret lines) the text can end inside one of them: the exception line
        # is the last one that is neither indented (a frame, its source, its carets) nor a traceback's header.
        lines = stderr.strip().splitlines()
        last = next((ln for ln in reversed(lines) if ln[:1].strip() and not ln.startswith("Traceback (")), "")
        if last.startswith("OSError: [Errno 27] File too large"):
            return "output_limit"
        if last.startswith("BlockingIOError: [Errno 11]") and "fork" in stderr:
            return "process_limit"
    return "ok" if code == 0 else "error"


def _read_capped(path: Path, cap: int) -> tuple[str, bool]:
    size = path.stat().st_size
    with open(path, "rb") as f:
        data = f.read(cap)
    return data.decode("utf-8", errors="replace"), size >= cap


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
