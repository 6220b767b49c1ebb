"""Native tool calling through OpenAIBackend, against the fake OpenAI server."""

import json

import pytest

from fake_openai import Reply
from orchrm.errors import MalformedResponse
from orchrm.llm import LLM, GenerateConfig, OpenAIBackend

TOOLS = [
    {
        "type": "function",
        "function": {"name": "add", "parameters": {"type": "object", "properties": {"x": {"type": "integer"}}}},
    }
]


def tool_body(name, arguments, content=None):
    return json.dumps(
        {
            "id": "c1",
            "object": "chat.completion",
            "created": 0,
            "model": "m",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "tool_calls",
                    "message": {
                        "role": "assistant",
                        "content": content,
                        "tool_calls": [
                            {"id": "call_1", "type": "function", "function": {"name": name, "arguments": arguments}}
                        ],
                    },
                }
            ],
            "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10},
        }
    ).encode()


def test_tools_are_sent_and_tool_calls_parsed(fake):
    fake.queue(Reply(body=tool_body("add", '{"x": 2}')))
    llm = LLM(OpenAIBackend(fake.url, "m"))
    c = llm.generate("add two", category="verify", tools=TOOLS, tool_choice="required")[0]
    assert c.text == "" and c.tool_calls[0].name == "add" and c.tool_calls[0].arguments == {"x": 2}
    assert fake.requests[0]["tools"] == TOOLS and fake.requests[0]["tool_choice"] == "required"
    assert llm.ledger.totals()["verify"].prompt_tokens == 7
    llm.close()


def test_requests_without_tools_are_unchanged(fake):
    llm = LLM(OpenAIBackend(fake.url, "m"))
    c = llm.generate("hi", category="execute")[0]
    assert c.tool_calls is None and "tools" not in fake.requests[0] and "tool_choice" not in fake.requests[0]
    llm.close()


def test_tool_arguments_that_are_not_json_are_malformed(fake):
    fake.queue(Reply(body=tool_body("add", "{x: 2")))
    llm = LLM(OpenAIBackend(fake.url, "m"))
    with pytest.raises(MalformedResponse, match="not JSON"):
        llm.generate("add", category="verify", tools=TOOLS)
    llm.close()


def test_tools_change_the_cache_key():
    from orchrm.llm.types import Message, cache_key

    msgs = [Message(role="user", content="x")]
    plain, with_tools = GenerateConfig(), GenerateConfig(tools=TOOLS)
    assert cache_key("openai", "m", msgs, plain, 0) != cache_key("openai", "m", msgs, with_tools, 0)


def test_requests_without_tools_keep_their_pre_tools_cache_key():
    import hashlib

    from orchrm.llm.types import Message, cache_key

    msgs = [Message(role="user", content="x")]
    cfg = GenerateConfig(seed=3)
    legacy = {k: v for k, v in cfg.model_dump(mode="json").items() if k not in ("tools", "tool_choice")}
    payload = {
        "backend": "local",
        "model": "m",
        "messages": [m.model_dump() for m in msgs],
        "config": legacy,
        "index": 0,
    }
    blob = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert cache_key("local", "m", msgs, cfg, 0) == hashlib.sha256(blob.encode()).hexdigest()
