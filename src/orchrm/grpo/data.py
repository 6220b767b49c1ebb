"""The prompts GRPO samples plans for: the orchestrator's own prompt on the task's train questions.

Each row carries the chat messages (exactly what `Orchestrator.messages` sends at rollout, so a trained
adapter sees what it learned on), the question and its id (for the reward), and the prompt's token count
under the policy's chat template (for the token ledger: TRL does not hand prompt ids to rewards).
"""

from __future__ import annotations

from typing import Any

from ..mas.orchestrator import plan_messages, system_prompt
from ..mas.rollout import agent_types_for
from ..tasks.base import Question, Task


def chat_ids(tokenizer: Any, messages: list[dict[str, Any]]) -> list[int]:
    """The prompt's token ids under the policy's chat template, as TRL renders a conversational prompt."""
    ids = tokenizer.apply_chat_template(messages, tokenize=True, add_generation_prompt=True)
    if isinstance(ids, dict) or hasattr(ids, "keys"):  # a BatchEncoding in newer transformers
        ids = ids["input_ids"]
    return [int(i) for i in ids]


def prompt_rows(questions: list[Question], tokenizer: Any, system: str, degree: str) -> list[dict[str, Any]]:
    rows = []
    for q in questions:
        messages = [m.model_dump() for m in plan_messages(system, q.question, degree)]
        ids = chat_ids(tokenizer, messages)
        rows.append({"prompt": messages, "question": q.question, "question_id": q.id, "prompt_tokens": len(ids)})
    return rows


def prompt_dataset(
    task: Task, tokenizer: Any, *, n_questions: int, degree: str, seed: int, examples: bool = True
) -> tuple[Any, dict[str, Question]]:
    """The training prompts as a `datasets.Dataset`, and the questions by id (their scorer metadata stays
    out of the dataset, whose columns must be flat)."""
    from datasets import Dataset

    questions = task.questions(n_questions, split="train", seed=seed)
    system = system_prompt(degree, agent_types_for(task), examples=examples)
    return Dataset.from_list(prompt_rows(questions, tokenizer, system, degree)), {q.id: q for q in questions}
