"""Several endpoints per role: least-loaded routing, per-endpoint limits, failover with reasons, one-line all-down."""

import asyncio
import socket

import pytest

from fake_openai import FakeOpenAI, Reply
from orchrm.errors import BackendUnreachable, ConfigError, ContextOverflow
from orchrm.llm import LLM, FleetBackend, OpenAIBackend, ResponseCache, create_backend, ensure_reachable
from orchrm.llm.types import cache_key


@pytest.fixture
def fleet():
    servers = [FakeOpenAI(default_text=f"from {i}") for i in range(3)]
    for s in servers:
        s.start()
    yield servers
    for s in servers:
        s.stop()


def _dead_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}/v1"


def _fleet(urls, **kw):
    kw.setdefault("cool_down_s", 30.0)
    return FleetBackend(urls, "fake-model", max_retries=0, **kw)


async def _many(llm, n):
    return await asyncio.gather(*(llm.agenerate(f"q{i}", category="execute", use_cache=False) for i in range(n)))


def test_factory_splits_comma_separated_urls(fleet):
    urls = ",".join(s.url for s in fleet)
    backend = create_backend("openai", base_url=urls, model="fake-model", concurrency=3)
    assert isinstance(backend, FleetBackend) and backend.max_concurrency == 9
    assert isinstance(create_backend("openai", base_url=fleet[0].url), OpenAIBackend)
    with pytest.raises(ConfigError, match="twice"):
        create_backend("openai", base_url=f"{fleet[0].url},{fleet[0].url}")


def test_requests_spread_over_endpoints_within_limits(fleet):
    for s in fleet:
        s.queue(*[Reply(text="ok", delay_s=0.05)] * 12)
    llm = LLM(_fleet([s.url for s in fleet], concurrency=2))
    outs = asyncio.run(_many(llm, 24))
    assert len(outs) == 24
    counts = [len(s.requests) for s in fleet]
    assert counts == [8, 8, 8], counts  # least-loaded routing with equal limits fills them evenly
    assert llm.backend.failovers == []


def test_cache_key_does_not_depend_on_the_endpoint_that_answered(fleet, tmp_path):
    backend = _fleet([s.url for s in fleet])
    assert backend.model_id == f"fake-model@{fleet[0].url}"
    # A later run with a single server (the first of the fleet) replays the fleet's answers.
    single = OpenAIBackend(fleet[0].url, "fake-model")
    assert backend.model_id == single.model_id
    cache = ResponseCache(tmp_path / "c.sqlite")
    llm = LLM(backend, cache=cache)
    first = asyncio.run(_many_cached(llm, 6))
    served = sum(len(s.requests) for s in fleet)
    again = asyncio.run(_many_cached(LLM(_fleet([s.url for s in fleet]), cache=cache), 6))
    assert [o[0].text for o in again] == [o[0].text for o in first] and all(o[0].cached for o in again)
    assert sum(len(s.requests) for s in fleet) == served


async def _many_cached(llm, n):
    return await asyncio.gather(*(llm.agenerate(f"q{i}", category="execute") for i in range(n)))


def test_endpoint_killed_mid_run_is_failed_over_with_reason(fleet):
    backend = _fleet([s.url for s in fleet], concurrency=2)
    llm = LLM(backend)
    first = asyncio.run(_many(llm, 6))
    assert len(first) == 6
    fleet[1].stop()  # killed mid-run
    rest = asyncio.run(_many(llm, 12))
    assert len(rest) == 12 and all(o[0].text in ("from 0", "from 2") for o in rest)
    reasons = {(f.endpoint, f.reason) for f in backend.failovers}
    assert reasons == {(backend.endpoints[1].url, "unreachable")}
    # Requests already routed to it when it died fail over too; after that it rests during the cool-down.
    failures = backend.summary()[backend.endpoints[1].url]["failures"]
    assert 1 <= failures <= 2
    assert len(asyncio.run(_many(llm, 12))) == 12
    assert backend.summary()[backend.endpoints[1].url]["failures"] == failures
    assert f"unreachable x{failures}" in backend.summary_line()
    assert llm.ledger.total().calls == 30


@pytest.mark.parametrize(
    "bad",
    [Reply(status=503, text="overloaded"), Reply(body=b"<html>not json</html>"), Reply(body=b'{"choices": []}')],
    ids=["5xx", "garbage", "no-choices"],
)
def test_bad_answers_fail_over(fleet, bad):
    fleet[0].queue(bad)
    backend = _fleet([fleet[0].url, fleet[1].url])
    out = LLM(backend).generate("q", category="execute", use_cache=False)
    assert out[0].text == "from 1"
    assert [f.endpoint for f in backend.failovers] == [backend.endpoints[0].url]
    assert backend.failovers[0].reason in ("http 503", "malformed")


def test_request_errors_are_not_failed_over(fleet):
    fleet[0].queue(Reply(status=400, text="maximum context length exceeded"))
    backend = _fleet([fleet[0].url, fleet[1].url])
    with pytest.raises(ContextOverflow):
        LLM(backend).generate("q", category="execute", use_cache=False)
    assert len(fleet[1].requests) == 0 and backend.failovers == []


def test_all_endpoints_down_is_one_line():
    urls = [_dead_url(), _dead_url()]
    backend = _fleet(urls)
    with pytest.raises(BackendUnreachable) as err:
        LLM(backend).generate("q", category="execute", use_cache=False)
    msg = err.value.message
    assert "\n" not in msg and msg.startswith("all 2 endpoints failed") and all(u in msg for u in urls)
    with pytest.raises(BackendUnreachable) as err:
        asyncio.run(ensure_reachable(LLM(_fleet(urls)), "agent"))
    assert "\n" not in err.value.message and err.value.message.startswith("agent model at ")


def test_ping_passes_while_one_endpoint_answers_and_learns_the_model(fleet):
    backend = FleetBackend([_dead_url(), fleet[2].url], max_retries=0)
    asyncio.run(ensure_reachable(LLM(backend), "orchestrator"))
    assert backend.model == "fake-model" and [f.reason for f in backend.failovers] == ["unreachable"]
    # The dead endpoint rests after the ping, so the first request goes to the live one.
    assert LLM(backend).generate("q", category="execute", use_cache=False)[0].text == "from 2"


def test_model_id_skips_a_dead_first_endpoint_for_the_name(fleet):
    dead = _dead_url()
    backend = FleetBackend([dead, fleet[0].url], max_retries=0)
    assert backend.model_id == f"fake-model@{dead}"


def test_cache_key_same_across_routing():
    a, b = _fleet(["http://a:1/v1", "http://b:1/v1"]), _fleet(["http://a:1/v1", "http://b:1/v1"])
    from orchrm.llm import GenerateConfig, Message

    msgs = [Message(role="user", content="x")]
    assert cache_key(a.kind, a.model_id, msgs, GenerateConfig(), 0) == cache_key(
        b.kind, b.model_id, msgs, GenerateConfig(), 0
    )


def _orchrm(*args):
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "orchrm", *args], capture_output=True, text=True, timeout=120)


def test_cli_base_url_takes_a_comma_separated_fleet(fleet):
    urls = f"{_dead_url()},{fleet[1].url}"
    out = _orchrm("generate", "hello", "--backend", "openai", "--base-url", urls, "--retries", "0", "--no-cache")
    assert out.returncode == 0, out.stderr
    assert "from 1" in out.stdout


def test_cli_all_endpoints_down_is_one_line():
    out = _orchrm(
        "generate",
        "hello",
        "--backend",
        "openai",
        "--base-url",
        f"{_dead_url()},{_dead_url()}",
        "--retries",
        "0",
        "--no-cache",
    )
    assert out.returncode == 1 and "Traceback" not in out.stderr
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    assert lines[0].startswith("error:") and "all 2 endpoints failed" in lines[0], out.stderr


def test_run_llms_reports_failovers_per_role(fleet, capsys):
    from orchrm.cli.llms import run_llms

    dead = _dead_url()
    with run_llms("openai", "fake-model", f"{dead},{fleet[0].url}", cache=False, max_retries=0) as (orch, agent):
        assert orch is agent
        assert orch.generate("q", category="plan")[0].text == "from 0"
    err = capsys.readouterr().err
    assert err.strip() == f"orchestrator fleet failovers: {dead} failed 1 time(s) (unreachable x1)"
