"""A managed `llama-server` subprocess on 127.0.0.1.

Started on a free port with parallel slots (continuous batching, prompt caching), health-checked before
use, restarted if it dies, and stopped when orchrm exits. It may serve a LoRA adapter (GGUF) on top of the
model; llama-server loads adapters only at start, so a new adapter means `restart(lora=...)` (about a
second for a small model: the weights stay in the page cache). It never outlives its parent: the child asks
the kernel for SIGTERM when the parent dies (PR_SET_PDEATHSIG), and an atexit hook stops it on a clean
exit.
"""

from __future__ import annotations

import atexit
import ctypes
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import weakref
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import httpx

from ..errors import ServerError
from ..paths import cache_dir
from .models import ModelFile

_PR_SET_PDEATHSIG = 1
# PDEATHSIG fires when the *thread* that forked the child exits, not the process. Every server is forked
# from this one long-lived thread, so a server lives exactly as long as orchrm.
_SPAWNER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="orchrm-spawner")
_live: weakref.WeakSet[LlamaServer] = weakref.WeakSet()


def _stop_all() -> None:
    for server in list(_live):
        server.stop()


atexit.register(_stop_all)


def _die_with_parent() -> None:
    # Runs in the child between fork and exec. Linux only; elsewhere atexit is the only guard.
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    os.setpgrp()  # a Ctrl-C in the terminal goes to orchrm, which then stops the server itself


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass(frozen=True)
class ServerConfig:
    """How to run llama-server. Slots default to 8: on this 2-core machine the 0.5B decodes 1.51x as many tokens a
    second at 8 concurrent requests as at 4 (103.9 against 68.7, bench/llm_throughput.py ->
    bench/results/llm_throughput.json), and the main job keeps more than 4 requests in flight (two questions' plans
    in each of two rollouts, and the judge). 8 x 4,096 tokens of context are ~400 MB of KV cache for the 0.5B."""

    parallel: int = 8
    ctx_per_slot: int = 4096
    threads: int | None = None
    startup_timeout_s: float = 180.0


class LlamaServer:
    """One llama-server process serving one model."""

    def __init__(
        self, binary: Path, model: ModelFile, config: ServerConfig | None = None, *, lora: Path | None = None
    ) -> None:
        self.binary = binary
        self.model = model
        self.config = config or ServerConfig()
        self.lora = lora
        self.port: int | None = None
        self.restarts = 0
        self._proc: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()
        self.log_path = cache_dir() / "logs" / f"llama-server-{model.name}-{os.getpid()}-{id(self):x}.log"

    @property
    def url(self) -> str:
        if self.port is None:
            raise ServerError("llama-server is not running")
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def ensure_running(self) -> str:
        """Start the server if it is not running (again, if it died); return its /v1 URL."""
        with self._lock:
            if self.alive():
                return self.url
            if self._proc is not None:
                self.restarts += 1
            self._start()
            return self.url

    def restart(self, *, lora: Path | None) -> str:
        """Start again serving `lora` (a GGUF adapter, or None for the bare model); return the /v1 URL.

        Requests must name the adapter's scale (`"lora": [{"id": 0, "scale": 1.0}]`): one with an empty list
        was served with the scale its slot last had, and `--lora-init-without-apply` was seen not to stop the
        adapter being applied, so callers say what they want on every request."""
        with self._lock:
            self.stop()
            self.lora = lora
            self._start()
            return self.url

    def _command(self, port: int) -> list[str]:
        cfg = self.config
        threads = cfg.threads or max(1, os.cpu_count() or 1)
        return [
            str(self.binary),
            "--model",
            str(self.model.path),
            "--alias",
            self.model.name,
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--parallel",
            str(cfg.parallel),
            "--ctx-size",
            str(cfg.ctx_per_slot * cfg.parallel),
            "--threads",
            str(threads),
            "--cont-batching",
            "--cache-prompt",
            "--metrics",  # the server's own token counters, which the ledger is checked against
            "--no-webui",
            *(["--lora", str(self.lora)] if self.lora is not None else []),
        ]

    def _start(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        port = free_port()
        log = open(self.log_path, "ab")
        try:
            self._proc = _SPAWNER.submit(
                subprocess.Popen,
                self._command(port),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                preexec_fn=_die_with_parent,
            ).result()
        except OSError as exc:
            raise ServerError(f"cannot run {self.binary}: {exc}", hint="rebuild it: delete it and run again") from exc
        finally:
            log.close()
        self.port = port
        _live.add(self)
        self._wait_healthy()

    def _wait_healthy(self) -> None:
        assert self._proc is not None
        deadline = time.monotonic() + self.config.startup_timeout_s
        health = f"http://127.0.0.1:{self.port}/health"
        while time.monotonic() < deadline:
            code = self._proc.poll()
            if code is not None:
                raise ServerError(
                    f"llama-server exited with code {code} while loading {self.model.name}",
                    hint=f"full log: {self.log_path}",
                    detail=self.log_tail(),
                )
            try:
                if httpx.get(health, timeout=2.0).status_code == 200:
                    return
            except httpx.HTTPError:
                pass  # not listening yet
            time.sleep(0.2)
        self.stop()
        raise ServerError(
            f"llama-server did not become healthy within {self.config.startup_timeout_s:g}s",
            hint=f"full log: {self.log_path}",
            detail=self.log_tail(),
        )

    def log_tail(self, lines: int = 15) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self, timeout_s: float = 10.0) -> None:
        proc, self._proc = self._proc, None
        _live.discard(self)
        if proc is None or proc.poll() is not None:
            return
        proc.terminate()
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
