"""The plan-shape prior: signatures at three grains, Beta smoothing toward the global rate, and back-off."""

import json

import pytest

from orchrm.bon.prior import ShapePrior, plan_shape, plan_signature
from orchrm.errors import RunFileError
from orchrm.mas.plans import parse_plan
from orchrm.mas.traces import TraceWriter
from synthetic_traces import trace


def plan_json(*levels, options=None):
    """A plan with one level per argument (a tuple of types each); every agent reads every agent one level up."""
    agents, edges, prev = [], [], []
    options = options or {}
    for depth, types in enumerate(levels):
        ids = []
        for j, t in enumerate(types):
            aid = f"{t}{depth}{j}"
            refs = " ".join(f"${{{p}}}" for p in prev)
            agents.append({"id": aid, "type": t, "input": f"do it {refs}".strip(), "options": options.get(aid, {})})
            edges += [{"from": p, "to": aid} for p in prev]
            ids.append(aid)
        prev = ids
    return json.dumps({"agents": agents, "edges": edges})


def plan(*levels, options=None):
    return parse_plan(plan_json(*levels, options=options))


def test_plan_shape_groups_agent_types_by_topological_level():
    p = plan(("search", "search"), ("cot",))
    assert plan_shape(p) == "search + search | cot"
    fan = plan(("search", "cot"), ("reflexion",), options={"cot01": {}, "reflexion10": {"rounds": 2}})
    assert plan_shape(fan) == "cot + search | reflexion"
    assert plan_signature(fan, "plan") == "cot + search | reflexion(rounds=2)"
    assert plan_signature(fan, "types") == "cot + reflexion + search"
    assert plan_shape(parse_plan('{"answer": "4"}')) == "direct"
    with pytest.raises(ValueError, match="grain"):
        plan_signature(fan, "edges")


def test_debate_roles_count_not_their_text():
    a = plan(("debate",), options={"debate00": {"rounds": 2, "roles": ["pro", "con"]}})
    b = plan(("debate",), options={"debate00": {"rounds": 2, "roles": ["skeptic", "optimist"]}})
    assert plan_signature(a) == plan_signature(b) == "debate(roles=2,rounds=2)"


def fitted(strength=2.0):
    sc3 = plan_json(("self_consistency",), options={"self_consistency00": {"samples": 3}})
    cot = plan_json(("cot",))
    traces = [trace(f"q{i}", 0, sc3, correct=i < 8) for i in range(10)]  # 8 of 10
    traces += [trace(f"q{i}", 1, cot, correct=False) for i in range(2)]  # 0 of 2
    traces += [trace("q0", 2, "{nope", invalid=True), trace("held", 0, cot, correct=True)]
    return ShapePrior.fit(traces, strength=strength, exclude={"held"})


def test_rates_are_beta_smoothed_toward_the_global_rate():
    prior = fitted()
    assert prior.total.trials == 12 and prior.total.successes == 8  # invalid and held-out traces not counted
    g = (8 + 1) / (12 + 2)
    assert prior.global_rate == pytest.approx(g)
    sc3 = plan(("self_consistency",), options={"self_consistency00": {"samples": 3}})
    assert prior.score(sc3) == pytest.approx((8 + 2 * g) / (10 + 2))
    assert prior.score(plan(("cot",))) == pytest.approx((0 + 2 * g) / (2 + 2))
    assert fitted(strength=1000).score(plan(("cot",))) == pytest.approx(g, abs=0.01)  # strong prior: near global


def test_unseen_signatures_back_off_to_coarser_grains_then_the_global_rate():
    prior = fitted()
    g = prior.global_rate
    sc5 = plan(("self_consistency",), options={"self_consistency00": {"samples": 5}})  # options never seen
    hit = prior.lookup(sc5)
    assert hit.grain == "shape" and hit.signature == "self_consistency" and hit.trials == 10
    chain = plan(("cot",), ("self_consistency",))  # this wiring never seen; its set of types neither
    assert prior.lookup(chain).grain is None and prior.score(chain) == pytest.approx(g)
    two = plan(("cot", "cot"))  # shape "cot + cot" unseen, type set {cot} seen twice
    assert prior.lookup(two).grain == "types" and prior.lookup(two).trials == 2
    assert ShapePrior().score(two) == 0.5  # fitted on nothing


def test_a_prior_round_trips_through_json_and_reads_a_run_folder(tmp_path):
    with TraceWriter(tmp_path / "traces.jsonl") as w:
        w.write(trace("q1", 0, plan_json(("cot",)), correct=True))
    prior = ShapePrior.from_file(tmp_path)
    assert prior.total.trials == 1 and prior.summary()["signatures"] == {"plan": 1, "shape": 1, "types": 1}
    assert ShapePrior.model_validate_json(prior.model_dump_json()) == prior
    with pytest.raises(RunFileError, match="no traces"):
        ShapePrior.from_file(tmp_path / "missing.jsonl")
