"""Real inference: embedded GGUF models on a real llama-server (built once per machine by `make test`)."""

import os
import signal

import pytest

from orchrm.errors import ContextOverflow
from orchrm.llm import LLM, LocalBackend, ResponseCache
from orchrm.llm.server import ServerConfig

pytestmark = pytest.mark.real_model

ANSWER = {
    "type": "object",
    "properties": {"answer": {"type": "integer"}},
    "required": ["answer"],
    "additionalProperties": False,
}


@pytest.fixture(scope="module")
def smol(tmp_path_factory):
    llm = LLM(LocalBackend("smollm2-135m", server=ServerConfig(parallel=2, ctx_per_slot=1024)))
    yield llm
    llm.close()


@pytest.fixture(scope="module")
def qwen(tmp_path_factory):
    llm = LLM(LocalBackend("qwen2.5-coder-0.5b", server=ServerConfig(parallel=4, ctx_per_slot=1024)))
    yield llm
    llm.close()


def test_smollm_generates_with_usage(smol):
    out = smol.generate("Name a colour.", category="execute", max_tokens=16)[0]
    assert out.text.strip()
    assert out.usage.prompt_tokens > 5
    assert 0 < out.usage.completion_tokens <= 16
    assert out.finish_reason in ("stop", "length")


def test_smollm_schema_constrained_json(smol):
    out = smol.generate("What is 2 + 3? Reply in JSON.", category="verify", json_schema=ANSWER, max_tokens=24)[0]
    assert isinstance(out.json_value()["answer"], int)


def test_cached_rerun_spends_nothing(smol, tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite")
    first = LLM(smol.backend, cache=cache)
    a = first.generate("Say hi.", category="execute", n=2, temperature=0.9, seed=3, max_tokens=12)
    again = LLM(smol.backend, cache=cache)
    b = again.generate("Say hi.", category="execute", n=2, temperature=0.9, seed=3, max_tokens=12)
    assert [c.text for c in a] == [c.text for c in b]
    assert all(c.cached for c in b)
    assert again.ledger.total().spent_tokens == 0
    assert again.ledger.total().total_tokens == first.ledger.total().total_tokens > 0


def test_context_overflow_is_reported(smol):
    with pytest.raises(ContextOverflow):
        smol.generate("word " * 3000, category="execute", max_tokens=8)


def test_dead_server_is_restarted(smol):
    server = smol.backend.server
    os.kill(server.pid, signal.SIGKILL)
    out = smol.generate("Name a fruit.", category="execute", max_tokens=8, use_cache=False)
    assert out[0].text.strip() and server.restarts >= 1


def test_default_model_json_answer_and_parallel_samples(qwen):
    out = qwen.generate(
        "What is 17 + 25? Answer in JSON.",
        category="verify",
        json_schema=ANSWER,
        max_tokens=24,
        n=4,
        temperature=0.7,
        seed=11,
    )
    assert len(out) == 4
    assert all(isinstance(c.json_value()["answer"], int) for c in out)
    totals = qwen.ledger.totals()["verify"]
    assert totals.calls == 4 and totals.spent_completion_tokens > 0
    assert sum(c.json_value()["answer"] == 42 for c in out) >= 1
