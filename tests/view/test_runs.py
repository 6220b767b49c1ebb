"""What the viewer reads from run folders, and the JSON it shapes from them."""

import json

import pytest

from orchrm.errors import RunFileError
from orchrm.mas.plans import parse_plan
from orchrm.view import load_runs, plan_graph, run_index, run_questions, trace_detail
from synthetic_traces import write_run
from view_runs import BENCH_BON, DIAMOND, PAYLOAD, SINGLE, make_trace


def test_bon_folder_reads_picks_rewards_judge_and_summary(bon_dir):
    (run,) = load_runs([bon_dir])
    assert run.kind == "bon" and len(run.question_ids) == 4 and len(run.traces) == 8
    data = run_questions(run)
    assert data["methods"] == ["rm", "random"] and data["kinds"] == ["even", "odd"] and data["tasks"] == ["hostile"]
    q = data["questions"][0]
    assert q["question"] == f"What is {PAYLOAD}?"  # text is passed on as is; the page makes it text
    assert [p["reward"] for p in q["plans"]] == [1.25, -0.5]
    assert [p["outcome"] for p in q["plans"]] == ["correct", "wrong"]
    assert q["picks"]["rm"]["chosen"] == 0 and q["judge"]["best"] == 1
    (index,) = run_index([run])
    assert index["bon"]["methods"]["rm"]["accuracy"] == 0.5 and index["bon"]["n"] == 2
    assert index["tokens"] == {"plan": 8 * 18, "execute": 4 * 4 * 18 + 4 * 18}


def test_trace_detail_has_graph_tokens_and_picks(bon_dir):
    (run,) = load_runs([bon_dir])
    d = trace_detail(run, "q2", 0)
    assert d["picked_by"] == ["rm"] and d["reward"] == 1.25 and d["judge_score"] == 0.2
    assert d["tokens"]["execute"] == {"prompt": 44, "completion": 28, "calls": 4, "cached_calls": 0}
    assert len(d["trace"]["agents"]) == 4
    assert trace_detail(run, "q2", 7) is None and trace_detail(run, "nope", 0) is None


def test_plan_graph_levels_rows_and_sink():
    g = plan_graph(parse_plan(DIAMOND))
    levels = {n["id"]: (n["level"], n["row"]) for n in g["nodes"]}
    assert levels == {"a0": (0, 0), "a1": (1, 0), "a2": (1, 1), "a3": (2, 0)}
    assert sorted(map(tuple, g["edges"])) == [("a0", "a1"), ("a0", "a2"), ("a1", "a3"), ("a2", "a3")]
    assert g["sink"] == "a3"
    assert plan_graph(parse_plan(SINGLE))["nodes"] == [{"id": "solo", "type": "cot", "level": 0, "row": 0}]
    assert plan_graph(None) == {"nodes": [], "edges": [], "sink": None}


def test_plan_graph_draws_a_cycle_without_failing():
    plan = parse_plan(
        json.dumps(
            {"agents": [{"id": "a", "type": "cot", "input": "x ${b}"}, {"id": "b", "type": "cot", "input": "y ${a}"}]}
        )
    )
    g = plan_graph(plan)
    assert {n["id"] for n in g["nodes"]} == {"a", "b"}


def test_rollout_folder_and_its_traces_file(tmp_path):
    folder = write_run(tmp_path / "run", questions=3)
    for path in (folder, folder / "traces.jsonl"):
        (run,) = load_runs([path])
        assert run.kind == "rollout" and len(run.question_ids) == 3 and len(run.traces) == 9
        data = run_questions(run)
        assert data["methods"] == [] and [p["outcome"] for p in data["questions"][0]["plans"]] == [
            "correct",
            "wrong",
            "invalid",
        ]


def test_loop_folder_expands_to_its_training_rollout_and_bon(tmp_path, bon_dir):
    loop = tmp_path / "loop"
    write_run(loop / "train", questions=2)
    bon_dir.rename(loop / "bon")
    (loop / "loop.json").write_text("{}")
    runs = load_runs([loop])
    assert [r.kind for r in runs] == ["train", "bon"]


def test_not_a_run_is_one_error(tmp_path):
    with pytest.raises(RunFileError, match="not a run folder"):
        load_runs([tmp_path])


def test_a_duplicate_trace_line_is_not_read_twice(tmp_path):
    from orchrm.mas.traces import TraceWriter

    with TraceWriter(tmp_path / "traces.jsonl") as w:
        w.write(make_trace("q", 0, SINGLE, correct=True, kind="k"))
        w.write(make_trace("q", 0, DIAMOND, correct=False, kind="k"))
    (run,) = load_runs([tmp_path])
    assert len(run.traces) == 1 and run.traces[("q", 0)].plan_text == SINGLE


@pytest.mark.skipif(not BENCH_BON.exists(), reason="the committed best-of-N run is not in this checkout")
def test_committed_100_question_run_loads():
    (run,) = load_runs([BENCH_BON])
    data = run_questions(run)
    assert len(data["questions"]) == 100 and all(len(q["plans"]) == 8 for q in data["questions"])
    assert "rm" in data["methods"] and "judge" in data["methods"]


def test_a_mixed_runs_task_is_the_member_named_by_the_question_id(tmp_path):
    from orchrm.mas.traces import TraceWriter

    with TraceWriter(tmp_path / "traces.jsonl") as w:
        for qid in ("chain_sum/c-1", "world_qa/w-1"):
            w.write(
                make_trace(qid, 0, SINGLE, correct=True, kind="k").model_copy(update={"task": "mix:world_qa,chain_sum"})
            )
    (run,) = load_runs([tmp_path])
    assert run_questions(run)["tasks"] == ["chain_sum", "world_qa"]
    assert run_index([run])[0]["tasks"] == ["chain_sum", "world_qa"]


def test_grpo_folder_reads_every_sampled_plan(grpo_dir):
    (run,) = load_runs([grpo_dir])
    assert run.kind == "grpo" and run.question_ids == ["g0", "g1"] and len(run.samples) == 12
    (index,) = run_index([run])
    assert index["tokens"] == {"plan": 1200, "train": 2400} and index["samples"] == 12
    assert [s["step"] for s in index["grpo"]["steps"]] == [1, 2]
    assert index["grpo"]["steps"][1]["valid"] == pytest.approx(2 / 3)
    assert index["grpo"]["steps"][1]["mean_reward"] == pytest.approx((0.7 + 0.25 - 1.0) / 3)
    q = run_questions(run)["questions"][0]
    assert [p["outcome"] for p in q["plans"]] == ["scored", "scored", "invalid"] * 2
    assert [p["step"] for p in q["plans"]] == [1, 1, 1, 2, 2, 2]
    d = trace_detail(run, "g0", 3)
    assert d["sample"]["step"] == 2 and d["sample"]["reward"] == pytest.approx(0.7) and len(d["graph"]["nodes"]) == 4
    bad = trace_detail(run, "g0", 2)
    assert bad["outcome"] == "invalid" and bad["graph"]["nodes"] == [] and bad["plan"] is None
    assert trace_detail(run, "g0", 6) is None


def test_a_resumed_run_shows_each_step_once(grpo_dir):
    from orchrm.jsonl import append
    from orchrm.samples import SAMPLES_FILE, SampleRecord

    # the resume after a kill sampled step 2 again: its first attempt is superseded, not shown beside it
    for q in ("g0", "g1"):
        append(
            grpo_dir / SAMPLES_FILE,
            SampleRecord(step=2, question_id=q, completion="{", valid=False, reward=-1.0, attempt=1),
        )
    (run,) = load_runs([grpo_dir])
    assert len(run.samples) == 6 + 2
    steps = run_index([run])[0]["grpo"]["steps"]
    assert [(s["step"], s["valid"]) for s in steps] == [(1, pytest.approx(2 / 3)), (2, 0.0)]


def test_many_steps_are_thinned_to_a_dozen_rows():
    from types import SimpleNamespace

    from orchrm.view.training import STEP_ROWS, _steps

    rows = _steps([SimpleNamespace(step=s, reward=1.0, valid=True) for s in range(100)])
    assert len(rows) <= STEP_ROWS + 1 and rows[0]["step"] == 0 and rows[-1]["step"] == 99
