"""The text of a trainer's completion, the one place it is read: GRPO's plan rewards (`grpo.rewards`) and the
TRL reward adapter (`adapters.trl`) both take a completion's text from here.

A leaf with no orchrm imports, so the adapters stay light to import inside a trainer's reward worker.
"""

from __future__ import annotations

from typing import Any


def completion_text(completion: Any) -> str:
    """A TRL completion: plain text, or the assistant messages of a conversational prompt, whose content is a
    string or a list of parts (`{"type": "text", "text": ...}`; other parts hold no text). Anything else is
    read as no text at all, never raised on."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, dict):
        completion = [completion]
    if not isinstance(completion, list):
        return ""
    return "".join(
        _content(m.get("content")) for m in completion if isinstance(m, dict) and m.get("role") == "assistant"
    )


def _content(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""
