"""A backend that replays fixed responses: for unit tests only, never selectable from the CLI."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable

from .backend import Backend
from .types import Completion, GenerateConfig, Message, Usage

Reply = str | Exception | Callable[[list[Message], GenerateConfig], "str | Exception"]


def count_words(text: str) -> int:
    """The scripted backend's token count: whitespace-separated words, so tests can predict usage."""
    return len(text.split())


class ScriptedBackend(Backend):
    """Answers each request with the next scripted reply (a string, an exception to raise, or a function).

    When the script runs out it repeats the last reply. `calls` records every request it received.
    """

    kind = "scripted"

    def __init__(
        self,
        replies: Iterable[Reply] | str,
        *,
        name: str = "scripted-model",
        finish_reason: str = "stop",
        delay_s: float = 0.0,
        concurrency: int = 4,
    ) -> None:
        self.replies: list[Reply] = [replies] if isinstance(replies, str) else list(replies)
        if not self.replies:
            raise ValueError("ScriptedBackend needs at least one reply")
        self.name = name
        self.finish_reason = finish_reason
        self.delay_s = delay_s
        self.concurrency = concurrency
        self.calls: list[tuple[list[Message], GenerateConfig, int | None]] = []

    @property
    def model_id(self) -> str:
        return self.name

    @property
    def max_concurrency(self) -> int:
        return self.concurrency

    async def complete(self, messages: list[Message], config: GenerateConfig, seed: int | None) -> Completion:
        reply = self.replies[min(len(self.calls), len(self.replies) - 1)]
        self.calls.append((messages, config, seed))
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        if callable(reply) and not isinstance(reply, Exception):
            # The function sees the sample's own config: its seed is this sample's seed.
            reply = reply(messages, config if seed == config.seed else config.model_copy(update={"seed": seed}))
        if isinstance(reply, Exception):
            raise reply
        words = reply.split()
        finish = self.finish_reason
        if len(words) > config.max_tokens:
            reply, finish = " ".join(words[: config.max_tokens]), "length"
        usage = Usage(
            prompt_tokens=sum(count_words(m.content) for m in messages),
            completion_tokens=count_words(reply),
        )
        return Completion(text=reply, finish_reason=finish, usage=usage)
