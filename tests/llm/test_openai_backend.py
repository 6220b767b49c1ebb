import socket

import pytest

from fake_openai import Reply
from orchrm.errors import (
    BackendHTTPError,
    BackendTimeout,
    BackendUnreachable,
    ContextOverflow,
    MalformedResponse,
    SchemaViolation,
)
from orchrm.llm import LLM, OpenAIBackend, ResponseCache


def _llm(url, tmp_path=None, **kwargs):
    kwargs.setdefault("max_retries", 2)
    backend = OpenAIBackend(url, "fake-model", **kwargs)
    cache = ResponseCache(tmp_path / "c.sqlite") if tmp_path else None
    return LLM(backend, cache=cache)


def test_request_and_usage(fake, monkeypatch):
    monkeypatch.setenv("MY_KEY", "sk-test")
    fake.queue(Reply(text="pong", usage={"prompt_tokens": 7, "completion_tokens": 1}))
    llm = _llm(fake.url, api_key_env="MY_KEY")
    out = llm.generate(
        "ping", category="execute", system="s", temperature=0.3, top_p=0.9, max_tokens=9, stop=["\n"], seed=5
    )
    assert out[0].text == "pong" and out[0].usage.prompt_tokens == 7 and out[0].usage.completion_tokens == 1
    req = fake.requests[0]
    assert req["messages"] == [{"role": "system", "content": "s"}, {"role": "user", "content": "ping"}]
    assert (req["temperature"], req["top_p"], req["max_tokens"], req["stop"], req["seed"]) == (0.3, 0.9, 9, ["\n"], 5)
    assert req["_auth"] == "Bearer sk-test"


def test_model_name_discovered_from_server(fake):
    llm = LLM(OpenAIBackend(fake.url, max_retries=0))
    llm.generate("x", category="execute")
    assert fake.requests[0]["model"] == "fake-model"
    assert llm.backend.model_id == f"fake-model@{fake.url}"


def test_model_id_read_before_any_request_asks_the_server(fake):
    backend = OpenAIBackend(fake.url, max_retries=0)
    assert backend.model_id == f"fake-model@{fake.url}"
    assert backend.model == "fake-model"


def test_model_id_of_an_unreachable_server_names_it():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(BackendUnreachable, match=f"cannot reach http://127.0.0.1:{port}/v1"):
        _ = OpenAIBackend(f"http://127.0.0.1:{port}/v1", max_retries=0).model_id


def test_structured_output_sends_schema(fake):
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    fake.queue(Reply(text='{"a": 3}'))
    out = _llm(fake.url).generate("x", category="verify", json_schema=schema)
    assert out[0].json_value() == {"a": 3}
    fmt = fake.requests[0]["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["schema"] == schema


def test_schema_violating_server_output_is_an_error_not_cached(fake, tmp_path):
    fake.queue(Reply(text="not json at all"))
    llm = _llm(fake.url, tmp_path)
    with pytest.raises(SchemaViolation, match="not valid JSON"):
        llm.generate("x", category="verify", json_schema={"type": "object"})
    assert len(llm.cache) == 0


def test_retries_429_and_5xx_then_succeeds(fake):
    fake.queue(Reply(status=429, text="slow down"), Reply(status=503, text="busy"), Reply(text="finally"))
    out = _llm(fake.url).generate("x", category="execute")
    assert out[0].text == "finally" and len(fake.requests) == 3


def test_retries_exhausted_names_status(fake):
    fake.queue(*[Reply(status=500, text="boom")] * 3)
    with pytest.raises(BackendHTTPError, match="HTTP 500: boom") as info:
        _llm(fake.url).generate("x", category="execute")
    assert info.value.status == 500 and len(fake.requests) == 3


def test_client_error_is_not_retried(fake):
    fake.queue(Reply(status=404, text="model nope not found"))
    with pytest.raises(BackendHTTPError, match="404") as info:
        _llm(fake.url).generate("x", category="execute")
    assert "/v1" in str(info.value) and len(fake.requests) == 1


def test_context_overflow_is_recognised(fake):
    fake.queue(Reply(status=400, text="the request exceeds the available context size, try increasing it"))
    with pytest.raises(ContextOverflow, match="context window"):
        _llm(fake.url).generate("x", category="execute")


def test_timeout_after_retries(fake):
    fake.queue(*[Reply(delay_s=1.5)] * 2)
    with pytest.raises(BackendTimeout, match="did not answer within 0.3s"):
        _llm(fake.url, timeout_s=0.3, max_retries=1).generate("x", category="execute")


def test_dropped_connection_is_retried(fake):
    fake.queue(Reply(drop=True), Reply(text="back"))
    assert _llm(fake.url).generate("x", category="execute")[0].text == "back"


def test_unreachable_server():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(BackendUnreachable, match=f"cannot reach http://127.0.0.1:{port}/v1"):
        _llm(f"http://127.0.0.1:{port}/v1", max_retries=1).generate("x", category="execute")


@pytest.mark.parametrize(
    "reply",
    [
        Reply(body=b"{not json"),
        Reply(body=b'{"object": "chat.completion"}'),
        Reply(body=b'{"choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 1}}'),
        Reply(usage=None),
    ],
    ids=["invalid-json", "no-choices", "empty-choices", "no-usage"],
)
def test_malformed_responses(fake, tmp_path, reply):
    fake.queue(reply)
    llm = _llm(fake.url, tmp_path)
    with pytest.raises(MalformedResponse):
        llm.generate("x", category="execute")
    assert len(llm.cache) == 0
