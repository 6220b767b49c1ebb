"""The one contract every backend implements: one sample for one request."""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod

from .types import Completion, GenerateConfig, Message


class Backend(ABC):
    """A source of completions. `LLM` adds sampling n times, caching, schema checks and accounting on top."""

    #: Backend family, part of every cache key ("local", "openai", "scripted").
    kind: str

    @property
    @abstractmethod
    def model_id(self) -> str:
        """What identifies the weights answering (for a GGUF file: its sha256). Part of every cache key."""

    @property
    def display_name(self) -> str:
        """The model as a person names it (a registry name, a served model's name); reports and the CLI show it
        beside `model_id`, which stays the identity the cache keys by. Default: `model_id` itself."""
        return self.model_id

    @property
    def max_concurrency(self) -> int:
        """How many requests are worth keeping in flight at once."""
        return 4

    @property
    def max_group(self) -> int:
        """How many completions of one prompt one request may carry (1: one request per sample). A server
        that samples n completions of a prompt reads the prompt once for all of them."""
        return 1

    @property
    def where(self) -> str:
        """Where the model answers, as an error message names it (a URL, a model file)."""
        return self.model_id

    async def start(self) -> None:  # noqa: B027 - an optional hook: most backends need no start
        """Get ready to answer (start a server, learn the model name). Called before every request; cheap
        once done."""

    async def ping(self) -> None:
        """Check that the model can answer at all, before any work depends on it. Raises an `LLMError` (or a
        `ServerError` for a server that cannot start) when it cannot; the default is `start()`."""
        await self.start()

    @abstractmethod
    async def complete(self, messages: list[Message], config: GenerateConfig, seed: int | None) -> Completion:
        """One completion. Raises an `LLMError` subclass for an expected failure."""

    async def complete_group(
        self, messages: list[Message], config: GenerateConfig, seeds: list[int | None]
    ) -> list[Completion]:
        """Completions of one prompt, sample k drawn with `seeds[k]`, each with `sample_index` k. A backend
        that asks one request for them all bills the prompt on one completion only; it may return fewer
        than asked (the caller asks again for the missing ones), never one under another's index. This
        default makes one request per sample."""
        done = await asyncio.gather(*(self.complete(messages, config, s) for s in seeds))
        return [c.model_copy(update={"sample_index": k}) for k, c in enumerate(done)]

    async def aclose(self) -> None:  # noqa: B027 - an optional hook: most backends hold nothing
        """Release connections and processes. Safe to call twice."""


def described(backend: Backend) -> str:
    """`qwen2.5-coder-0.5b (gguf:<sha256>)`: the name a person knows with the identity beside it; the identity
    alone when the two are one (a served model's name)."""
    name, identity = backend.display_name, backend.model_id
    return identity if name == identity else f"{name} ({identity})"
