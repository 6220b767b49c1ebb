import gzip
import json

import pytest

from orchrm.llm import Message, Usage
from orchrm.mas.plans import parse_plan
from orchrm.mas.traces import (
    TRACE_VERSION,
    AgentEvent,
    LLMCall,
    OrchestratorInfo,
    RunFileError,
    Trace,
    TraceWriter,
    find_traces,
    locate_traces,
    read_traces,
    token_totals,
)


def call(p=10, c=5, cached=False):
    return LLMCall(
        messages=[Message(role="user", content="hi")],
        text="Answer: 1",
        finish_reason="stop",
        usage=Usage(prompt_tokens=p, completion_tokens=c),
        latency_s=0.1,
        cached=cached,
    )


def trace(i=0):
    plan = parse_plan('{"agents": [{"id": "a", "type": "cot", "input": "x"}], "edges": []}')
    ev = AgentEvent(
        id="a",
        type="cot",
        status="ok",
        input="x",
        resolved_input="x",
        output="Answer: 1",
        answer="1",
        calls=[call(), call(cached=True)],
    )
    return Trace(
        task="t",
        question_id=f"q{i}",
        question="Q?",
        gold="1",
        plan_index=i,
        plan_text=plan.to_json(),
        plan=plan,
        orchestrator=OrchestratorInfo(backend="scripted", model_id="m"),
        plan_call=call(100, 50),
        executed=True,
        agents=[ev],
        final_agent="a",
        final_answer="1",
        tokens=token_totals(call(100, 50), [ev]),
    )


def test_round_trip_keeps_everything(tmp_path):
    path = tmp_path / "traces.jsonl"
    with TraceWriter(path) as w:
        w.write(trace(0))
        w.write(trace(1))
    back = read_traces(path)
    assert back == [trace(0), trace(1)]
    assert back[0].version == TRACE_VERSION
    assert back[0].tokens["plan"].total_tokens == 150 and back[0].tokens["execute"].calls == 2
    assert back[0].tokens["execute"].cached_calls == 1
    raw = json.loads(path.read_text().splitlines()[0])
    assert raw["plan"]["edges"] == [] and "messages" in raw["agents"][0]["calls"][0]


def test_torn_last_line_is_skipped_and_repaired(tmp_path):
    path = tmp_path / "traces.jsonl"
    with TraceWriter(path) as w:
        w.write(trace(0))
    good = path.read_bytes()
    path.write_bytes(good + trace(1).model_dump_json().encode()[:40])
    assert len(read_traces(path)) == 1
    assert path.read_bytes() != good  # reading alone does not modify
    read_traces(path, repair=True)
    assert path.read_bytes() == good


def test_other_versions_and_bad_lines_are_named(tmp_path):
    path = tmp_path / "traces.jsonl"
    value = json.loads(trace(0).model_dump_json())
    path.write_text(json.dumps({**value, "version": 99}) + "\n")
    with pytest.raises(RunFileError, match=r"traces.jsonl:1: trace version 99"):
        read_traces(path)
    path.write_text(json.dumps(value) + "\n[1, 2]\n")
    with pytest.raises(RunFileError, match=r"traces.jsonl:2"):
        read_traces(path)


def test_locate(tmp_path):
    with pytest.raises(RunFileError, match="no traces"):
        locate_traces(tmp_path)
    (tmp_path / "traces.jsonl").write_text("")
    assert locate_traces(tmp_path).name == "traces.jsonl"
    assert read_traces(tmp_path / "traces.jsonl") == []


def test_locate_falls_back_to_the_gzipped_traces(tmp_path):
    packed = tmp_path / "traces.jsonl.gz"
    packed.write_bytes(gzip.compress(trace(0).model_dump_json().encode() + b"\n", mtime=0))
    assert locate_traces(tmp_path) == packed and find_traces(tmp_path) == packed
    assert locate_traces(tmp_path / "traces.jsonl") == packed  # a hand-built path finds its packed form
    assert [t.plan_index for t in read_traces(locate_traces(tmp_path))] == [0]
    (tmp_path / "traces.jsonl").write_text("")
    assert locate_traces(tmp_path).name == "traces.jsonl"  # an unpacked file wins
    assert find_traces(tmp_path / "missing") is None


def test_a_trace_writer_refuses_a_folder_holding_only_gzipped_traces(tmp_path):
    (tmp_path / "traces.jsonl.gz").write_bytes(gzip.compress(b"", mtime=0))
    with pytest.raises(RunFileError, match="compressed") as err:
        TraceWriter(tmp_path / "traces.jsonl")
    assert "unpack" in err.value.hint and not (tmp_path / "traces.jsonl").exists()
