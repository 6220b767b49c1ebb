"""The orchestrator's training prompts as framework rows: the prompt `train-orchestrator` trains on, the question
where each adapter reads it, and a file the frameworks' loader (`datasets`) reads back as written."""

import pytest

from orchrm.adapters.prompt_rows import PROMPT_FORMATS, prompt_rows, write_prompt_rows
from orchrm.errors import ConfigError
from orchrm.tasks import Question, Task, load_task


class CountingTokenizer:
    """Enough of a tokenizer for `grpo.data.prompt_dataset` (it counts the prompt's tokens for the ledger)."""

    def apply_chat_template(self, messages, tokenize=True, add_generation_prompt=True):
        return list(range(sum(len(m["content"]) for m in messages)))


def train_orchestrator_prompts(task, **settings):
    """The prompt set `train-orchestrator` trains on for these settings (`grpo.train._prompts`)."""
    from orchrm.grpo.data import prompt_dataset

    dataset, _ = prompt_dataset(task, CountingTokenizer(), **settings)
    return list(dataset)


@pytest.mark.parametrize("fmt", PROMPT_FORMATS)
@pytest.mark.parametrize(
    "settings",
    [
        {"n_questions": 3, "degree": "dag", "seed": 0, "examples": True},
        {"n_questions": 2, "degree": "single", "seed": 5, "examples": False},
    ],
)
def test_the_prompt_is_the_one_train_orchestrator_trains_on(fmt, settings):
    task = load_task("chain_sum")
    made = prompt_rows(task, fmt, **settings)
    trained = train_orchestrator_prompts(task, **settings)
    assert [[m.model_dump() for m in row.prompt] for row in made.rows] == [row["prompt"] for row in trained]
    assert [row.prompt[0].role for row in made.rows] == ["system"] * len(trained)
    questions = {r["question_id"]: r["question"] for r in trained}
    ids = [row.extra_info.question_id if fmt == "verl" else row.question_id for row in made.rows]
    assert ids == list(questions)


def test_each_format_holds_the_question_where_its_adapter_reads_it():
    task = load_task("chain_sum")
    gold = task.questions(2, split="train", seed=0)
    verl, openrlhf, trl = (prompt_rows(task, fmt, n_questions=2).rows for fmt in PROMPT_FORMATS)
    for i, q in enumerate(gold):
        dumped = verl[i].model_dump()
        assert dumped["extra_info"] == {"question": q.question, "question_id": q.id, "split": "train", "index": i}
        # verl's naive reward manager reads reward_model["ground_truth"] from every row before it calls orchrm
        assert dumped["reward_model"] == {"style": "model", "ground_truth": q.answer}
        assert dumped["data_source"] == "orchrm/chain_sum" and dumped["prompt"][1]["content"].endswith("\nPlan:")
        assert openrlhf[i].model_dump() == {
            "prompt": dumped["prompt"],
            "question": q.question,
            "question_id": q.id,
            "datasource": "orchrm/chain_sum",
        }
        assert trl[i].model_dump() == {"prompt": dumped["prompt"], "question": q.question, "question_id": q.id}


class NoAnswers(Task):
    """A task whose questions carry no gold answer (judged ones, imported ones)."""

    name = "no_answers"

    def _pool(self, seed):
        for i in range(50):
            yield Question(id=f"q{i}", question=f"Which city is number {i}?", answer="")


def test_a_task_without_answers_still_writes_the_key_verl_reads(tmp_path):
    made = prompt_rows(NoAnswers(), "verl", n_questions=3, split="test")
    assert [row.reward_model.ground_truth for row in made.rows] == [None] * 3
    assert {row.extra_info.split for row in made.rows} == {"test"}
    write_prompt_rows(made.rows, tmp_path / "test.parquet")
    back = read_back(tmp_path / "test.parquet")
    assert [r["reward_model"] for r in back] == [{"style": "model", "ground_truth": None}] * 3


def read_back(path):
    """The file as verl's `RLHFDataset` and OpenRLHF's `blending_datasets` read it: `datasets.load_dataset`."""
    from datasets import load_dataset

    kind = "parquet" if path.suffix == ".parquet" else "json"
    return list(load_dataset(kind, data_files=str(path), cache_dir=str(path.parent.parent / "cache"))["train"])


@pytest.mark.parametrize("fmt", PROMPT_FORMATS)
@pytest.mark.parametrize("suffix", [".parquet", ".jsonl"])
def test_the_file_reads_back_as_written(fmt, suffix, tmp_path):
    made = prompt_rows(load_task("chain_sum"), fmt, n_questions=4)
    path = tmp_path / "data" / f"train{suffix}"
    write_prompt_rows(made.rows, path)
    assert read_back(path) == [row.model_dump(mode="json") for row in made.rows]
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temporary sibling left behind


def test_a_file_the_frameworks_cannot_read_is_refused(tmp_path):
    made = prompt_rows(load_task("chain_sum"), "trl", n_questions=1)
    with pytest.raises(ConfigError, match=r"\.parquet or \.jsonl"):
        write_prompt_rows(made.rows, tmp_path / "train.csv")
    with pytest.raises(ConfigError, match="unknown prompt format 'grpo'"):
        prompt_rows(load_task("chain_sum"), "grpo", n_questions=1)
