"""Identical requests in flight at once go to the backend once; the followers get the leader's answer as a
cache hit, and ask for themselves when the leader brings back nothing the cache keeps."""

import asyncio

from orchrm.llm import LLM, ResponseCache
from orchrm.llm.scripted import ScriptedBackend

SCHEMA = {"type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"]}


def _llm(tmp_path, replies, **kw) -> tuple[LLM, ScriptedBackend]:
    backend = ScriptedBackend(replies, delay_s=0.05, **kw)
    return LLM(backend, cache=ResponseCache(tmp_path / "c.sqlite")), backend


async def _together(llm: LLM, *prompts: str, **kw):
    return await asyncio.gather(*(llm.agenerate(p, category="execute", **kw) for p in prompts))


def test_identical_concurrent_requests_are_sent_once_and_the_followers_count_as_cached(tmp_path):
    llm, backend = _llm(tmp_path, ["the answer", "another"])
    first, second, other = asyncio.run(_together(llm, "same prompt", "same prompt", "other prompt"))
    assert len(backend.calls) == 2  # "same prompt" once, "other prompt" once
    assert first[0].text == second[0].text and not first[0].cached and second[0].cached
    assert other[0].text != first[0].text
    t = llm.ledger.totals()["execute"]
    assert t.calls == 3 and t.cached_calls == 1  # the method's tokens count every caller; spent, the sent ones
    assert t.spent_tokens == sum(c.usage.total_tokens for c in (first[0], other[0]))


def test_only_the_same_sample_is_shared(tmp_path):
    llm, backend = _llm(tmp_path, ["a", "b", "c"])

    async def both():
        return await asyncio.gather(
            llm.agenerate("p", category="execute", indices=[0]), llm.agenerate("p", category="execute", indices=[1])
        )

    zero, one = asyncio.run(both())
    assert len(backend.calls) == 2 and not zero[0].cached and not one[0].cached  # sample 1 is another request


def test_a_leader_whose_reply_the_cache_would_not_keep_leaves_the_follower_to_ask(tmp_path):
    llm, backend = _llm(tmp_path, ["not json", '{"answer": 4}'])
    first, second = asyncio.run(_together(llm, "q", "q", json_schema=SCHEMA, strict=False))
    assert len(backend.calls) == 2  # the off-schema reply is not shared, as the cache would not have replayed it
    assert {first[0].text, second[0].text} == {"not json", '{"answer": 4}'}


def test_a_failed_leader_leaves_the_follower_to_ask(tmp_path):
    llm, backend = _llm(tmp_path, [RuntimeError("server fell over"), "fine"])

    async def run():
        return await asyncio.gather(
            llm.agenerate("q", category="execute"), llm.agenerate("q", category="execute"), return_exceptions=True
        )

    first, second = asyncio.run(run())
    assert isinstance(first, RuntimeError) and second[0].text == "fine" and not second[0].cached
    assert len(backend.calls) == 2


def test_without_a_cache_every_request_is_sent(tmp_path):
    backend = ScriptedBackend("x", delay_s=0.05)
    llm = LLM(backend)
    asyncio.run(_together(llm, "q", "q"))
    assert len(backend.calls) == 2  # no cache: the caller asked for independent calls
