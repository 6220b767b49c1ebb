"""The counterfactual collector (resumable, edits beside traces) and the builder's counterfactual source."""

import asyncio
import json

import pytest

from mas_fakes import (
    _sum_reply,
    make_task,
    plan_index,
    replies,
    run_config,
    scripted_llm,
)
from orchrm.errors import ConfigError
from orchrm.llm import LLM
from orchrm.llm.scripted import ScriptedBackend
from orchrm.mas.rollout import arollout
from orchrm.mas.traces import read_traces
from orchrm.pairs import PairConfig, build_pairs, load_counterfactual
from orchrm.pairs.counterfactual import (
    CounterfactualConfig,
    acollect_counterfactuals,
    edited_index,
    entity_names,
    read_edits,
)
from synthetic_traces import plan_text, trace

PLAN = json.dumps(
    {
        "agents": [
            {"id": "a", "type": "cot", "input": "Add the numbers."},
            {"id": "b", "type": "cot", "input": "Check ${a}"},
        ]
    }
)


def flaky_check():
    """Plans alternate valid / garbage; agents add, except that a check written `Verify` goes wrong."""

    def reply(messages, config):
        system = messages[0].content if messages[0].role == "system" else ""
        if "orchestrator" in system:
            return PLAN if plan_index(messages, config.seed) % 2 == 0 else "{ not a plan"
        user = messages[-1].content
        return "Answer: 999" if "Verify" in user else _sum_reply(user)

    return reply


@pytest.fixture
def run(tmp_path):
    task = make_task(tmp_path)
    out = tmp_path / "run"
    asyncio.run(arollout(task, scripted_llm(flaky_check()), out, run_config()))
    return task, out


def collect(run, out, llm=None, **cfg):
    task, folder = run
    llm = llm or scripted_llm(flaky_check())
    return asyncio.run(acollect_counterfactuals(folder, out, llm, CounterfactualConfig(**cfg), task=task))


def test_edits_valid_executed_plans_and_records_each_edit(run, tmp_path):
    progress = collect(run, tmp_path / "cf", edits_per_plan=2)
    assert progress.skipped == {"invalid plan": 3}  # plan 1 of each question is garbage: never edited
    assert (progress.plans, progress.edits_total, progress.edits_done) == (3, 6, 6)
    edits = read_edits(tmp_path / "cf" / "edits.jsonl")
    traces = {t.key: t for t in read_traces(tmp_path / "cf" / "traces.jsonl")}
    assert len(edits) == 6 and len(traces) == 6
    for e in edits:
        assert e.source_index == 0 and e.plan_index == edited_index(0, e.edit_index)
        t = traces[(e.question_id, e.plan_index)]
        assert t.valid == e.valid and json.loads(t.plan_text)["agents"]
        if t.executed:  # every call's tokens on the trace, as a rollout records them
            assert t.plan_call is None and set(t.tokens) == {"execute"} and t.tokens["execute"].total_tokens > 0
            assert t.agent_model_id == "scripted-model" and t.score is not None
    config = json.loads((tmp_path / "cf" / "counterfactual.json").read_text())
    assert config["agent_model_id"] == "scripted-model" and config["task"] == "jsonl"


def test_a_killed_collection_resumes_without_re_executing(run, tmp_path):
    out = tmp_path / "cf"
    full = collect(run, tmp_path / "whole", edits_per_plan=3)

    class Killed(Exception):
        pass

    def die_after(n):
        def hook(p):
            if p.edits_done >= n:
                raise Killed

        return hook

    task, folder = run
    cfg = CounterfactualConfig(edits_per_plan=3)
    with pytest.raises(Killed):
        asyncio.run(
            acollect_counterfactuals(folder, out, scripted_llm(flaky_check()), cfg, task=task, on_progress=die_after(4))
        )
    with open(out / "traces.jsonl", "ab") as f:
        f.write(b'{"version": 1, "task": "js')  # a kill mid-write
    with open(out / "edits.jsonl", "ab") as f:
        f.write(b'{"version": 1')
    held = {t.key for t in read_traces(out / "traces.jsonl")}
    assert 4 <= len(held) < full.edits_total
    again = asyncio.run(acollect_counterfactuals(folder, out, scripted_llm(flaky_check()), cfg, task=task))
    assert again.resumed == len(held) and again.edits_done == full.edits_total - len(held)
    executed_now = sum(t.executed for t in read_traces(out / "traces.jsonl") if t.key not in held)
    assert executed_now == again.executed
    keys = [t.key for t in read_traces(out / "traces.jsonl")]
    assert len(keys) == len(set(keys)) == full.edits_total
    assert len(read_edits(out / "edits.jsonl")) == full.edits_total
    twice = asyncio.run(acollect_counterfactuals(folder, out, scripted_llm(flaky_check()), cfg, task=task))
    assert twice.edits_done == 0 and twice.resumed == full.edits_total


def test_more_edits_per_plan_extend_and_other_kinds_are_refused(run, tmp_path):
    out = tmp_path / "cf"
    collect(run, out, edits_per_plan=1)
    first = read_edits(out / "edits.jsonl")
    grown = collect(run, out, edits_per_plan=2)
    assert grown.resumed == 3 and grown.edits_done == 3
    assert read_edits(out / "edits.jsonl")[:3] == first
    with pytest.raises(ConfigError, match="kinds"):
        collect(run, out, edits_per_plan=2, kinds=["paraphrase"])


def test_edits_run_only_on_the_runs_agent_model(run, tmp_path):
    other = LLM(ScriptedBackend([flaky_check()], name="another-model"))
    with pytest.raises(ConfigError, match="another-model"):
        collect(run, tmp_path / "cf", other)
    assert not (tmp_path / "cf").exists()


def test_pairs_by_outcome_never_by_intent(run, tmp_path):
    _, folder = run
    collect(run, tmp_path / "cf", edits_per_plan=6)
    edits = load_counterfactual(tmp_path / "cf")
    out = build_pairs(read_traces(folder / "traces.jsonl"), PairConfig(val_fraction=0.0), edits)
    cf = [r for r in out.train if r.source == "counterfactual"]
    # only the paraphrase (`Check` -> `Verify`) changes the outcome here: the source is chosen, the edit rejected
    assert cf and {r.metadata["edit"] for r in cf} == {"paraphrase"}
    assert all(r.metadata["edited"] == "rejected" and "Verify" in r.rejected for r in cf)
    stats = out.stats.edits
    assert stats["paraphrase"].paired == len(cf) == 3
    assert sum(c.tried for c in stats.values()) == len(edits)
    for c in stats.values():
        assert c.tried == c.invalid + c.unfinished + c.unscored + c.same_outcome + c.paired
    assert out.stats.per_source["counterfactual"].train == 3


def test_counterfactual_pairs_have_a_cap_of_their_own(run, tmp_path):
    _, folder = run
    collect(run, tmp_path / "cf", edits_per_plan=6)
    traces, edits = read_traces(folder / "traces.jsonl"), load_counterfactual(tmp_path / "cf")
    full = build_pairs(traces, PairConfig(val_fraction=0.0), edits)
    n_cf = sum(r.source == "counterfactual" for r in full.train)
    assert n_cf == 3 and len(full.train) > n_cf
    no_others = build_pairs(traces, PairConfig(val_fraction=0.0, max_pairs_per_question=0), edits)
    assert {r.source for r in no_others.train} == {"counterfactual"} and len(no_others.train) == n_cf
    no_edits = build_pairs(traces, PairConfig(val_fraction=0.0, max_counterfactual_per_question=0), edits)
    assert len(no_edits.train) == len(full.train) - n_cf and no_edits.stats.pairs_over_question_cap == n_cf


def test_an_invalid_edit_gives_at_most_a_validity_pair(run, tmp_path):
    _, folder = run
    collect(run, tmp_path / "cf", edits_per_plan=1, kinds=["break-reference"])  # `Check a`: agent a stranded
    edits = load_counterfactual(tmp_path / "cf")
    assert edits and all(not cf.edit.valid and cf.edit.rule and not cf.trace.executed for cf in edits)
    traces = read_traces(folder / "traces.jsonl")
    every = build_pairs(traces, PairConfig(val_fraction=0.0), edits)
    validity = [r for r in every.train if r.metadata.get("reason") == "valid-over-invalid-edit"]
    assert len(validity) == 3 and {r.source for r in validity} == {"artifact"}
    assert all(r.metadata["edit"] == "break-reference" for r in validity)
    assert every.stats.edits["break-reference"].invalid == 3
    only = build_pairs(traces, PairConfig(val_fraction=0.0, sources=("counterfactual",)), edits)
    assert only.train == [] and only.stats.edits["break-reference"].invalid == 3


def test_edits_whose_source_is_not_read_are_counted(run, tmp_path):
    collect(run, tmp_path / "cf", edits_per_plan=1)
    edits = load_counterfactual(tmp_path / "cf")
    elsewhere = [
        trace("q0", 0, plan_text("cot", "debate"), correct=True),
        trace("q9", 0, plan_text("cot"), correct=True),
    ]
    out = build_pairs([t.model_copy(update={"task": "jsonl"}) for t in elsewhere], PairConfig(val_fraction=0.0), edits)
    assert out.stats.edits_without_source == len(edits) and out.train == []
    off = build_pairs(read_traces(run[1] / "traces.jsonl"), PairConfig(sources=("correct-over-incorrect",)), edits)
    assert off.stats.edits == {}  # the source is off: edits are not read


def test_a_question_with_one_plan_still_pairs_its_edits(run, tmp_path):
    _, folder = run
    collect(run, tmp_path / "cf", edits_per_plan=6)
    valid_only = [t for t in read_traces(folder / "traces.jsonl") if t.valid]
    out = build_pairs(valid_only, PairConfig(val_fraction=0.0), load_counterfactual(tmp_path / "cf"))
    assert {r.source for r in out.train} == {"counterfactual", "artifact"} and out.stats.questions_with_pairs == 3
    assert all(r.metadata["reason"] == "valid-over-invalid-edit" for r in out.train if r.source == "artifact")


def test_no_folder_is_one_error(tmp_path):
    from orchrm.errors import RunFileError

    with pytest.raises(RunFileError, match="edits.jsonl"):
        load_counterfactual(tmp_path)
    task = make_task(tmp_path)
    with pytest.raises(RunFileError, match="run.json"):
        asyncio.run(acollect_counterfactuals(tmp_path / "nope", tmp_path / "cf", scripted_llm(replies()), task=task))


def test_entity_names_come_from_the_tasks_world():
    from types import SimpleNamespace

    world = SimpleNamespace(people={"Ada": {}, "Bo": {}}, companies={"Acme": {}}, cities={})
    task = SimpleNamespace(world=world)
    assert entity_names(task) == [["Ada", "Bo"], ["Acme"]]
    assert entity_names(SimpleNamespace(members={"w": task, "c": SimpleNamespace()})) == [["Ada", "Bo"], ["Acme"]]


def test_a_folder_whose_records_name_other_edits_is_refused(run, tmp_path):
    out = tmp_path / "cf"
    collect(run, out, edits_per_plan=1)
    lines = (out / "edits.jsonl").read_text().splitlines()
    record = json.loads(lines[0])
    record["description"] = "an edit another orchrm chose"
    (out / "edits.jsonl").write_text("\n".join([json.dumps(record), *lines[1:]]) + "\n")
    with pytest.raises(ConfigError, match="records another edit"):
        collect(run, out, edits_per_plan=1)


def test_unexecuted_plans_are_skipped_and_max_plans_caps_in_run_order(tmp_path):
    task = make_task(tmp_path)
    sampled = tmp_path / "sampled"
    asyncio.run(arollout(task, scripted_llm(flaky_check()), sampled, run_config(execute="none")))
    none = collect((task, sampled), tmp_path / "cf0")
    assert none.skipped == {"invalid plan": 3, "not executed": 3} and none.edits_total == 0
    executed = tmp_path / "run"
    asyncio.run(arollout(task, scripted_llm(flaky_check()), executed, run_config()))
    capped = collect((task, executed), tmp_path / "cf1", max_plans=2, edits_per_plan=1)
    assert capped.plans == 2 and capped.skipped == {"invalid plan": 3, "over --max-plans": 1}
    first_two = [q.id for q in task.questions(2)]
    assert sorted({e.question_id for e in read_edits(tmp_path / "cf1" / "edits.jsonl")}) == sorted(first_two)
