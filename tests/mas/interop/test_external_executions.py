import json
import sys

import pytest

from orchrm.errors import ConfigError, RunFileError
from orchrm.mas.interop import IMPORT_FILE, ExternalExecution, ImportDefaults, import_executions, to_trace
from orchrm.mas.traces import RUN_FILE, TRACES_FILE, locate_traces, read_traces
from orchrm.pairs import PairConfig, build_pairs

COT = '{"agents": [{"id": "a", "type": "cot", "input": "Solve it."}]}'
SC = '{"agents": [{"id": "a", "type": "self_consistency", "input": "Vote.", "options": {"samples": 5}}]}'
MO = (
    "<agent><agent_id>A</agent_id><agent_name>ReflexionAgent</agent_name><agent_description>d</agent_description>"
    "<required_arguments><agent_input></agent_input></required_arguments></agent>"
)


def write_rows(path, rows, *, newline_at_end=True):
    text = "\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows)
    path.write_text(text + ("\n" if newline_at_end else ""), encoding="utf-8")
    return path


def test_rows_become_traces_that_pairs_reads(tmp_path):
    rows = []
    for q in range(4):
        rows.append(
            {
                "question": f"{q} + 1?",
                "plan": COT,
                "final_answer": q + 1,
                "correct": True,
                "tokens": {"plan": {"prompt_tokens": 30, "completion_tokens": 20, "calls": 1}},
            }
        )
        rows.append({"question": f"{q} + 1?", "plan": SC, "final_answer": "0", "score": 0.25, "checkpoint": "rl"})
        rows.append({"question": f"{q} + 1?", "plan": "not a plan", "final_answer": "0", "correct": False})
    report = import_executions(write_rows(tmp_path / "rows.jsonl", rows, newline_at_end=False), tmp_path / "run")
    assert (report.rows, report.questions, report.valid_plans, report.graded) == (12, 4, 8, 12)
    assert report.plan_errors == {"parse": 4} and report.checkpoints == {"base": 8, "rl": 4}
    traces = read_traces(tmp_path / "run" / TRACES_FILE)
    first = traces[0]
    assert first.final_answer == "1" and first.score.correct is True and first.score.value == 1.0
    assert first.plan.agents[0].type == "cot" and first.final_agent == "a" and first.orchestrator.backend == "external"
    assert first.tokens["plan"].total_tokens == 50 and first.task == "external"
    assert [t.plan_index for t in traces[:3]] == [0, 1, 2] and traces[0].question_id == traces[2].question_id
    assert traces[1].score.correct is False and traces[1].orchestrator.checkpoint == "rl"
    assert traces[2].plan is None and traces[2].plan_error.rule == "parse"
    assert json.loads((tmp_path / "run" / IMPORT_FILE).read_text())["rows"] == 12
    pairs = build_pairs(traces, PairConfig(val_fraction=0.0))
    assert pairs.stats.per_source["correct-over-incorrect"].train == 8  # 2 right-over-wrong per question
    labelled = build_pairs(
        traces, PairConfig(sources=("specialized-over-base",), specialized="rl", base="base", val_fraction=0.0)
    )
    assert labelled.stats.per_source["specialized-over-base"].train == 8  # the rl plan over both base plans


def test_mas_orchestra_plans_and_consensus_without_gold(tmp_path):
    rows = [
        {
            "question": "Capital of France?",
            "plan": MO.replace("ReflexionAgent", name),
            "final_answer": answer,
            "question_id": "q1",
        }
        for name, answer in [
            ("ReflexionAgent", "Paris"),
            ("CoTAgent", "Paris"),
            ("SCAgent", "Paris"),
            ("WebSearchAgent", "Lyon"),
        ]
    ]
    import_executions(write_rows(tmp_path / "rows.jsonl", rows), tmp_path / "run", plan_format="mas-orchestra")
    traces = read_traces(locate_traces(tmp_path / "run"))
    assert [t.plan.agents[0].type for t in traces] == ["reflexion", "cot", "self_consistency", "search"]
    assert all(t.executed and t.score is None for t in traces) and traces[0].plan_text == rows[0]["plan"]
    pairs = build_pairs(traces, PairConfig(sources=("consensus",), val_fraction=0.0))
    assert pairs.stats.per_source["consensus"].train == 3


def test_byte_order_mark_and_crlf_lines(tmp_path):
    source = tmp_path / "rows.jsonl"
    source.write_bytes(
        b"\xef\xbb\xbf"
        + json.dumps({"question": "q", "plan": COT}).encode()
        + b"\r\n\r\n"
        + json.dumps({"question": "q", "plan": SC}).encode()
    )
    assert import_executions(source, tmp_path / "run").rows == 2


def test_score_threshold_and_row_defaults(tmp_path):
    row = ExternalExecution(question="q", plan=COT, score=0.7)
    assert to_trace(row, plan_index=0, plan_format="orchrm").score.correct is False
    trace = to_trace(
        row, plan_index=3, plan_format="orchrm", defaults=ImportDefaults(task="mine", checkpoint="v2", correct_at=0.5)
    )
    assert (
        trace.score.correct is True
        and trace.score.value == 0.7
        and trace.task == "mine"
        and trace.orchestrator.checkpoint == "v2"
    )
    unexecuted = to_trace(ExternalExecution(question="q", plan=COT), plan_index=0, plan_format="orchrm")
    assert not unexecuted.executed and unexecuted.score is None
    direct = to_trace(
        ExternalExecution(question="q", plan='{"answer": "4"}', final_answer="4"), plan_index=0, plan_format="orchrm"
    )
    assert direct.valid and direct.orchestrator.degree == "direct"


@pytest.mark.parametrize(
    ("line", "needle"),
    [
        ("{not json", "rows.jsonl:2:"),
        ('["a list"]', "rows.jsonl:2: a row must be a JSON object"),
        ('{"question": "q"}', "rows.jsonl:2: plan: Field required"),
        ('{"question": "q", "plan": "p", "answer": "4"}', "rows.jsonl:2: answer: Extra inputs are not permitted"),
        ('{"question": "q", "plan": "p", "correct": "maybe"}', "rows.jsonl:2: correct:"),
        ('{"question": "q", "plan": "p", "score": 7}', "rows.jsonl:2: score:"),
        ('{"question": "q", "plan": "p", "tokens": {"judge": {"prompt_tokens": 1}}}', "unknown token category 'judge'"),
        (
            '{"question": "q", "plan": "p", "tokens": {"plan": {"prompt_tokens": -1}}}',
            "rows.jsonl:2: tokens.plan.prompt_tokens",
        ),
        ('{"question": "' + "[" * 40 + '", "plan": ' + "[" * 40 + "]" * 40 + "}", "rows.jsonl:2:"),
        ('{"question": "q", "plan": "p", "final_answer": NaN}', "rows.jsonl:2:"),
    ],
)
def test_a_bad_row_names_file_and_line_and_writes_nothing(tmp_path, line, needle):
    source = write_rows(tmp_path / "rows.jsonl", [{"question": "q", "plan": COT}, line, {"question": "q", "plan": COT}])
    with pytest.raises(RunFileError) as info:
        import_executions(source, tmp_path / "run")
    assert needle in str(info.value) and "\n" not in str(info.value)
    assert not (tmp_path / "run").exists() and [p.name for p in tmp_path.iterdir()] == ["rows.jsonl"]


def test_an_earlier_import_is_replaced_whole_and_other_folders_are_refused(tmp_path):
    source = write_rows(tmp_path / "rows.jsonl", [{"question": "q", "plan": COT, "correct": True}])
    import_executions(source, tmp_path / "run")
    write_rows(source, [{"question": "q2", "plan": SC}, {"question": "q2", "plan": COT}])
    assert import_executions(source, tmp_path / "run").rows == 2
    assert [t.question for t in read_traces(locate_traces(tmp_path / "run"))] == ["q2", "q2"]
    bad = write_rows(tmp_path / "bad.jsonl", [{"question": "q3", "plan": COT}, "{"])
    with pytest.raises(RunFileError):
        import_executions(bad, tmp_path / "run")
    assert len(read_traces(locate_traces(tmp_path / "run"))) == 2  # the earlier import is untouched
    rollout = tmp_path / "rollout"
    rollout.mkdir()
    (rollout / RUN_FILE).write_text("{}")
    with pytest.raises(ConfigError, match="rollout"):
        import_executions(source, rollout)
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "notes.txt").write_text("keep me")
    with pytest.raises(ConfigError, match="not empty"):
        import_executions(source, tmp_path / "home")
    empty = write_rows(tmp_path / "empty.jsonl", [])
    with pytest.raises(RunFileError, match="no rows"):
        import_executions(empty, tmp_path / "new")


def test_a_datasets_folder(tmp_path):
    datasets = pytest.importorskip("datasets")
    rows = [
        {
            "question": "q",
            "plan": COT,
            "final_answer": "1",
            "correct": True,
            "tokens": {"execute": {"prompt_tokens": 5, "completion_tokens": 1, "calls": 1}},
        },
        {"question": "q", "plan": SC, "final_answer": "2", "correct": False, "tokens": None},
    ]
    datasets.Dataset.from_list(rows).save_to_disk(str(tmp_path / "ds"))
    report = import_executions(tmp_path / "ds", tmp_path / "run", fmt="datasets")
    assert (report.rows, report.graded, report.format) == (2, 2, "datasets")
    traces = read_traces(locate_traces(tmp_path / "run"))
    assert traces[0].tokens["execute"].prompt_tokens == 5 and traces[1].tokens == {}
    both = datasets.DatasetDict(
        {"train": datasets.Dataset.from_list(rows), "test": datasets.Dataset.from_list(rows[:1])}
    )
    both.save_to_disk(str(tmp_path / "dd"))
    with pytest.raises(ConfigError, match="--split"):
        import_executions(tmp_path / "dd", tmp_path / "run2", fmt="datasets")
    assert import_executions(tmp_path / "dd", tmp_path / "run2", fmt="datasets", split="test").rows == 1
    datasets.Dataset.from_list([{"question": "q", "plan": COT, "verdict": "ok"}]).save_to_disk(str(tmp_path / "extra"))
    with pytest.raises(RunFileError, match=r"extra row 0: verdict: Extra inputs"):
        import_executions(tmp_path / "extra", tmp_path / "run3", fmt="datasets")
    with pytest.raises(RunFileError, match="cannot load"):
        import_executions(tmp_path / "run", tmp_path / "run4", fmt="datasets")


def test_without_datasets_a_folder_is_a_one_line_error(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "datasets", None)
    (tmp_path / "ds").mkdir()
    with pytest.raises(ConfigError, match="needs the `datasets` package"):
        import_executions(tmp_path / "ds", tmp_path / "run", fmt="datasets")


def test_mas_orchestra_graphs_import_as_mas_orchestra_ran_them(tmp_path):
    def agent(agent_id, agent_input):
        return (
            f"<agent><agent_id>{agent_id}</agent_id><agent_name>CoTAgent</agent_name>"
            f"<agent_description>d</agent_description><required_arguments><agent_input>{agent_input}</agent_input>"
            "</required_arguments></agent>"
        )

    edge_only = (
        agent("solve", "") + agent("check", "Check the answer.") + "<edge><from>solve</from><to>check</to></edge>"
    )
    reference_only = agent("solve", "") + agent("check", "Check ${solve}.")
    rows = [{"question": "q", "plan": plan, "final_answer": "4"} for plan in (edge_only, reference_only)]
    report = import_executions(write_rows(tmp_path / "rows.jsonl", rows), tmp_path / "run", plan_format="mas-orchestra")
    assert report.valid_plans == 1 and report.plan_errors == {"no_edges": 1}
    first, second = read_traces(locate_traces(tmp_path / "run"))
    assert [(e.src, e.dst) for e in first.plan.edges] == [("solve", "check")] and first.final_agent == "check"
    assert first.plan.agent("check").input == "Check the answer." and first.plan_text == edge_only  # order-only edge
    assert second.plan is None and second.plan_error.rule == "no_edges"
