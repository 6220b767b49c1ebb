import pytest

from orchrm.errors import ServerError
from orchrm.llm import server_build


def test_failed_step_is_named_with_log_tail(tmp_path, monkeypatch):
    monkeypatch.setenv("ORCHRM_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("ORCHRM_LLAMA_SERVER", raising=False)
    src = tmp_path / "src"
    src.mkdir()
    (src / "CMakeLists.txt").write_text("this is not cmake (\n")
    monkeypatch.setattr(server_build, "_fetch_sources", lambda work, logfile, log: src)
    logged = []
    with pytest.raises(ServerError, match="failed at step 'configure'") as info:
        server_build.build_llama_server(log=logged.append)
    assert "CMakeLists.txt" in info.value.detail
    assert "build.log" in str(info.value)
    assert not server_build.server_binary().exists()
    assert any("configure" in line for line in logged)


def test_override_must_be_executable(tmp_path, monkeypatch):
    monkeypatch.setenv("ORCHRM_LLAMA_SERVER", str(tmp_path / "nope"))
    with pytest.raises(ServerError, match="not an executable"):
        server_build.find_llama_server()


def test_cached_binary_is_found(tmp_path, monkeypatch):
    monkeypatch.setenv("ORCHRM_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("ORCHRM_LLAMA_SERVER", raising=False)
    assert server_build.find_llama_server() is None
    binary = server_build.server_binary()
    binary.parent.mkdir(parents=True)
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o755)
    assert server_build.ensure_llama_server(log=lambda m: None) == binary
