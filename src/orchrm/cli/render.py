"""Tables the verbs print: completions and token usage."""

from __future__ import annotations

from rich.table import Table

from ..llm import Completion, TokenLedger
from .say import text


def completions_table(completions: list[Completion]) -> Table:
    table = Table(title="completions", title_justify="left")
    for col in ("sample", "finish", "prompt tok", "completion tok", "cached", "latency s"):
        table.add_column(col, justify="right" if col != "finish" else "left")
    for c in completions:
        table.add_row(
            str(c.sample_index),
            text(c.finish_reason),
            str(c.usage.prompt_tokens),
            str(c.usage.completion_tokens),
            "yes" if c.cached else "no",
            f"{c.latency_s:.2f}",
        )
    return table


def usage_table(ledger: TokenLedger) -> Table:
    """Tokens per category; `spent` excludes calls replayed from the response cache; `prompt from server cache`
    is the part of `prompt` the server took from its prompt cache rather than computing."""
    table = Table(title="token usage", title_justify="left")
    columns = (
        "category",
        "calls",
        "cached calls",
        "prompt",
        "prompt from server cache",
        "completion",
        "spent prompt",
        "spent completion",
    )
    for col in columns:
        table.add_column(col, justify="left" if col == "category" else "right")
    totals = ledger.totals()
    rows = [*totals.items(), ("total", ledger.total())] if len(totals) > 1 else list(totals.items())
    for name, t in rows:
        table.add_row(
            text(name),
            str(t.calls),
            str(t.cached_calls),
            str(t.prompt_tokens),
            str(t.cached_prompt_tokens),
            str(t.completion_tokens),
            str(t.spent_prompt_tokens),
            str(t.spent_completion_tokens),
        )
    return table
