"""The data that crosses the LLM interface: messages in, completions with usage out."""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .. import safejson

Role = Literal["system", "user", "assistant", "tool"]


class Message(BaseModel):
    """One chat message."""

    model_config = ConfigDict(frozen=True)

    role: Role
    content: str


def messages_from(prompt: str | list[Message] | list[dict[str, str]], system: str | None = None) -> list[Message]:
    """Normalise a prompt string or a list of messages into `Message`s, with an optional system prompt first."""
    if isinstance(prompt, str):
        msgs = [Message(role="user", content=prompt)]
    else:
        msgs = [m if isinstance(m, Message) else Message.model_validate(m) for m in prompt]
    if system is not None:
        msgs = [Message(role="system", content=system), *msgs]
    return msgs


class GenerateConfig(BaseModel):
    """Sampling options for one request. Everything here changes the answer, so all of it is in the cache key."""

    model_config = ConfigDict(frozen=True)

    temperature: float = Field(0.0, ge=0.0, le=2.0, description="0 is greedy.")
    top_p: float = Field(1.0, gt=0.0, le=1.0, description="Nucleus sampling mass.")
    max_tokens: int = Field(512, ge=1, description="Upper bound on completion tokens.")
    stop: tuple[str, ...] = Field((), description="Stop sequences (not included in the output).")
    seed: int | None = Field(
        None, description="Base seed; sample i is drawn with seed + i so n samples differ but reproduce."
    )
    json_schema: dict[str, Any] | None = Field(
        None, description="A JSON schema the output must satisfy; enforced by the server and checked here."
    )

    tools: list[dict[str, Any]] | None = Field(
        None, description="OpenAI-style function tools offered for native tool calling (servers that support it)."
    )
    tool_choice: str | None = Field(None, description="'auto', 'required' or 'none'; sent only with tools.")

    @field_validator("stop", mode="before")
    @classmethod
    def _stop_tuple(cls, v: Any) -> Any:
        if isinstance(v, str):
            return (v,)
        return tuple(v) if v is not None else ()

    def merge(self, **overrides: Any) -> GenerateConfig:
        """A copy with the non-None overrides applied, so call-site settings stack on run-level ones."""
        changes = {k: v for k, v in overrides.items() if v is not None}
        return self.model_validate({**self.model_dump(), **changes}) if changes else self

    def sample_seed(self, index: int) -> int | None:
        return None if self.seed is None else self.seed + index


class Usage(BaseModel):
    """Tokens one completion consumed, as the server counted them.

    A request for several completions of one prompt reads the prompt once: its first completion carries the
    prompt's tokens, the others carry none, so summing completions counts every token exactly once."""

    prompt_tokens: int = Field(ge=0)
    completion_tokens: int = Field(ge=0)
    cached_prompt_tokens: int = Field(
        0, ge=0, description="Of prompt_tokens, those the server took from its prompt cache instead of processing."
    )

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class ToolCall(BaseModel):
    """A native tool call the model made: the function's name and its JSON arguments."""

    name: str
    arguments: dict[str, Any]
    id: str | None = None


class Completion(BaseModel):
    """One sampled completion."""

    text: str
    finish_reason: str
    usage: Usage
    sample_index: int = 0
    cached: bool = Field(False, description="Served from the response cache: its usage was spent on an earlier run.")
    latency_s: float = Field(0.0, description="Wall time of the call that produced it (0 when cached).")
    tool_calls: list[ToolCall] | None = Field(None, description="Native tool calls, when tools were offered.")
    group: int = Field(
        1, ge=1, description="Completions the request that produced it returned (they share its prompt)."
    )

    def json_value(self) -> Any:
        """The text parsed as JSON (for structured output); hostile JSON (too deep, huge numbers) raises
        `UnsafeJSONError`, as `LLM` refused it already for a request with a schema."""
        return safejson.loads(self.text)


def cache_key(backend: str, model_id: str, messages: list[Message], config: GenerateConfig, index: int) -> str:
    """A stable key for one sample: what changes the answer, nothing that does not (timeouts, retries)."""
    payload = {
        "backend": backend,
        "model": model_id,
        "messages": [m.model_dump() for m in messages],
        "config": _config_for_key(config),
        "index": index,
    }
    blob = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()


def _config_for_key(config: GenerateConfig) -> dict[str, Any]:
    # Fields added after the cache format was fixed enter the key only when set, so a request that does
    # not use them keeps the key (and the cached answer) it had before they existed.
    data = config.model_dump(mode="json")
    for name in ("tools", "tool_choice"):
        if data.get(name) is None:
            data.pop(name, None)
    return data
