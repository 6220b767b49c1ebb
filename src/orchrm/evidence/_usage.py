"""Token tallies of the evaluator's calls, all kept in `TokenCount` (the ledger's own counter)."""

from __future__ import annotations

from collections.abc import Iterable

from ..errors import SchemaViolation
from ..llm import Completion, TokenCount


def count_completions(into: TokenCount, completions: Iterable[Completion]) -> None:
    for c in completions:
        into.count(c.usage.prompt_tokens, c.usage.completion_tokens, c.cached)


def count_violation(into: TokenCount, exc: SchemaViolation) -> None:
    """A reply that broke the schema was still a call, and its tokens were spent."""
    usage = exc.usage
    into.count(getattr(usage, "prompt_tokens", 0), getattr(usage, "completion_tokens", 0), False)


def summed(counts: Iterable[TokenCount]) -> TokenCount:
    counts = list(counts)
    return TokenCount(**{name: sum(getattr(c, name) for c in counts) for name in TokenCount.model_fields})


def judgment_fields(count: TokenCount) -> dict[str, int]:
    """A count as the token fields a `Judgment` writes."""
    return {
        "prompt_tokens": count.prompt_tokens,
        "completion_tokens": count.completion_tokens,
        "llm_calls": count.calls,
    }
