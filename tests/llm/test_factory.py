"""Opening the orchestrator and agent LLMs: one object when they name one model, two sharing a ledger and
cache otherwise; an unreachable model is one line naming its role, found before any work."""

import asyncio
import socket

import pytest

from orchrm.errors import BackendUnreachable, ConfigError
from orchrm.llm import DEFAULT_MODEL, LLM, close_llms, ensure_reachable, open_agent_llm, open_llms
from orchrm.llm.scripted import ScriptedBackend


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_no_agent_option_is_the_same_llm(tmp_path):
    orch, agent = open_llms("openai", base_url="http://127.0.0.1:9/v1", model="m", cache=tmp_path / "c.sqlite")
    assert agent is orch
    close_llms(orch, agent)


@pytest.mark.parametrize(
    ("orch", "agent"),
    [
        ({"backend": "local"}, {"agent_model": DEFAULT_MODEL}),
        ({"backend": "local", "model": DEFAULT_MODEL}, {"agent_backend": "local"}),
        ({"backend": "openai", "base_url": "http://h:1/v1", "model": "m"}, {"agent_model": "m"}),
        ({"backend": "openai", "base_url": "http://h:1/v1", "model": "m"}, {"agent_base_url": "http://h:1/v1"}),
    ],
)
def test_agent_options_naming_the_orchestrators_model_reuse_it(orch, agent, tmp_path):
    o, a = open_llms(**orch, **agent, cache=tmp_path / "c.sqlite")
    assert a is o


def test_agent_model_on_the_same_server(tmp_path):
    orch, agent = open_llms(
        "openai", base_url="http://h:1/v1", model="big", agent_model="small", cache=tmp_path / "c.sqlite"
    )
    assert agent is not orch
    assert (agent.backend.base_url, agent.backend.model) == ("http://h:1/v1", "small")
    assert agent.ledger is orch.ledger and agent.cache is orch.cache
    assert agent.backend.model_id != orch.backend.model_id


def test_two_local_models_are_two_backends(tmp_path):
    orch, agent = open_llms("local", model="qwen2.5-coder-1.5b", agent_model=DEFAULT_MODEL, cache=False)
    assert agent is not orch and agent.backend.kind == orch.backend.kind == "local"
    assert agent.backend.model_name == DEFAULT_MODEL and orch.backend.model_name != DEFAULT_MODEL


def test_agent_on_another_backend_does_not_inherit_the_url(tmp_path):
    with pytest.raises(ConfigError, match="openai backend needs a base URL"):
        open_llms("local", agent_backend="openai", cache=False)
    orch, agent = open_llms("openai", base_url="http://h:1/v1", model="m", agent_backend="local", cache=False)
    assert agent.backend.kind == "local" and orch.backend.kind == "openai"


def test_open_agent_llm_without_options_is_the_orchestrator():
    orch = LLM(ScriptedBackend("x"))
    assert open_agent_llm(orch) is orch
    assert open_agent_llm(orch, "openai", base_url="http://h:1/v1").ledger is orch.ledger


def test_close_llms_closes_a_shared_llm_once():
    closed = []

    class Counting(ScriptedBackend):
        async def aclose(self):
            closed.append(self.name)

    one, two = LLM(Counting("x", name="a")), LLM(Counting("x", name="b"))
    close_llms(one, one)
    close_llms(one, two)
    assert closed == ["a", "a", "b"]


def test_unreachable_orchestrator_is_one_line_naming_role_and_url():
    url = f"http://127.0.0.1:{_free_port()}/v1"
    orch, _ = open_llms("openai", base_url=url, model="m", cache=False, max_retries=0)
    with pytest.raises(BackendUnreachable) as info:
        asyncio.run(ensure_reachable(orch, "orchestrator"))
    text = str(info.value)
    assert text.startswith(f"orchestrator model at {url} is not reachable: cannot reach {url}") and "\n" not in text


def test_reachable_server_passes_and_names_its_model(fake):
    orch, agent = open_llms("openai", base_url=fake.url, agent_base_url=fake.url, agent_model="fake-model", cache=False)
    asyncio.run(ensure_reachable(orch, "orchestrator"))
    assert orch.backend.model == "fake-model" and fake.requests == []  # a GET /models, no completion


def test_server_error_status_is_unreachable_too(fake):
    orch, _ = open_llms("openai", base_url=fake.url + "/nope", model="m", cache=False, max_retries=0)
    with pytest.raises(BackendUnreachable, match="agent model at .* is not reachable: .*HTTP 404"):
        asyncio.run(ensure_reachable(orch, "agent"))


def test_two_local_models_run_two_llama_servers(tmp_path, monkeypatch):
    """With the fake llama-server of tests/llm/test_local.py: one server per model, on its own port."""
    import sys
    from pathlib import Path

    fake = Path(__file__).parents[1] / "support" / "fake_openai.py"
    server = tmp_path / "llama-server"
    server.write_text(f'#!/bin/sh\nexec {sys.executable} {fake} "$@"\n')
    server.chmod(0o755)
    monkeypatch.setenv("ORCHRM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("ORCHRM_LLAMA_SERVER", str(server))
    big, small = tmp_path / "big.gguf", tmp_path / "small.gguf"
    big.write_bytes(b"GGUF big fake weights")
    small.write_bytes(b"GGUF small fake weights")
    orch, agent = open_llms("local", model=str(big), agent_model=str(small), cache=False, concurrency=1)
    try:
        asyncio.run(ensure_reachable(orch, "orchestrator"))
        asyncio.run(ensure_reachable(agent, "agent"))
        assert orch.backend.server.url != agent.backend.server.url
        assert orch.backend.model_id != agent.backend.model_id
        assert agent.generate("hi", category="execute")[0].text == "hello from the fake server"
    finally:
        close_llms(orch, agent)
    assert not orch.backend.server.alive() and not agent.backend.server.alive()


def test_local_server_that_cannot_start_is_one_line_naming_the_role(tmp_path, monkeypatch):
    broken = tmp_path / "llama-server"
    broken.write_text("#!/bin/sh\necho 'cannot load model' >&2\nexit 1\n")
    broken.chmod(0o755)
    monkeypatch.setenv("ORCHRM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("ORCHRM_LLAMA_SERVER", str(broken))
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF fake")
    orch, agent = open_llms("local", model=str(model), cache=False)
    with pytest.raises(
        BackendUnreachable, match=f"^agent model at {model} \\(embedded, on its own llama-server\\) is not reachable"
    ) as info:
        asyncio.run(ensure_reachable(agent, "agent"))
    assert "cannot load model" in info.value.detail  # the server's log tail, shown below the one line
    close_llms(orch, agent)


def test_an_adapted_orchestrators_agents_are_the_base_model_on_its_server(tmp_path):
    from orchrm.llm import AdapterFile, LocalBackend

    adapter = AdapterFile(name="run:step-4", path=tmp_path / "a.gguf", sha256="ab" * 32)
    for agent_options in ({}, {"agent_model": DEFAULT_MODEL}, {"agent_backend": "local"}):
        orch, agent = open_llms("local", orchestrator_adapter=adapter, cache=tmp_path / "c.sqlite", **agent_options)
        assert isinstance(agent.backend, LocalBackend) and agent.backend.adapter is None
        assert agent.backend._host is orch.backend  # the same server process, not a second one
        assert orch.backend.model_id == f"{agent.backend.model_id}+lora:{'ab' * 32}"
        assert agent.ledger is orch.ledger and agent.cache is orch.cache
        close_llms(orch, agent)
    orch, agent = open_llms(
        "local", orchestrator_adapter=adapter, agent_model="smollm2-135m", cache=tmp_path / "c.sqlite"
    )
    assert agent.backend._host is None and agent.backend.model_name == "smollm2-135m"  # another model: its own server
    close_llms(orch, agent)


def test_an_adapter_on_a_served_model_is_one_line(tmp_path):
    from orchrm.llm import AdapterFile

    adapter = AdapterFile(name="x", path=tmp_path / "a.gguf", sha256="0" * 64)
    with pytest.raises(ConfigError, match="--orchestrator-adapter is for the local backend"):
        open_llms("openai", base_url="http://127.0.0.1:9/v1", model="m", orchestrator_adapter=adapter, cache=False)
