"""abon and the whole loop with a scripted LLM: one run compares every method, resumes, and reports."""

import asyncio
import json

import pytest

from mas_fakes import bon_replies as replies
from mas_fakes import make_task, scripted_llm

from orchrm.bon.report import write_reports
from orchrm.bon.run import JUDGMENTS_FILE, RESULTS_FILE, BonConfig, abon, read_judgments
from orchrm.errors import ConfigError
from orchrm.mas.rollout import RunConfig
from orchrm.rm.model import RewardModel

def configs(n=4, n_questions=3, **bon):
    run = RunConfig(task="jsonl", split="test", n_questions=n_questions, n_plans=n, temperature=0.5)
    return run, BonConfig(n=n, resamples=200, **bon)


def test_one_run_compares_every_method_on_the_same_plans(tmp_path, rm_dir):
    task, rm = make_task(tmp_path), RewardModel.load(rm_dir)
    run, cfg = configs()
    result = asyncio.run(abon(task, scripted_llm(replies()), rm, tmp_path / "bon", run, cfg))
    r = result.results
    assert set(r["methods"]) == {"rm", "rm-adaptive", "random", "majority", "judge", "oracle"}
    assert r["questions"] == 3 and r["plans"] == 12
    # seeds 0..3: PLAN (right), garbage, GUESS (wrong), PLAN (right)
    assert r["methods"]["oracle"]["accuracy"]["value"] == 1.0
    assert r["methods"]["random"]["accuracy"]["value"] == pytest.approx(2 / 3)
    assert r["methods"]["majority"]["accuracy"]["value"] == 1.0
    rm_tok, maj_tok = r["methods"]["rm"]["tokens"], r["methods"]["majority"]["tokens"]
    assert rm_tok["plan"] == maj_tok["plan"] and rm_tok["execute"] < maj_tok["execute"]
    assert r["methods"]["judge"]["tokens"]["verify"] > 0 and rm_tok["verify"] == 0
    assert r["methods"]["rm"]["executed_plans"] == 1 and r["methods"]["majority"]["executed_plans"] == 3
    assert set(r["curves"]["rm"]) == {"1", "2", "4"} and "4" in r["curves"]["judge"]
    assert r["adaptive_sweep"][-1]["tau"] is None  # the execute-all end of the sweep
    assert r["warnings"] and "synthetic" in r["warnings"][0]  # the RM was trained on another task
    assert json.loads((tmp_path / "bon" / RESULTS_FILE).read_text())["n"] == 4
    rows = (tmp_path / "bon" / "per_question.jsonl").read_text().splitlines()
    assert len(rows) == 3 and "rewards" in json.loads(rows[0])

    reports = write_reports(r, tmp_path / "bon")
    md = reports["md"].read_text()
    assert "| rm |" in md and "accuracy_vs_n.png" in md and "judge tokens / rm tokens" in md
    assert reports["accuracy_vs_n"].stat().st_size > 1000 and reports["accuracy_vs_tokens"].exists()
    assert "data:image/png;base64," in reports["html"].read_text()


def test_resume_reuses_rollouts_and_judgments_and_grows(tmp_path, rm_dir):
    task, rm = make_task(tmp_path), RewardModel.load(rm_dir)
    run, cfg = configs(n_questions=2)
    asyncio.run(abon(task, scripted_llm(replies()), rm, tmp_path / "bon", run, cfg))
    first = read_judgments(tmp_path / "bon" / JUDGMENTS_FILE)
    assert len(first) == 2
    with open(tmp_path / "bon" / JUDGMENTS_FILE, "ab") as fh:
        fh.write(b'{"question_id": "torn')  # a kill mid-write
    calls: list[str] = []
    run3, _ = configs(n_questions=3)
    result = asyncio.run(abon(task, scripted_llm(replies(calls)), rm, tmp_path / "bon", run3, cfg))
    assert len(read_judgments(tmp_path / "bon" / JUDGMENTS_FILE)) == 3  # torn line dropped, one new judgment
    assert len(calls) == 3  # only the new question's 3 valid trajectories were judged
    assert result.results["questions"] == 3


def test_bad_settings_are_refused_clearly(tmp_path, rm_dir):
    task, rm = make_task(tmp_path), RewardModel.load(rm_dir)
    run, cfg = configs()
    with pytest.raises(ConfigError, match="split must be 'test'"):
        asyncio.run(abon(task, scripted_llm(replies()), rm, tmp_path / "b", run.model_copy(update={"split": "train"}), cfg))
    with pytest.raises(ConfigError, match="N plans"):
        asyncio.run(abon(task, scripted_llm(replies()), rm, tmp_path / "b", run, cfg.model_copy(update={"n": 8})))
    with pytest.raises(ConfigError, match="test questions"):  # more held-out questions than the task has
        asyncio.run(abon(task, scripted_llm(replies()), rm, tmp_path / "b", run.model_copy(update={"n_questions": 500}), cfg))


def test_a_corrupt_judgment_line_names_file_and_line(tmp_path):
    from orchrm.errors import RunFileError

    path = tmp_path / JUDGMENTS_FILE
    path.write_text('{"question_id": "q", "n": 2}\n')
    with pytest.raises(RunFileError, match=r"judgments.jsonl:1: not a valid judgment \(key: Field required\)"):
        read_judgments(path)
