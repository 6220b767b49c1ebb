"""abon and the whole loop with a scripted LLM: one run compares every method, resumes, and reports."""

import asyncio
import json

import pytest

from mas_fakes import bon_replies as replies
from mas_fakes import make_task, scripted_llm
from orchrm.bon.config import BonConfig
from orchrm.bon.judge import JUDGMENTS_FILE, read_judgments
from orchrm.bon.report import write_reports
from orchrm.bon.results import RESULTS_FILE
from orchrm.bon.run import abon
from orchrm.errors import ConfigError
from orchrm.mas.rollout import RunConfig
from orchrm.rm.model import RewardModel


def configs(n=4, n_questions=3, **bon):
    run = RunConfig(task="jsonl", split="test", n_questions=n_questions, n_plans=n, temperature=0.5)
    return run, BonConfig(resamples=200, **bon)


def test_one_run_compares_every_method_on_the_same_plans(tmp_path, rm_dir):
    task, rm = make_task(tmp_path), RewardModel.load(rm_dir)
    run, cfg = configs()
    result = asyncio.run(abon(task, scripted_llm(replies()), rm, tmp_path / "bon", run, cfg))
    r = result.results.dump()
    # no training traces given: every method but the fitted baselines (`shape-mean` needs only the RM)
    assert set(r["methods"]) == {"rm", "rm-adaptive", "random", "shortest", "shape-mean", "majority", "judge", "oracle"}
    assert r["notes"] and "prior" in r["notes"][0]
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

    reports = write_reports(result.results, tmp_path / "bon")
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
    assert result.results.questions == 3


def test_bad_settings_are_refused_clearly(tmp_path, rm_dir):
    task, rm = make_task(tmp_path), RewardModel.load(rm_dir)
    run, cfg = configs()
    with pytest.raises(ConfigError, match="split must be 'test'"):
        asyncio.run(
            abon(task, scripted_llm(replies()), rm, tmp_path / "b", run.model_copy(update={"split": "train"}), cfg)
        )
    with pytest.raises(ConfigError, match="execute every plan"):
        asyncio.run(
            abon(task, scripted_llm(replies()), rm, tmp_path / "b", run.model_copy(update={"execute": "none"}), cfg)
        )
    with pytest.raises(ConfigError, match="test questions"):  # more held-out questions than the task has
        asyncio.run(
            abon(task, scripted_llm(replies()), rm, tmp_path / "b", run.model_copy(update={"n_questions": 500}), cfg)
        )


def test_a_corrupt_judgment_line_names_file_and_line(tmp_path):
    from orchrm.errors import RunFileError

    path = tmp_path / JUDGMENTS_FILE
    path.write_text('{"question_id": "q", "n": 2}\n')
    with pytest.raises(RunFileError, match=r"judgments.jsonl:1: not a valid judgment \(key: Field required\)"):
        read_judgments(path)


def test_training_traces_fit_the_prior_baseline_on_the_same_plans(tmp_path, rm_dir):
    from mas_fakes import GUESS, PLAN
    from orchrm.mas.traces import TraceWriter
    from synthetic_traces import trace

    train = tmp_path / "train"
    with TraceWriter(train / "traces.jsonl") as w:  # in training, the one-agent guess was right and the DAG wrong
        for i in range(5):
            w.write(trace(f"t{i}", 0, GUESS, correct=True))
            w.write(trace(f"t{i}", 1, PLAN, correct=False))
    task, rm = make_task(tmp_path), RewardModel.load(rm_dir)
    run, cfg = configs(judge=False)
    res = asyncio.run(abon(task, scripted_llm(replies()), rm, tmp_path / "bon", run, cfg, prior_traces=train)).results
    r = res.dump()
    assert r["methods"]["prior"]["accuracy"]["value"] == 0.0  # the prior now picks the guess, which is wrong
    assert r["methods"]["shortest"]["accuracy"]["value"] == 0.0  # the guess is also the shortest plan
    assert r["methods"]["kind-prior"]["accuracy"]["value"] == 0.0  # no kinds: the pooled prior
    assert r["methods"]["router"]["accuracy"]["value"] == 0.0  # it too learned that the guess's shape wins
    assert r["prior"]["trials"] == 10 and r["baselines"]["router"]["rows"] == 10 and r["baselines"]["kind_prior"] == {}
    assert not any("absent" in n for n in r["notes"]) and r["router_fallbacks"] is not None
    assert set(r["auc"]) == {"rm", "shortest", "prior", "kind-prior", "router", "shape-mean"}
    assert r["auc"]["prior"]["value"] == 0.0
    assert r["marks"]["best_content_blind"] in ("shortest", "prior", "kind-prior", "router")
    assert r["per_kind"]["unknown"]["n"] == 3 and r["per_kind"]["unknown"]["oracle"] == 1.0
    assert r["marks"]["best_trivial"] in ("shortest", "prior")
    row = json.loads((tmp_path / "bon" / "per_question.jsonl").read_text().splitlines()[0])
    assert set(row["lengths"]) == set(row["priors"]) == {"0", "1", "2", "3"} and row["priors"]["1"] is None  # garbage
    md = write_reports(res, tmp_path / "bon")["md"].read_text()
    assert "Within-question AUC" in md and "| unknown | 3 |" in md and "rm - best content-blind selector" in md


def test_two_models_plans_and_judge_on_the_orchestrator_agents_on_the_agent_model(tmp_path, rm_dir):
    from orchrm.llm import LLM
    from orchrm.llm.scripted import ScriptedBackend

    judge_calls: list[str] = []
    plans_and_judge, sums = replies(judge_calls), replies()
    big = LLM(ScriptedBackend([plans_and_judge], name="big"))
    small = LLM(ScriptedBackend([sums], name="small"), ledger=big.ledger)
    task, rm = make_task(tmp_path), RewardModel.load(rm_dir)
    run, cfg = configs()
    run = run.model_copy(update={"model_id": "big", "agent_backend": "scripted", "agent_model_id": "small"})
    res = asyncio.run(abon(task, big, rm, tmp_path / "bon", run, cfg, agent_llm=small)).results
    orchestrator_prompts = [m[0].content for m, _, _ in big.backend.calls if "orchestrator" in m[0].content]
    assert len(orchestrator_prompts) == 12 and len(judge_calls) > 0  # 3 questions x 4 plans, then the judge
    assert len(big.backend.calls) == 12 + len(judge_calls) and len(small.backend.calls) > 0
    assert not any("orchestrator" in m[0].content for m, _, _ in small.backend.calls)
    assert (res.model, res.agent_model) == ("big", "small")
    assert (res.model_name, res.agent_model_name) == ("big", "small")  # a scripted model: its name is its id
    md = write_reports(res, tmp_path / "bon")["md"].read_text()
    assert "orchestrator: `big`; sub-agents: `small`" in md


def _discerning(log: list[str] | None = None):
    """`replies()`, but the judge scores each trajectory by its text (so its pick differs between questions), and
    `log` records each request's kind in the order they reach the backend."""
    import hashlib

    base = replies()

    def reply(messages, config):
        judged = config.json_schema is not None or config.tools
        if log is not None:
            log.append("judge" if judged else "rollout")
        if not judged:
            return base(messages, config)
        score = int(hashlib.sha256(messages[-1].content.encode()).hexdigest()[:4], 16) / 65535
        return json.dumps({"action": "final_answer", "score": round(score, 3), "reason": "ok", "confidence": 0.6})

    return reply


def _verdicts(path):
    return sorted(
        (j.question_id, j.n, j.best, j.scores, j.prompt_tokens, j.completion_tokens) for j in read_judgments(path)
    )


def test_the_judge_beside_the_rollout_judges_exactly_as_judging_after_it(tmp_path, rm_dir):
    import shutil

    from orchrm.bon.judge import judge_evaluator, judge_missing
    from orchrm.bon.run import HELDOUT_DIR
    from orchrm.mas.traces import TRACES_FILE, read_traces

    task, rm = make_task(tmp_path), RewardModel.load(rm_dir)
    run, cfg = configs(n_questions=4)
    asyncio.run(abon(task, scripted_llm(_discerning()), rm, tmp_path / "bon", run, cfg, parallel_questions=1))
    overlapped = _verdicts(tmp_path / "bon" / JUDGMENTS_FILE)
    # the sequential path on the very same plans: every question's first N plans, judged after the rollout
    traces = read_traces(tmp_path / "bon" / HELDOUT_DIR / TRACES_FILE)
    grouped = {
        q: sorted((t for t in traces if t.question_id == q), key=lambda t: t.plan_index)
        for q in {t.question_id for t in traces}
    }
    after = tmp_path / "after"
    after.mkdir()
    evaluator = judge_evaluator(scripted_llm(_discerning()), cfg)
    asyncio.run(judge_missing(evaluator, grouped, cfg, after / JUDGMENTS_FILE))
    assert len(overlapped) == 4 and overlapped == _verdicts(after / JUDGMENTS_FILE)
    assert len({str(v[3]) for v in overlapped}) == 4  # scores differ by question: a constant judge proves little
    shutil.rmtree(after)


def test_a_questions_judge_starts_while_other_questions_still_roll_out(tmp_path, rm_dir):
    task, rm = make_task(tmp_path), RewardModel.load(rm_dir)
    run, cfg = configs(n_questions=3)
    log: list[str] = []
    llm = scripted_llm(_discerning(log), delay_s=0.1)  # a request takes a while, as on a server
    seen = []

    def progress(p):
        seen.append((p.judged, p.rollout.plans_done if p.rollout else 0))

    asyncio.run(abon(task, llm, rm, tmp_path / "bon", run, cfg, parallel_questions=1, on_progress=progress))
    first_judge, last_rollout = log.index("judge"), len(log) - 1 - log[::-1].index("rollout")
    assert first_judge < last_rollout  # a judge request reached the backend before the last rollout request
    assert any(judged and plans < 12 for judged, plans in seen)  # a judgment finished with plans still to run
