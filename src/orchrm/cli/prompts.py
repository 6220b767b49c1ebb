"""`orchrm prompts`: the orchestrator's training prompts as a verl, OpenRLHF or TRL dataset file."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer
from rich.console import Console

from ..grpo.config import GRPORunConfig
from ..mas.run_config import Degree, PlanSampling
from . import options as opt
from .say import say

if TYPE_CHECKING:
    from ..adapters.prompt_rows import PromptRows

FORMAT_HELP = (
    "verl: prompt, data_source, reward_model.ground_truth, extra_info.question; openrlhf: prompt and question "
    "(--data.input_key prompt --data.apply_chat_template --data.label_key question); trl: prompt and question."
)
TOKENIZER_HELP = (
    "Count each prompt's tokens under this model's chat template (a transformers folder or hub name) and print the "
    "longest: verl's data.max_prompt_length must hold it (verl cuts a longer prompt from the left, instructions "
    "first)."
)


def prompts(
    task: opt.TaskName,
    out: Annotated[Path, typer.Option(help="The file to write: .parquet or .jsonl (replaced whole).")],
    *,
    format: Annotated[Literal["verl", "openrlhf", "trl"], typer.Option(help=FORMAT_HELP)],
    split: Annotated[Literal["train", "test"], typer.Option(help="The task's split to draw from.")] = "train",
    n_questions: int = opt.field_option(GRPORunConfig, "n_questions"),
    seed: int = opt.field_option(PlanSampling, "seed"),
    degree: Degree = opt.field_option(PlanSampling, "degree"),
    prompt_examples: bool = opt.field_option(PlanSampling, "prompt_examples"),
    tokenizer: Annotated[str | None, typer.Option(help=TOKENIZER_HELP)] = None,
) -> None:
    """Write the orchestrator's training prompts as a verl, OpenRLHF or TRL dataset file.

    Each row holds the question where orchrm's reward reads it. Each prompt is the one `orchrm train-orchestrator` trains on with the same task, seed, degree and examples
    (its defaults are these): the orchestrator's system prompt and the question's user turn."""
    from ..adapters.prompt_rows import check_suffix, prompt_rows, write_prompt_rows
    from ..tasks import load_task

    check_suffix(out)  # before the task loads: a wrong name costs nothing
    made = prompt_rows(
        load_task(task),
        format,
        split=split,
        n_questions=n_questions,
        degree=degree,
        seed=seed,
        examples=prompt_examples,
    )
    write_prompt_rows(made.rows, out)
    longest = f"longest prompt {made.longest_prompt():,} characters"
    if tokenizer is not None:
        longest += f", {_longest_tokens(made, tokenizer):,} tokens under {tokenizer}'s chat template"
    say(
        Console(highlight=False),
        f"wrote {len(made.rows)} {format} rows ({split} split of {made.task}) to {out}; {longest}",
    )


def _longest_tokens(made: PromptRows, name: str) -> int:
    """The longest prompt's token count as the policy's chat template renders it for generation (as verl, OpenRLHF
    and TRL render a conversational prompt)."""
    from transformers import AutoTokenizer

    from ..grpo.data import chat_ids

    tok = AutoTokenizer.from_pretrained(name)
    return max(len(chat_ids(tok, [m.model_dump() for m in row.prompt])) for row in made.rows)
