"""Token ids of (question, plan): one function, so training and scoring can never disagree."""

from __future__ import annotations

from typing import Any


def encode(tokenizer: Any, prompt: str, plan: str, max_length: int) -> list[int]:
    """Question and plan as a sentence pair, truncated (longest side first) to `max_length`, never dropped."""
    return list(tokenizer(prompt, plan, truncation="longest_first", max_length=max_length)["input_ids"])
