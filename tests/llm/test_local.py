"""The local backend's process management, against a fake llama-server (a real HTTP process)."""

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from orchrm.errors import ServerError
from orchrm.llm import LLM, LocalBackend
from orchrm.llm.server import ServerConfig

FAKE = Path(__file__).parents[1] / "support" / "fake_openai.py"


def _script(path: Path, body: str) -> Path:
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)
    return path


@pytest.fixture
def fake_env(tmp_path, monkeypatch):
    monkeypatch.setenv("ORCHRM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv(
        "ORCHRM_LLAMA_SERVER", str(_script(tmp_path / "llama-server", f'exec {sys.executable} {FAKE} "$@"'))
    )
    model = tmp_path / "tiny.gguf"
    model.write_bytes(b"GGUF fake weights")
    return model


def _gone(pid: int, within_s: float = 10.0) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        # A zombie of ours still answers kill(0); reap it if it is our child.
        try:
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                return True
        except ChildProcessError:
            pass
        time.sleep(0.1)
    return False


def test_serves_through_openai_path_and_stops(fake_env):
    backend = LocalBackend(str(fake_env), server=ServerConfig(parallel=2))
    llm = LLM(backend)
    out = llm.generate("hi", category="execute")
    assert out[0].text == "hello from the fake server"
    assert backend.model_id.startswith("gguf:") and len(backend.model_id) == 5 + 64
    pid = backend.server.pid
    llm.close()
    assert _gone(pid)


def test_restarts_a_dead_server(fake_env):
    backend = LocalBackend(str(fake_env))
    llm = LLM(backend)
    llm.generate("one", category="execute")
    first = backend.server.pid
    os.kill(first, signal.SIGKILL)
    assert _gone(first)
    out = llm.generate("two", category="execute")
    assert out[0].text == "hello from the fake server"
    assert backend.server.restarts == 1 and backend.server.pid != first
    llm.close()


def test_startup_failure_shows_log_tail(fake_env, tmp_path, monkeypatch):
    bad = _script(tmp_path / "broken-server", 'echo "error: failed to load model (fake)"; exit 3')
    monkeypatch.setenv("ORCHRM_LLAMA_SERVER", str(bad))
    llm = LLM(LocalBackend(str(fake_env)))
    with pytest.raises(ServerError, match="exited with code 3") as info:
        llm.generate("hi", category="execute")
    assert "failed to load model (fake)" in info.value.detail


def test_server_dies_with_a_killed_parent(fake_env, tmp_path):
    child = textwrap.dedent(
        f"""
        from orchrm.llm import LLM, LocalBackend
        llm = LLM(LocalBackend({str(fake_env)!r}))
        llm.generate("hi", category="execute")
        print(llm.backend.server.pid, flush=True)
        import time; time.sleep(60)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", child], stdout=subprocess.PIPE, text=True, env=os.environ.copy())
    server_pid = int(proc.stdout.readline())
    os.kill(server_pid, 0)  # alive while its parent lives
    proc.kill()
    proc.wait()
    assert _gone(server_pid), "llama-server outlived the process that started it"


def test_a_registry_model_is_named_by_its_registry_name_with_its_sha256_beside():
    from orchrm.llm import DEFAULT_MODEL, REGISTRY, described

    backend = LocalBackend(DEFAULT_MODEL)  # nothing starts: the registry knows the sha256
    sha = REGISTRY[DEFAULT_MODEL].sha256
    assert backend.model_id == f"gguf:{sha}"  # the cache's identity is unchanged
    assert backend.display_name == DEFAULT_MODEL
    assert described(backend) == f"{DEFAULT_MODEL} (gguf:{sha})"


def test_a_gguf_path_is_named_by_its_file_name(fake_env):
    backend = LocalBackend(str(fake_env), server=ServerConfig(parallel=1))
    assert backend.display_name == "tiny.gguf"
