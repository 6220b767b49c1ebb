"""`orchrm demo`: the main job on the embedded default model (grows with the pipeline)."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.console import Console
from rich.panel import Panel

from ..llm import DEFAULT_MODEL, open_llm
from .render import usage_table

QUESTION = (
    "A baker makes 3 batches of 24 muffins. She packs them in boxes of 6 and sells each box for $4. "
    "How many dollars does she earn if she sells every box?"
)
ANSWER_SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "integer"}},
    "required": ["answer"],
    "additionalProperties": False,
}


def demo(
    model: Annotated[str, typer.Option(help="Embedded model name or .gguf path.")] = DEFAULT_MODEL,
) -> None:
    """Answer a sample question with the embedded model and show what it cost in tokens."""
    console = Console(highlight=False)
    console.print(f"[bold]question:[/] {QUESTION}")
    with open_llm("local", model=model) as llm:
        reasoning = llm.generate(
            QUESTION,
            category="execute",
            system="Solve the problem step by step, briefly. End with a line 'Answer: <number>'.",
            max_tokens=320,
        )[0]
        console.print(Panel(reasoning.text, title=f"{model} reasoning", title_align="left"), markup=False)
        extracted = llm.generate(
            f"Problem: {QUESTION}\n\nSolution:\n{reasoning.text}\n\nReturn the solution's final answer as JSON.",
            category="verify",
            json_schema=ANSWER_SCHEMA,
            max_tokens=32,
        )[0]
        console.print(f"[bold]answer (schema-constrained JSON):[/] {json.dumps(extracted.json_value())}  [dim](expected 48)[/]")
        console.print(usage_table(llm.ledger))
        if llm.ledger.total().cached_calls:
            console.print("[dim]cached calls were answered from the response cache and spent no tokens now[/]")
