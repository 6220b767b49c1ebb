import json

import pytest

from orchrm.errors import ConfigError
from orchrm.pairs import PairConfig, as_dataset, build_pairs, read_pairs_dir, render_plan, write_pairs_dir
from orchrm.pairs.rows import PairFileError, read_rows
from synthetic_traces import plan_text, trace


def test_correct_over_incorrect_and_dedup():
    traces = [
        trace("q1", 0, plan_text("cot"), correct=True, answer="4"),
        trace("q1", 1, plan_text("cot"), correct=False, answer="5"),  # same plan as #0: merged
        trace("q1", 2, plan_text("debate"), correct=False, answer="5"),
        trace("q1", 3, plan_text("self_consistency"), correct=True, answer="4"),
    ]
    out = build_pairs(traces, PairConfig(val_fraction=0.0))
    assert out.stats.duplicate_plans_merged == 1
    rows = out.train
    assert {r.source for r in rows} == {"correct-over-incorrect"}
    assert len(rows) == 2  # {cot, self_consistency} over debate
    debate = render_plan(plan_text("debate"))
    assert all(r.rejected == debate for r in rows)
    assert rows[0].prompt == "question: question q1?"


def test_same_shape_keeps_only_pairs_that_text_decides():
    traces = [
        trace("q1", 0, plan_text("cot", question="add 2 and 2"), correct=True, answer="4"),
        trace("q1", 1, plan_text("cot", question="add 2 and 3"), correct=False, answer="5"),
        trace("q1", 2, plan_text("debate"), correct=False, answer="5"),
    ]
    every = build_pairs(traces, PairConfig(val_fraction=0.0)).train
    assert len(every) == 2
    same = build_pairs(traces, PairConfig(val_fraction=0.0, same_shape=True)).train
    assert [(r.chosen, r.rejected) for r in same] == [
        (render_plan(plan_text("cot", question="add 2 and 2")), render_plan(plan_text("cot", question="add 2 and 3")))
    ]


def test_artifact_sources():
    traces = [
        trace("q1", 0, plan_text("cot"), correct=None),
        trace("q1", 1, "not a plan at all", invalid=True),
        trace("q1", 2, plan_text("debate"), correct=None, failed=True),
    ]
    rows = build_pairs(traces, PairConfig(val_fraction=0.0)).train
    reasons = sorted(r.metadata["reason"] for r in rows)
    assert reasons == ["completed-over-failed", "valid-over-invalid", "valid-over-invalid"]
    assert any(r.rejected.startswith("plan (unparsed): not a plan") for r in rows)


def test_specialized_over_base_needs_both_labels():
    with pytest.raises(ConfigError):
        PairConfig(specialized="tuned")
    traces = [
        trace("q1", 0, plan_text("cot", "debate"), checkpoint="tuned"),
        trace("q1", 1, plan_text("cot"), checkpoint="base"),
    ]
    rows = build_pairs(traces, PairConfig(specialized="tuned", base="base", val_fraction=0.0)).train
    assert [r.source for r in rows] == ["specialized-over-base"]
    assert rows[0].chosen == render_plan(plan_text("cot", "debate"))


def test_consensus_only_without_gold_and_with_margin():
    def group(answers, gold=None):
        return [trace("q1", i, plan_text(*(["cot"] * (i + 1))), answer=a, gold=gold) for i, a in enumerate(answers)]

    rows = build_pairs(group(["7", "7.0", "7", "9"]), PairConfig(val_fraction=0.0)).train
    assert len(rows) == 3 and all(r.source == "consensus" for r in rows)
    assert rows[0].metadata["majority"] == "#7"
    assert build_pairs(group(["7", "7", "9", "9"]), PairConfig(val_fraction=0.0)).train == []  # no majority
    assert (
        build_pairs(group(["7", "7", "7", "9"], gold="7"), PairConfig(val_fraction=0.0, sources=("consensus",))).train
        == []
    )


def test_conflicting_sources_cancel():
    traces = [
        trace("q1", 0, plan_text("cot"), correct=False, answer="5", checkpoint="tuned"),
        trace("q1", 1, plan_text("debate"), correct=True, answer="4", checkpoint="base"),
    ]
    out = build_pairs(traces, PairConfig(specialized="tuned", base="base", val_fraction=0.0))
    assert out.train == [] and out.stats.conflicting_pairs_dropped == 1
    assert out.stats.questions_without_pairs == {"no source separates its plans": 1}


def test_cap_split_by_question_and_stats():
    traces = []
    for q in range(40):
        for i in range(6):
            traces.append(trace(f"q{q}", i, plan_text(*(["cot"] * (i + 1))), correct=i % 2 == 0, answer=str(i)))
    traces.append(trace("lonely", 0, plan_text("cot"), correct=True))
    out = build_pairs(traces, PairConfig(max_pairs_per_question=4, val_fraction=0.25))
    assert out.stats.pairs_over_question_cap == 40 * (9 - 4)
    train_q = {r.question_id for r in out.train}
    val_q = {r.question_id for r in out.val}
    assert train_q and val_q and not train_q & val_q
    assert out.stats.total == len(out.train) + len(out.val) == 160
    assert out.stats.questions_without_pairs == {"fewer than two distinct plans": 1}
    again = build_pairs(traces, PairConfig(max_pairs_per_question=4, val_fraction=0.25))
    assert [r.model_dump() for r in again.train] == [r.model_dump() for r in out.train]  # deterministic


def test_balance_caps_a_flooding_source():
    traces = []
    for q in range(10):
        traces += [
            trace(f"q{q}", 0, plan_text("cot"), correct=True, answer="4"),
            trace(f"q{q}", 1, plan_text("debate"), correct=False, answer="5"),
            trace(f"q{q}", 2, "junk", invalid=True),
            trace(f"q{q}", 3, "more junk", invalid=True),
        ]
    out = build_pairs(
        traces, PairConfig(val_fraction=0.0, sources=("artifact", "correct-over-incorrect"), max_source_share=0.5)
    )
    counts = {s: c.train for s, c in out.stats.per_source.items()}
    assert counts["correct-over-incorrect"] == 10 and counts["artifact"] == 10
    assert out.stats.pairs_dropped_to_balance == {"artifact": 30}


def test_rows_round_trip_and_errors(tmp_path):
    out = build_pairs(
        [trace("q1", 0, plan_text("cot"), correct=True), trace("q1", 1, plan_text("debate"), correct=False)],
        PairConfig(val_fraction=0.0),
    )
    write_pairs_dir(tmp_path / "pairs", out.train, out.val, out.stats)
    train, val = read_pairs_dir(tmp_path / "pairs")
    assert train == out.train and val == []
    ds = as_dataset(train)
    assert set(["prompt", "chosen", "rejected", "source", "question_id"]) <= set(ds.column_names)
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"prompt": "p", "chosen": "c", "source": "artifact", "question_id": "q"}) + "\n")
    with pytest.raises(PairFileError, match="bad.jsonl:1: rejected: Field required"):
        read_rows(bad)


def test_stats_count_the_models_behind_the_traces():
    def on(t, plan_model, agent_model=None):
        info = t.orchestrator.model_copy(update={"model_id": plan_model})
        return t.model_copy(update={"orchestrator": info, "agent_model_id": agent_model})

    traces = [
        on(trace("q1", 0, plan_text("cot"), correct=True), "big", "small"),
        on(trace("q1", 1, plan_text("debate"), correct=False), "big", "small"),
        on(trace("q2", 0, plan_text("cot"), correct=True), "old"),  # no agent model recorded: the orchestrator's
        on(trace("q2", 1, "{ bad", invalid=True), "big", "small"),  # not executed: no agent model counted
    ]
    stats = build_pairs(traces).stats
    assert stats.orchestrator_models == {"big": 3, "old": 1}
    assert stats.agent_models == {"old": 1, "small": 2}


def test_pairs_are_rendered_in_the_configs_rendering():
    right, wrong = plan_text("cot", "debate"), plan_text("debate")  # the right plan's a1 reads ${a0}
    traces = [trace(q, i, p, correct=i == 0) for q in ("q1", "q2") for i, p in enumerate((right, wrong))]
    v1 = build_pairs(traces, PairConfig(val_fraction=0.0))
    v2 = build_pairs(traces, PairConfig(val_fraction=0.0, render_version=2))
    assert [r.chosen for r in v1.train] == [render_plan(right, version=1)] * 2
    assert [r.chosen for r in v2.train] == [render_plan(right, version=2)] * 2
    assert "${a0=step 0 of q}" in v2.train[0].chosen and "${a0}" in v1.train[0].chosen
    with pytest.raises(ConfigError, match="render_version must be one of"):
        PairConfig(render_version=3)
