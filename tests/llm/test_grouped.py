"""A prompt's n samples from one request: one request, the prompt billed once, nothing mis-attributed."""

import asyncio

import pytest

from fake_openai import FakeOpenAI, Reply
from orchrm.llm import LLM, OpenAIBackend, ResponseCache
from orchrm.llm.grouped import split_tokens
from orchrm.llm.permits import Permits


@pytest.fixture
def server(request):
    owner, n_mode = getattr(request, "param", ("openai", "ok"))
    fake = FakeOpenAI(owner=owner, n_mode=n_mode)
    fake.start()
    yield fake
    fake.stop()


def _texts(fake, n):
    fake.queue(*(Reply(text=" ".join(["w"] * (k + 1))) for k in range(n)))


def _llm(fake, tmp_path=None):
    cache = ResponseCache(tmp_path / "c.sqlite") if tmp_path else None
    return LLM(OpenAIBackend(fake.url, "fake-model", max_retries=0, concurrency=4), cache=cache)


@pytest.mark.parametrize("server", [("openai", "ok"), ("llamacpp", "ok")], indirect=True)
def test_n_samples_are_one_request_with_the_prompt_billed_once(server):
    _texts(server, 4)
    llm = _llm(server)
    out = llm.generate("q", category="plan", n=4, seed=10, temperature=0.8)
    assert len(server.requests) == 1
    req = server.requests[0]
    assert req.get("n", req.get("n_cmpl")) == 4 and req["seed"] == 10
    assert [c.text.count("w") for c in out] == [1, 2, 3, 4] and [c.sample_index for c in out] == [0, 1, 2, 3]
    assert out[0].usage.prompt_tokens > 0 and all(c.usage.prompt_tokens == 0 for c in out[1:])
    assert [c.usage.completion_tokens for c in out] == [1, 2, 3, 4] and all(c.group == 4 for c in out)
    totals = llm.ledger.totals()["plan"]
    assert totals.calls == 4 and totals.prompt_tokens == out[0].usage.prompt_tokens and totals.completion_tokens == 10


@pytest.mark.parametrize("server", [("llamacpp", "ok")], indirect=True)
def test_a_llama_server_is_asked_on_its_own_route_and_reports_cached_prompt_tokens(server):
    _texts(server, 2)
    llm = _llm(server)
    out = llm.generate("q", category="plan", n=2, seed=1)
    assert server.requests[0].get("_native") and server.requests[0]["cache_prompt"] is True
    assert out[0].usage.cached_prompt_tokens == 2 and llm.ledger.totals()["plan"].cached_prompt_tokens == 2


@pytest.mark.parametrize(
    "server", [("openai", "ignore"), ("openai", "fewer"), ("llamacpp", "ignore"), ("llamacpp", "fewer")], indirect=True
)
def test_samples_a_server_left_out_are_asked_for_again_one_by_one(server):
    _texts(server, 8)
    llm = _llm(server)
    out = llm.generate("q", category="plan", n=4, seed=3)
    assert [c.sample_index for c in out] == [0, 1, 2, 3]
    singles = [r for r in server.requests[1:]]
    returned = 1 if server.n_mode == "ignore" else 3
    assert len(singles) == 4 - returned
    assert sorted(r["seed"] for r in singles) == [3 + i for i in range(returned, 4)]  # each missing one, its own seed
    assert llm.ledger.totals()["plan"].calls == 4


@pytest.mark.parametrize("server", [("openai", "reversed"), ("llamacpp", "reversed")], indirect=True)
def test_completions_out_of_order_are_put_back_by_index(server):
    _texts(server, 3)
    out = _llm(server).generate("q", category="plan", n=3, seed=0)
    assert [c.text.count("w") for c in out] == [1, 2, 3]


@pytest.mark.parametrize("server", [("openai", "refuse")], indirect=True)
def test_a_server_that_refuses_n_is_asked_per_sample_and_says_so_once(server):
    _texts(server, 9)
    llm = _llm(server)
    with pytest.warns(UserWarning, match="refused a request for 3 completions"):
        out = llm.generate("q", category="plan", n=3, seed=0)
    assert len(out) == 3 and all(c.group == 1 for c in out) and llm.backend.group_refused
    before = len(server.requests)
    llm.generate("q2", category="plan", n=2, seed=0)
    assert len(server.requests) == before + 2 and all(r.get("n", 1) == 1 for r in server.requests[before:])


@pytest.mark.parametrize("server", [("llamacpp", "ok")], indirect=True)
def test_a_resumed_group_asks_only_for_samples_the_cache_lacks(server, tmp_path):
    _texts(server, 8)
    llm = _llm(server, tmp_path)
    llm.generate("q", category="plan", indices=[0, 1], seed=5)
    first = len(server.requests)
    out = llm.generate("q", category="plan", n=4, seed=5)
    assert [c.cached for c in out] == [True, True, False, False]
    assert len(server.requests) == first + 1 and server.requests[-1]["n_cmpl"] == 2 and server.requests[-1]["seed"] == 7


@pytest.mark.parametrize("server", [("llamacpp", "ok")], indirect=True)
def test_groups_are_cut_to_the_servers_slots(server):
    _texts(server, 9)
    out = _llm(server).generate("q", category="plan", n=9, seed=0)  # 4 slots: 4 + 4 + 1
    assert len(out) == 9
    assert sorted(r.get("n_cmpl", 1) for r in server.requests) == [1, 4, 4]


def test_split_tokens_keeps_the_total():
    assert split_tokens(10, [1, 1, 1]) == [4, 3, 3] and sum(split_tokens(7, [0, 5, 2])) == 7
    assert split_tokens(5, [0, 0]) == [3, 2] and split_tokens(0, [4]) == [0]


def test_permits_serve_a_group_before_later_singles():
    async def main():
        permits = Permits(4)
        order = []
        held = [await permits.acquire(1) for _ in range(3)]  # 3 of 4 slots busy

        async def take(name, k):
            got = await permits.acquire(k)
            order.append(name)
            permits.release(got)

        group = asyncio.create_task(take("group", 4))
        await asyncio.sleep(0)
        single = asyncio.create_task(take("single", 1))  # a free permit exists, but the group waits first
        await asyncio.sleep(0)
        assert order == []
        for k in held:
            permits.release(k)
        await asyncio.gather(group, single)
        return order, permits.free

    assert asyncio.run(main()) == (["group", "single"], 4)


def test_hostile_json_from_a_model_is_a_schema_violation_not_a_crash(fake):
    from orchrm.errors import SchemaViolation

    schema = {"type": "object"}
    fake.queue(Reply(text="[" * 100_000 + "]" * 100_000), Reply(text='{"a": ' + "9" * 5000 + "}"))
    llm = LLM(OpenAIBackend(fake.url, "fake-model", max_retries=0))
    for _ in range(2):
        with pytest.raises(SchemaViolation, match="not valid JSON"):
            llm.generate("q", category="verify", json_schema=schema)
