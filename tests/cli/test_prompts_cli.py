"""`orchrm prompts`: the command a verl or OpenRLHF user copies from the README writes the file its framework
loads, each prompt the one `train-orchestrator` trains on."""

import json
import subprocess
import sys

from tiny_policy import tiny_tokenizer


def orchrm(*args):
    return subprocess.run([sys.executable, "-m", "orchrm", *args], capture_output=True, text=True, timeout=300)


def test_writes_the_rows_and_says_what_it_wrote(tmp_path):
    from orchrm.grpo.config import GRPORunConfig
    from orchrm.grpo.data import prompt_rows as trained_rows
    from orchrm.mas.orchestrator import system_prompt
    from orchrm.mas.rollout import agent_types_for
    from orchrm.tasks import load_task

    out = tmp_path / "train.jsonl"
    done = orchrm("prompts", "--task", "chain_sum", "--format", "openrlhf", "--out", str(out))
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    n = GRPORunConfig.model_fields["n_questions"].default  # train-orchestrator's default prompt set
    assert len(rows) == n and f"wrote {n} openrlhf rows (train split of chain_sum)" in " ".join(done.stdout.split())

    task = load_task("chain_sum")
    system = system_prompt("dag", agent_types_for(task))
    tokenizer = type("T", (), {"apply_chat_template": lambda self, m, **kw: [0]})()
    trained = trained_rows(task.questions(n, split="train", seed=0), tokenizer, system, "dag")
    assert [r["prompt"] for r in rows] == [t["prompt"] for t in trained]
    assert [r["question"] for r in rows] == [t["question"] for t in trained]


def test_the_options_reach_the_prompt_and_the_tokenizer_counts_it(tmp_path):
    folder = tmp_path / "tok"
    tiny_tokenizer().save_pretrained(folder)
    out = tmp_path / "val.parquet"
    args = ["--task", "chain_sum", "--format", "verl", "--out", str(out), "--split", "test", "--n-questions", "3"]
    done = orchrm("prompts", *args, "--degree", "single", "--no-prompt-examples", "--tokenizer", str(folder))
    assert done.returncode == 0, done.stderr
    said = " ".join(done.stdout.split())
    assert "wrote 3 verl rows (test split of chain_sum)" in said and "tokens under" in said

    from datasets import load_dataset

    rows = list(load_dataset("parquet", data_files=str(out), cache_dir=str(tmp_path / "cache"))["train"])
    assert {r["extra_info"]["split"] for r in rows} == {"test"}
    assert all(r["reward_model"]["ground_truth"] for r in rows)  # chain_sum knows its answers
    assert all(r["prompt"][1]["content"].endswith("\nPlan:") for r in rows)
    assert "Example" not in rows[0]["prompt"][0]["content"]  # --no-prompt-examples: the bare instructions


def test_a_file_no_framework_reads_is_one_line(tmp_path):
    done = orchrm("prompts", "--task", "chain_sum", "--format", "trl", "--out", str(tmp_path / "x.csv"))
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith("error:") and ".parquet or .jsonl" in done.stderr
    assert not (tmp_path / "x.csv").exists()
