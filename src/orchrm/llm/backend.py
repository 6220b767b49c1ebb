"""The one contract every backend implements: one sample for one request."""

from __future__ import annotations

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
    def max_concurrency(self) -> int:
        """How many requests are worth keeping in flight at once."""
        return 4

    @property
    def where(self) -> str:
        """Where the model answers, as an error message names it (a URL, a model file)."""
        return self.model_id

    async def start(self) -> None:
        """Get ready to answer (start a server, learn the model name). Called before every request; cheap
        once done."""

    async def ping(self) -> None:
        """Check that the model can answer at all, before any work depends on it. Raises an `LLMError` (or a
        `ServerError` for a server that cannot start) when it cannot; the default is `start()`."""
        await self.start()

    @abstractmethod
    async def complete(self, messages: list[Message], config: GenerateConfig, seed: int | None) -> Completion:
        """One completion. Raises an `LLMError` subclass for an expected failure."""

    async def aclose(self) -> None:
        """Release connections and processes. Safe to call twice."""
