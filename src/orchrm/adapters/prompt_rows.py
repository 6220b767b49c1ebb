"""The orchestrator's training prompts as rows of an RL framework's dataset (`orchrm prompts`).

Every row's chat prompt is the one `train-orchestrator` trains on: the task's questions drawn as
`grpo.data.prompt_dataset` draws them (`Task.questions(n, split, seed)`), each under the orchestrator's own system
prompt and user turn (`mas.orchestrator.system_prompt`, `plan_messages`), so a policy trained in a framework
sees at rollout what `orchrm rollout` and `bon` send it. Each row carries the question where that framework's
adapter reads it:

- verl: `prompt` (verl's `data.prompt_key`), `data_source`, `ability`, `reward_model.ground_truth`,
  `extra_info.question` (what `orchrm.adapters.verl` scores against) and `extra_info.index`;
- openrlhf: `prompt` (`--data.input_key prompt --data.apply_chat_template`), `question` (`--data.label_key
  question`: the label is all OpenRLHF hands its reward) and `datasource` (its per-source metrics);
- trl: `prompt` (a conversational prompt) and `question` (`TRLReward`'s default `question_column`).

The file is Parquet or JSON Lines by its suffix (`.parquet`, `.jsonl`): both load in verl's `RLHFDataset`,
OpenRLHF's `blending_datasets` and `datasets.load_dataset`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from orchrm.atomic import open_atomic, write_text_atomic
from orchrm.errors import ConfigError
from orchrm.mas.orchestrator import plan_messages, system_prompt
from orchrm.mas.rollout import agent_types_for
from orchrm.mas.run_config import Degree
from orchrm.tasks.base import Question, Split, Task

__all__ = ["PROMPT_FORMATS", "PromptFormat", "PromptRows", "prompt_rows", "write_prompt_rows"]

PromptFormat = Literal["verl", "openrlhf", "trl"]
PROMPT_FORMATS: tuple[PromptFormat, ...] = ("verl", "openrlhf", "trl")
SUFFIXES = (".parquet", ".jsonl")


class _Row(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ChatMessage(_Row):
    role: Literal["system", "user"]
    content: str


class VerlRewardModel(_Row):
    # verl's `naive` reward manager reads `reward_model["ground_truth"]` from every row before it calls the reward
    # function: the key is always written, null where the task has no answer.
    style: Literal["model"] = "model"
    ground_truth: str | None


class VerlExtraInfo(_Row):
    question: str
    question_id: str
    split: Split
    index: int  # verl's RLHFDataset lifts it to the row's `index` (its rollout traces name samples by it)


class VerlRow(_Row):
    # `data_source` is not one verl has a scorer for: a run that forgot orchrm's reward function fails on its first
    # step instead of being scored by verl's own rule for that source.
    data_source: str
    prompt: list[ChatMessage]
    ability: str = "orchestration"
    reward_model: VerlRewardModel
    extra_info: VerlExtraInfo


class OpenRLHFRow(_Row):
    prompt: list[ChatMessage]
    question: str
    question_id: str
    datasource: str


class TRLRow(_Row):
    prompt: list[ChatMessage]
    question: str
    question_id: str


PromptRow = VerlRow | OpenRLHFRow | TRLRow


class PromptRows(BaseModel):
    """The rows of one file, with what made them (the CLI reports it)."""

    format: PromptFormat
    task: str
    split: Split
    rows: list[PromptRow]

    def longest_prompt(self) -> int:
        """Characters of the longest prompt, its messages together."""
        return max((sum(len(m.content) for m in row.prompt) for row in self.rows), default=0)


def _source(task: Task) -> str:
    return f"orchrm/{task.name}"


def _verl(task: Task, q: Question, prompt: list[ChatMessage], split: Split, index: int) -> VerlRow:
    return VerlRow(
        data_source=_source(task),
        prompt=prompt,
        reward_model=VerlRewardModel(ground_truth=q.answer or None),
        extra_info=VerlExtraInfo(question=q.question, question_id=q.id, split=split, index=index),
    )


def _openrlhf(task: Task, q: Question, prompt: list[ChatMessage], split: Split, index: int) -> OpenRLHFRow:
    return OpenRLHFRow(prompt=prompt, question=q.question, question_id=q.id, datasource=_source(task))


def _trl(task: Task, q: Question, prompt: list[ChatMessage], split: Split, index: int) -> TRLRow:
    return TRLRow(prompt=prompt, question=q.question, question_id=q.id)


_BUILDERS: dict[PromptFormat, Callable[[Task, Question, list[ChatMessage], Split, int], PromptRow]] = {
    "verl": _verl,
    "openrlhf": _openrlhf,
    "trl": _trl,
}


def prompt_rows(
    task: Task,
    fmt: PromptFormat,
    *,
    split: Split = "train",
    n_questions: int = 64,
    degree: Degree = "dag",
    seed: int = 0,
    examples: bool = True,
) -> PromptRows:
    """`n_questions` of the task's `split` as `fmt`'s rows, prompted as `train-orchestrator` prompts them with the
    same `degree`, `seed` and worked `examples` (its defaults are these)."""
    if fmt not in _BUILDERS:
        raise ConfigError(f"unknown prompt format {fmt!r}; one of: {', '.join(PROMPT_FORMATS)}")
    system = system_prompt(degree, agent_types_for(task), examples=examples)
    rows = []
    for index, q in enumerate(task.questions(n_questions, split=split, seed=seed)):
        prompt = [ChatMessage.model_validate(m.model_dump()) for m in plan_messages(system, q.question, degree)]
        rows.append(_BUILDERS[fmt](task, q, prompt, split, index))
    return PromptRows(format=fmt, task=task.name, split=split, rows=rows)


def check_suffix(path: Path) -> None:
    """A file name the writer and every framework's reader agree on, refused before any question is drawn."""
    if path.suffix not in SUFFIXES:
        raise ConfigError(f"{path}: write prompts to a {' or '.join(SUFFIXES)} file (the frameworks read both)")


def write_prompt_rows(rows: Sequence[PromptRow], path: Path) -> None:
    """`rows` as Parquet or JSON Lines (by `path`'s suffix), written whole or not at all."""
    check_suffix(path)
    if path.suffix == ".jsonl":
        write_text_atomic(path, "".join(row.model_dump_json() + "\n" for row in rows))
        return
    import pyarrow as pa  # `datasets`' own Parquet engine, which verl and OpenRLHF load the file with
    import pyarrow.parquet as pq

    with open_atomic(path, "wb") as handle:
        pq.write_table(pa.Table.from_pylist([row.model_dump(mode="json") for row in rows]), handle)
