import asyncio

import pytest

from orchrm.errors import BackendUnreachable, ConfigError, SchemaViolation
from orchrm.llm import LLM, GenerateConfig, ResponseCache
from orchrm.llm.scripted import ScriptedBackend

SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "integer"}},
    "required": ["answer"],
    "additionalProperties": False,
}


def test_n_samples_with_distinct_seeds_and_usage_recorded():
    backend = ScriptedBackend(["one two", "three"])
    llm = LLM(backend)
    out = llm.generate("count please", category="plan", n=2, seed=7, temperature=0.8)
    assert [c.sample_index for c in out] == [0, 1]
    assert sorted(c.text for c in out) == ["one two", "three"]
    assert sorted(seed for _, _, seed in backend.calls) == [7, 8]
    totals = llm.ledger.totals()
    assert totals["plan"].calls == 2
    assert totals["plan"].prompt_tokens == 4  # two words per prompt, two calls
    assert totals["plan"].completion_tokens == 3


def test_cached_rerun_spends_nothing(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite")
    first = LLM(ScriptedBackend("fresh answer"), cache=cache)
    first.generate("q", category="execute", n=3)
    again_backend = ScriptedBackend("a different answer")
    again = LLM(again_backend, cache=cache)
    out = again.generate("q", category="execute", n=3)
    assert again_backend.calls == []
    assert all(c.cached and c.text == "fresh answer" for c in out)
    t = again.ledger.totals()["execute"]
    assert t.cached_calls == 3 and t.spent_tokens == 0 and t.total_tokens == first.ledger.total().total_tokens


def test_more_samples_reuse_cached_ones(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite")
    LLM(ScriptedBackend("x"), cache=cache).generate("q", category="plan", n=2)
    backend = ScriptedBackend("y")
    out = LLM(backend, cache=cache).generate("q", category="plan", n=4)
    assert len(backend.calls) == 2
    assert [c.cached for c in out] == [True, True, False, False]


def test_use_cache_false_bypasses(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite")
    LLM(ScriptedBackend("x"), cache=cache).generate("q", category="plan")
    backend = ScriptedBackend("y")
    out = LLM(backend, cache=cache).generate("q", category="plan", use_cache=False)
    assert out[0].text == "y" and not out[0].cached


def test_schema_output_is_checked_and_valid_output_cached(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite")
    llm = LLM(ScriptedBackend('{"answer": 4}'), cache=cache)
    out = llm.generate("2+2?", category="verify", json_schema=SCHEMA)
    assert out[0].json_value() == {"answer": 4}
    assert len(cache) == 1


@pytest.mark.parametrize(
    "reply, match",
    [
        ('{"answer": "four"}', "violates the schema at answer"),
        ("four", "not valid JSON"),
        ('{"answer": 4, "x": 1}', "Additional"),
    ],
)
def test_schema_violation_raises_records_usage_and_is_not_cached(tmp_path, reply, match):
    cache = ResponseCache(tmp_path / "c.sqlite")
    llm = LLM(ScriptedBackend(reply), cache=cache)
    with pytest.raises(SchemaViolation, match=match) as info:
        llm.generate("2+2?", category="verify", json_schema=SCHEMA)
    assert info.value.text == reply
    assert len(cache) == 0
    assert llm.ledger.totals()["verify"].spent_completion_tokens > 0  # the tokens were spent all the same


def test_a_sample_cut_off_at_max_tokens_is_cached_so_a_rerun_sees_it_again(tmp_path):
    # A plan cut off at max_tokens is an invalid plan of that run; a rerun replaying the cache must see the same
    # plan, not a fresh sample (the demo's best-of-N table is reproduced by `bon --profile demo` this way).
    cut = '{"answer": 1234 and more words'
    first = LLM(ScriptedBackend(cut), cache=ResponseCache(tmp_path / "c.sqlite"))
    out = first.generate("q", category="plan", json_schema=SCHEMA, max_tokens=2, strict=False)
    assert out[0].finish_reason == "length" and not out[0].cached
    first.close()
    again = LLM(ScriptedBackend('{"answer": 4}'), cache=ResponseCache(tmp_path / "c.sqlite"))
    replay = again.generate("q", category="plan", json_schema=SCHEMA, max_tokens=2, strict=False)
    assert replay[0].cached and replay[0].text == out[0].text and replay[0].finish_reason == "length"
    with pytest.raises(SchemaViolation, match="cut off"):  # strict still refuses it, replayed or not
        again.generate("q", category="plan", json_schema=SCHEMA, max_tokens=2)
    fresh = again.generate("q", category="plan", json_schema=SCHEMA, max_tokens=64)  # another limit: another key
    assert fresh[0].json_value() == {"answer": 4} and not fresh[0].cached


def test_truncated_json_says_raise_max_tokens():
    llm = LLM(ScriptedBackend('{"answer": 1234 and more words'))
    with pytest.raises(SchemaViolation, match="cut off at max_tokens=2") as info:
        llm.generate("q", category="verify", json_schema=SCHEMA, max_tokens=2)
    assert "raise max_tokens" in str(info.value)


def test_invalid_schema_is_a_config_error():
    with pytest.raises(ConfigError, match="schema"):
        LLM(ScriptedBackend("x")).generate("q", category="verify", json_schema={"type": "no-such-type"})


def test_backend_error_propagates_but_successful_samples_are_cached(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite")
    backend = ScriptedBackend(["ok", BackendUnreachable("down")])
    llm = LLM(backend, cache=cache, config=GenerateConfig())
    with pytest.raises(BackendUnreachable):
        llm.generate("q", category="execute", n=2)
    assert len(cache) == 1
    assert llm.ledger.totals()["execute"].calls == 1


def test_concurrency_is_bounded_by_backend():
    in_flight = 0
    peak = 0

    async def main():
        backend = ScriptedBackend("x", delay_s=0.02, concurrency=3)
        original = backend.complete

        async def counting(*args):
            nonlocal in_flight, peak
            in_flight += 1
            peak = max(peak, in_flight)
            try:
                return await original(*args)
            finally:
                in_flight -= 1

        backend.complete = counting
        await LLM(backend).agenerate("q", category="execute", n=10)

    asyncio.run(main())
    assert peak == 3


def test_sync_generate_inside_a_loop_is_refused():
    async def main():
        LLM(ScriptedBackend("x")).generate("q", category="plan")

    with pytest.raises(ConfigError, match="agenerate"):
        asyncio.run(main())


def test_category_and_n_are_checked():
    llm = LLM(ScriptedBackend("x"))
    with pytest.raises(ConfigError):
        llm.generate("q", category="")
    with pytest.raises(ConfigError):
        llm.generate("q", category="plan", n=0)


class _Closing(ScriptedBackend):
    closed = 0

    async def aclose(self) -> None:
        self.closed += 1


def test_async_with_stops_the_backend_and_closes_the_cache(tmp_path):
    backend = _Closing("x")

    async def main():
        async with LLM(backend, cache=ResponseCache(tmp_path / "c.sqlite")) as llm:
            await llm.agenerate("q", category="plan")
        return llm

    llm = asyncio.run(main())
    assert backend.closed == 1
    with pytest.raises(Exception, match="closed"):
        len(llm.cache)


def test_aclose_closes_the_cache_like_close(tmp_path):
    for close in (lambda llm: asyncio.run(llm.aclose()), LLM.close):
        llm = LLM(_Closing("x"), cache=ResponseCache(tmp_path / "c.sqlite"))
        llm.generate("q", category="plan")
        close(llm)
        assert llm.backend.closed == 1
        with pytest.raises(Exception, match="closed"):
            len(llm.cache)


def test_sync_with_inside_a_loop_says_to_use_async_with(tmp_path):
    backend = _Closing("x")

    async def main():
        with LLM(backend, cache=ResponseCache(tmp_path / "c.sqlite")) as llm:
            await llm.agenerate("q", category="plan")

    with pytest.raises(ConfigError, match="running event loop") as err:
        asyncio.run(main())
    assert "async with" in (err.value.hint or "") and backend.closed == 0
