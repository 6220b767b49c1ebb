"""The text of a trainer's completion, the one place it is read: GRPO's plan rewards (`grpo.rewards`) and the
TRL reward adapter (`adapters.trl`) both take a completion's text from here.

A leaf with no orchrm imports, so the adapters stay light to import inside a trainer's reward worker.
"""

from __future__ import annotations

from typing import Any


def completion_text(completion: Any) -> str:
    """A TRL completion: plain text, or the assistant messages of a conversational prompt."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, dict):
        completion = [completion]
    return "".join(m.get("content") or "" for m in completion if isinstance(m, dict) and m.get("role") == "assistant")
