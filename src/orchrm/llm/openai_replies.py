"""What an OpenAI-compatible server's answers mean to orchrm: a chat completion (its text, finish reason, tool
calls and usage), and an `openai` client error as one of orchrm's `LLMError`s with a hint. A reply carries
model text, so it is untrusted: tool-call arguments go through `safejson`, and a missing field is a
`MalformedResponse`, never an AttributeError."""

from __future__ import annotations

from typing import Any

import openai

from .. import safejson
from ..errors import BackendHTTPError, BackendTimeout, BackendUnreachable, ContextOverflow, MalformedResponse
from .llamacpp_routes import OVERFLOW_MARKERS
from .types import Completion, ToolCall, Usage

_STATUS_HINTS = {
    401: "set the API key in the environment variable the backend reads (OPENAI_API_KEY by default)",
    403: "the API key lacks access to this model",
    404: "check the model name and that the base URL ends in /v1",
    429: "the server kept rate-limiting after all retries; lower the concurrency",
}


def parse_completion(resp: Any, where: str) -> Completion:
    """A one-choice chat completion with the request's usage."""
    try:
        choice = resp.choices[0]
        usage = resp.usage
        prompt_tokens, completion_tokens = int(usage.prompt_tokens), int(usage.completion_tokens)
        details = getattr(usage, "prompt_tokens_details", None)
        cached = min(int(getattr(details, "cached_tokens", 0) or 0), prompt_tokens)
    except (AttributeError, IndexError, TypeError, ValueError) as exc:
        raise MalformedResponse(
            f"{where} returned a completion without choices, message or usage ({type(exc).__name__}: {exc})",
            hint="is this an OpenAI-compatible chat-completions endpoint?",
        ) from exc
    c = parse_choice(choice, where)
    return c.model_copy(
        update={
            "usage": Usage(
                prompt_tokens=prompt_tokens, completion_tokens=completion_tokens, cached_prompt_tokens=max(cached, 0)
            )
        }
    )


def parse_choice(choice: Any, where: str) -> Completion:
    """One choice's text, finish reason and tool calls (usage is the caller's: it belongs to the request)."""
    try:
        text = choice.message.content
        finish = str(choice.finish_reason or "stop")
    except AttributeError as exc:
        raise MalformedResponse(f"{where} returned a choice without a message ({exc})") from exc
    calls = _tool_calls(choice.message, where)
    if not isinstance(text, str):
        if not calls:
            raise MalformedResponse(f"{where} returned a completion with no text content")
        text = ""
    return Completion(
        text=text, finish_reason=finish, usage=Usage(prompt_tokens=0, completion_tokens=0), tool_calls=calls or None
    )


def _tool_calls(message: Any, where: str) -> list[ToolCall]:
    """The message's function tool calls; arguments that are not a JSON object are a malformed response."""
    out = []
    for call in getattr(message, "tool_calls", None) or []:
        fn = getattr(call, "function", None)
        try:
            args = safejson.loads(fn.arguments or "{}")
        except (AttributeError, safejson.UnsafeJSONError, TypeError) as exc:
            raise MalformedResponse(f"{where} returned a tool call whose arguments are not JSON: {exc}") from exc
        if not isinstance(args, dict):
            raise MalformedResponse(f"{where} returned a tool call whose arguments are not a JSON object")
        out.append(ToolCall(name=str(fn.name), arguments=args, id=getattr(call, "id", None)))
    return out


def translate_error(exc: openai.OpenAIError, where: str, *, timeout_s: float, retries: int) -> Exception:
    """The `LLMError` an `openai` client error means, after the client's `retries` retries."""
    if isinstance(exc, openai.APITimeoutError):
        return BackendTimeout(
            f"{where} did not answer within {timeout_s:g}s (tried {retries + 1} times)",
            hint="raise the timeout or lower the load on the server",
        )
    if isinstance(exc, openai.APIConnectionError):
        return BackendUnreachable(
            f"cannot reach {where} (tried {retries + 1} times): {exc.__cause__ or exc}",
            hint="is the server running, and is that its URL (ending in /v1)?",
        )
    if isinstance(exc, openai.APIResponseValidationError):
        return MalformedResponse(f"{where} returned a response that is not valid OpenAI JSON: {exc}")
    if isinstance(exc, openai.APIStatusError):
        detail = _error_text(exc)
        status = exc.status_code
        if status == 400 and any(m in detail.lower() for m in OVERFLOW_MARKERS):
            return ContextOverflow(
                f"the prompt does not fit the model's context window: {detail}",
                hint="shorten the prompt, lower max_tokens, or serve the model with a larger context",
            )
        hint = _STATUS_HINTS.get(status, "the server's retries ran out" if status >= 500 else None)
        return BackendHTTPError(f"{where} answered HTTP {status}: {detail}", status=status, hint=hint)
    return MalformedResponse(f"{where}: {type(exc).__name__}: {exc}")


def _error_text(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict) and err.get("message"):
            return " ".join(str(err["message"]).split())
    text = getattr(exc.response, "text", "") or str(exc)
    return " ".join(text.split())[:300]
