import json

import pytest

from orchrm.mas.plans import (
    AGENT_TYPES,
    Plan,
    PlanError,
    parse_and_validate,
    parse_plan,
    plan_json_schema,
    topological_order,
    validate_plan,
)


def agent(id, type="cot", input="Solve it.", **options):
    return {"id": id, "type": type, "input": input, "options": options}


def edge(a, b):
    return {"from": a, "to": b}


def check(value, **kwargs):
    return validate_plan(parse_plan(json.dumps(value)), **kwargs)


def rule_of(value, **kwargs):
    with pytest.raises(PlanError) as info:
        check(value, **kwargs)
    return info.value


GOOD = {
    "agents": [
        agent("a", "self_consistency", "Compute the cost.", samples=3),
        agent("b", "cot", "Another way to compute the cost."),
        agent("c", "debate", "Solvers said ${a} and ${b}; decide.", rounds=1),
    ],
    "edges": [edge("a", "c"), edge("b", "c")],
}


def test_good_plan_validates_and_orders():
    plan = check(GOOD)
    assert [a.id for a in plan.agents] == ["a", "b", "c"]
    assert plan.sink() == "c"
    assert topological_order(plan)[-1] == "c"
    assert plan.upstream("c") == ["a", "b"]


def test_single_agent_plan_is_valid():
    assert check({"agents": [agent("only")], "edges": []}).sink() == "only"


def test_parser_finds_json_in_prose_and_fences():
    fenced = "Here is my plan:\n```json\n" + json.dumps(GOOD) + "\n```\nGood luck!"
    assert len(parse_plan(fenced).agents) == 3
    prose = "Sure. " + json.dumps(GOOD) + " That is all."
    assert len(parse_plan(prose).agents) == 3


def test_parser_round_trips_edges_by_alias():
    plan = check(GOOD)
    again = parse_plan(plan.to_json())
    assert again == plan
    assert '"from"' in plan.to_json()


@pytest.mark.parametrize(
    "text",
    ["", "   ", "no json here at all", '{"agents": [{"id": "a", "type": "cot", "input": "x"', "}{][", "\x00\xff garbage {{{"],
)
def test_garbage_and_truncated_json_is_a_parse_error(text):
    with pytest.raises(PlanError) as info:
        parse_plan(text)
    assert info.value.rule == "parse"


def test_wrong_shape_is_a_schema_error_naming_the_agent():
    with pytest.raises(PlanError) as info:
        parse_plan(json.dumps({"agents": [{"id": "x", "type": "cot"}], "edges": []}))
    assert info.value.rule == "schema" and info.value.agent == "x"


def test_unknown_option_keys_are_dropped_at_parse_time():
    plan = parse_plan(json.dumps({"agents": [agent("a", "cot", samples=3)], "edges": []}))
    assert plan.agents[0].options == {}


@pytest.mark.parametrize(
    ("value", "rule", "agent_id"),
    [
        ({"agents": [agent("a", "wizard")], "edges": []}, "unknown_type", "a"),
        ({"agents": [agent("a"), agent("a", input="${a}")], "edges": []}, "duplicate_id", "a"),
        ({"agents": [agent("a b")], "edges": []}, "bad_id", "a b"),
        (
            {"agents": [agent("a", input="use ${b}"), agent("b", input="use ${a}")], "edges": [edge("b", "a"), edge("a", "b")]},
            "cycle",
            None,
        ),
        ({"agents": [agent("a", input="improve ${a}")], "edges": []}, "self_reference", "a"),
        ({"agents": [agent("a"), agent("b", input="${a}")], "edges": [edge("a", "b"), edge("b", "b")]}, "self_reference", "b"),
        ({"agents": [agent("a"), agent("b"), agent("c", input="${a}")], "edges": [edge("a", "c")]}, "isolated", "b"),
        (
            {"agents": [agent("a"), agent("b", input="${a}"), agent("c", input="${a}")], "edges": [edge("a", "b"), edge("a", "c")]},
            "sink_count",
            "c",
        ),
        ({"agents": [agent("a"), agent("b", input="plain")], "edges": [edge("a", "b")]}, "edge_mismatch", "b"),
        ({"agents": [agent("a"), agent("b", input="${a}")], "edges": []}, "edge_mismatch", "b"),
        ({"agents": [agent("a", input="${ghost}")], "edges": []}, "unknown_reference", "a"),
        ({"agents": [agent("a"), agent("b", input="${a}")], "edges": [edge("a", "b"), edge("a", "zz")]}, "unknown_edge_end", "zz"),
        ({"agents": [agent("a"), agent("b", input="${a}")], "edges": [edge("a", "b"), edge("a", "b")]}, "duplicate_edge", "b"),
        ({"agents": [agent(f"x{i}") for i in range(9)], "edges": []}, "too_many_agents", None),
        ({"agents": [agent("a", input="x" * 2001)], "edges": []}, "input_too_long", "a"),
        ({"agents": [agent("a", input="   ")], "edges": []}, "empty_input", "a"),
        ({"agents": [agent("a", "self_consistency", samples=50)], "edges": []}, "options", "a"),
        ({"agents": [agent("a", "debate", roles=["only one"])], "edges": []}, "options", "a"),
        ({"agents": [agent("a", "reflexion", rounds="two")], "edges": []}, "options", "a"),
        ({"agents": [], "edges": []}, "no_agents", None),
    ],
)
def test_each_rule_names_itself_and_the_agent(value, rule, agent_id):
    err = rule_of(value)
    assert err.rule == rule
    if agent_id is not None:
        assert err.agent == agent_id
    assert rule in str(err)


def test_cycle_names_an_agent_in_it():
    value = {
        "agents": [agent("s"), agent("a", input="${s} ${b}"), agent("b", input="${a}"), agent("t", input="${b}")],
        "edges": [edge("s", "a"), edge("b", "a"), edge("a", "b"), edge("b", "t")],
    }
    err = rule_of(value)
    assert err.rule == "cycle" and err.agent in {"a", "b"}


def test_no_source_when_every_agent_has_an_input_edge():
    # A cycle covering every agent leaves no source; the cycle rule fires first and names it.
    value = {"agents": [agent("a", input="${b}"), agent("b", input="${a}")], "edges": [edge("a", "b"), edge("b", "a")]}
    assert rule_of(value).rule == "cycle"


def test_types_outside_the_task_are_unknown():
    err = rule_of({"agents": [agent("a", "search")], "edges": []}, agent_types=("cot",))
    assert err.rule == "unknown_type"


def test_degrees():
    two = {"agents": [agent("a"), agent("b", input="${a}")], "edges": [edge("a", "b")]}
    assert rule_of(two, degree="single").rule == "degree"
    assert rule_of({"agents": [agent("a")], "edges": []}, degree="direct").rule == "degree"
    direct = validate_plan(Plan(answer="42"), degree="direct")
    assert direct.answer == "42" and not direct.agents
    with pytest.raises(PlanError) as info:
        validate_plan(Plan(answer="42"), degree="dag")
    assert info.value.rule == "no_agents"
    with pytest.raises(PlanError) as info:
        validate_plan(Plan(answer="  "), degree="direct")
    assert info.value.rule == "empty_answer"


def test_json_schema_accepts_a_good_plan_and_rejects_unknown_types():
    import jsonschema

    schema = plan_json_schema(AGENT_TYPES)
    jsonschema.validate(GOOD, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"agents": [agent("a", "wizard")], "edges": []}, schema)
    single = plan_json_schema(AGENT_TYPES, "single")
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(GOOD, single)
    jsonschema.validate({"answer": "7"}, plan_json_schema(degree="direct"))


def test_parse_and_validate_shortcut():
    assert parse_and_validate(json.dumps(GOOD)).sink() == "c"
