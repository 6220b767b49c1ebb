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

    async def start(self) -> None:
        """Get ready to answer (start a server, learn the model name). Called before every request; cheap
        once done."""

    @abstractmethod
    async def complete(self, messages: list[Message], config: GenerateConfig, seed: int | None) -> Completion:
        """One completion. Raises an `LLMError` subclass for an expected failure."""

    async def aclose(self) -> None:
        """Release connections and processes. Safe to call twice."""
