import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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

HOSTILE = [
    "{",
    "}",
    "[",
    "]",
    '"',
    "\\",
    ":",
    ",",
    "\ud800",
    "\\ud800",
    "\\udfff",
    "NaN",
    "-Infinity",
    "1e999",
    "9" * 120,
    '{"agents": [',
    '{"answer": ',
    '{"id": "a", "type": "cot", "input": "',
    '"}]}',
    "${a}",
    "${\u0430}",
    "\x00",
    "```json\n",
    "```",
    "Answer: 7",
]


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
    [
        "",
        "   ",
        "no json here at all",
        '{"agents": [{"id": "a", "type": "cot", "input": "x"',
        "}{][",
        "\x00\xff garbage {{{",
    ],
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


def test_dropped_options_are_noted_on_the_plan_and_the_plan_stays_valid():
    value = {"agents": [agent("a", "self_consistency", samples=3, rounds=2), agent("b", input="${a}", top_k=1)]}
    plan = parse_and_validate(json.dumps(value))
    assert plan.dropped_options == {"a": ["rounds"], "b": ["top_k"]}
    assert plan.agents[0].options == {"samples": 3}
    assert "dropped_options" not in plan.to_json() and parse_plan(plan.to_json()).dropped_options == {}
    assert plan.model_dump()["dropped_options"] == {"a": ["rounds"], "b": ["top_k"]}  # what a trace records
    assert Plan.model_validate_json(plan.model_dump_json(by_alias=True)) == plan  # and reads back
    clean = parse_plan(json.dumps({"agents": [agent("a")]}))
    assert "dropped_options" not in clean.to_json() and "dropped_options" not in clean.model_dump()


def test_validating_a_built_plan_drops_unknown_options_the_same_way():
    built = Plan.model_validate({"agents": [agent("a", "cot", samples=3)]})
    plan = validate_plan(built)
    assert plan.agents[0].options == {} and plan.dropped_options == {"a": ["samples"]}
    assert built.agents[0].options == {"samples": 3}  # the caller's plan is not changed


def test_an_orchestrator_cannot_write_the_parsers_note():
    with pytest.raises(PlanError) as info:
        parse_plan(json.dumps({"agents": [agent("a")], "dropped_options": {}}))
    assert info.value.rule == "schema"


def test_option_bounds_come_from_the_catalog_and_every_agent_class_carries_its_types():
    from orchrm.mas.agents import AGENTS, Agent
    from orchrm.mas.options import CATALOG, IntOption
    from orchrm.mas.plans import AGENT_TYPES, option_bounds

    assert tuple(AGENTS) == tuple(CATALOG) == AGENT_TYPES  # one class per catalogued type, in the schema's order
    assert option_bounds("self_consistency") is AGENTS["self_consistency"].option_bounds
    assert option_bounds("self_consistency") == {"samples": IntOption(2, 9)}
    assert option_bounds("wizard") is None
    with pytest.raises(TypeError, match="wizard"):
        type("Wizard", (Agent,), {"type": "wizard"})
    for cls in AGENTS.values():  # every default a class fills is an option it accepts, within bounds
        for key, value in cls.defaults.items():
            assert cls.option_bounds[key].problem("x", key, value) is None


def test_topological_order_is_total_on_unvalidated_plans():
    value = {
        "agents": [agent("b"), agent("a"), agent("a"), agent("c")],
        "edges": [edge("b", "a"), edge("c", "b"), edge("b", "zz")],
    }
    plan = Plan.model_validate(value)
    assert topological_order(plan, cycles="append") == ["c", "b", "a"]
    sources = Plan.model_validate(
        {"agents": [agent("a"), agent("b", input="${a}"), agent("a")], "edges": [edge("a", "b")]}
    )
    assert topological_order(sources) == ["a", "a", "b"]
    cyclic = Plan.model_validate(
        {"agents": [agent("a"), agent("b"), agent("c")], "edges": [edge("a", "b"), edge("b", "a")]}
    )
    assert topological_order(cyclic, cycles="append") == ["c", "a", "b"]
    with pytest.raises(PlanError) as info:
        topological_order(cyclic)
    assert info.value.rule == "cycle" and info.value.agent == "a"
    assert cyclic.sinks() == ["c"]


@pytest.mark.parametrize(
    ("value", "rule", "agent_id"),
    [
        ({"agents": [agent("a", "wizard")], "edges": []}, "unknown_type", "a"),
        ({"agents": [agent("a"), agent("a", input="${a}")], "edges": []}, "duplicate_id", "a"),
        ({"agents": [agent("a b")], "edges": []}, "bad_id", "a b"),
        (
            {
                "agents": [agent("a", input="use ${b}"), agent("b", input="use ${a}")],
                "edges": [edge("b", "a"), edge("a", "b")],
            },
            "cycle",
            None,
        ),
        ({"agents": [agent("a", input="improve ${a}")], "edges": []}, "self_reference", "a"),
        (
            {"agents": [agent("a"), agent("b", input="${a}")], "edges": [edge("a", "b"), edge("b", "b")]},
            "self_reference",
            "b",
        ),
        ({"agents": [agent("a"), agent("b"), agent("c", input="${a}")], "edges": [edge("a", "c")]}, "isolated", "b"),
        (
            {
                "agents": [agent("a"), agent("b", input="${a}"), agent("c", input="${a}")],
                "edges": [edge("a", "b"), edge("a", "c")],
            },
            "sink_count",
            "c",
        ),
        ({"agents": [agent("a"), agent("b", input="plain")], "edges": [edge("a", "b")]}, "edge_mismatch", "b"),
        ({"agents": [agent("a"), agent("b", input="${\u0430}")], "edges": []}, "bad_reference", "b"),
        ({"agents": [agent("a"), agent("b", input="${ a }")], "edges": []}, "bad_reference", "b"),
        ({"agents": [agent("a"), agent("b", input="use \uff04\uff5ba\uff5d")], "edges": []}, "bad_reference", "b"),
        ({"agents": [agent("a"), agent("b", input="${a\u200b}")], "edges": []}, "bad_reference", "b"),
        ({"agents": [agent("a", input="${b}"), agent("b", input="${a}"), agent("c", input="${b}")]}, "cycle", None),
        ({"agents": [agent("a", input="${ghost}")], "edges": []}, "unknown_reference", "a"),
        (
            {"agents": [agent("a"), agent("b", input="${a}")], "edges": [edge("a", "b"), edge("a", "zz")]},
            "unknown_edge_end",
            "zz",
        ),
        (
            {"agents": [agent("a"), agent("b", input="${a}")], "edges": [edge("a", "b"), edge("a", "b")]},
            "duplicate_edge",
            "b",
        ),
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


def test_references_imply_edges_and_explicit_edges_must_agree():
    implied = {"agents": [agent("a"), agent("b"), agent("c", "cot", "Add ${a} and ${b}, then ${a} again.")]}
    plan = check(implied)
    assert [(e.src, e.dst) for e in plan.edges] == [("a", "c"), ("b", "c")]
    assert plan.sink() == "c" and plan.upstream("c") == ["a", "b"]
    partial = {**implied, "edges": [edge("b", "c")]}  # some edges written, the rest implied
    assert [(e.src, e.dst) for e in check(partial).edges] == [("a", "c"), ("b", "c")]
    extra = {**implied, "edges": [edge("a", "b")]}
    assert rule_of(extra).rule == "edge_mismatch"


def test_json_schema_makes_ids_types_options_and_references_well_formed():
    import jsonschema

    schema = plan_json_schema(AGENT_TYPES)
    fan = {
        "agents": [
            agent("a1", "search", "Velmor Labs staff?"),
            agent("a2", "search", "Quist Works staff?", steps=2),
            agent("a3", "python", "Add ${a1} and ${a2}, costs $3.", attempts=2),
        ]
    }
    jsonschema.validate(fan, schema)
    check(fan)  # what the grammar allows validates
    bad = [
        {"agents": GOOD["agents"]},  # ids are positional
        {**fan, "edges": []},  # the graph is the references; edges are not written
        {"agents": [agent("a1", "wizard")]},
        {"agents": [agent("a1", "cot", samples=3)]},  # an option of another type
        {"agents": [agent("a1", "self_consistency", samples=50)]},  # out of the type's bounds
        {"agents": [agent("a1", input="Improve ${a1}.")]},  # a self-reference
        {"agents": [agent("a1", input="Use ${a2}."), agent("a2")]},  # a forward reference (cycle or unknown)
        {"agents": [agent("a1"), agent("a2", input="Use ${b}.")]},
        {"agents": [agent(f"a{i}") for i in range(1, 6)]},
    ]
    for value in bad:
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(value, schema)
    single = plan_json_schema(AGENT_TYPES, "single")
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(fan, single)
    jsonschema.validate({"agents": [agent("a1", "python", "Compute 2 + 3.")]}, single)
    jsonschema.validate({"answer": "7"}, plan_json_schema(degree="direct"))


def test_parse_and_validate_shortcut():
    assert parse_and_validate(json.dumps(GOOD)).sink() == "c"


def test_plan_shape_names_types_by_level():
    from orchrm.mas.plans import plan_shape

    fan = check({"agents": [agent("a", "search"), agent("b", "search"), agent("t", "python", "Add ${a} and ${b}.")]})
    assert plan_shape(fan) == "search + search | python"
    assert plan_shape(check(GOOD)) == "cot + self_consistency | debate"
    assert plan_shape(None) == "invalid" and plan_shape(Plan(answer="4")) == "direct"


# ---- hostile JSON ------------------------------------------------------------------------------------

A_PLAN = '{"agents": [{"id": "a", "type": "cot", "input": "%s"}]}'


@pytest.mark.parametrize(
    "text, rule",
    [
        ('{"agents": ' + "[" * 50_000 + "]" * 50_000 + "}", "json_depth"),  # under MAX_PLAN_TEXT_CHARS
        ('{"answer": ' + "9" * 5000 + "}", "json_digits"),
        (A_PLAN % "hi \\ud800", "json_surrogate"),
        (A_PLAN % "hi \ud800", "json_surrogate"),
        ('Plan:\n```json\n{"agents": [], "answer": NaN}\n```', "json_non_finite"),
        ('{"answer": 1e999}', "json_non_finite"),
        ("{" * 5_000_000, "json_size"),
    ],
    ids=["deep", "digits", "escaped-surrogate", "raw-surrogate", "nan-in-fence", "overflow", "size"],
)
def test_hostile_json_is_a_plan_error_naming_the_rule(text, rule):
    # On main these raised RecursionError, ValueError, or (surrogates) passed into the agents' cache keys.
    with pytest.raises(PlanError) as info:
        parse_and_validate(text)
    assert info.value.rule == rule


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(HOSTILE) | st.text(max_size=3), max_size=40).map("".join))
def test_any_text_parses_to_a_plan_or_a_plan_error(text):
    for degree in ("direct", "dag"):
        try:
            plan = parse_and_validate(text, degree=degree)
        except PlanError as exc:
            assert exc.rule and exc.reason
        else:
            plan.to_json().encode("utf-8")


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=40), st.sampled_from(HOSTILE))
def test_hostile_text_in_an_agent_input_never_escapes_as_a_crash(body, piece):
    text = '{"agents": [{"id": "a", "type": "cot", "input": "' + body + piece + '"}]}'
    try:
        parse_and_validate(text)
    except PlanError:
        pass


def test_a_megabyte_of_braces_or_prose_parses_in_linear_time():
    import time

    for text in ("{" * 1_000_000, 'Let {x} be the set {1, 2}, ${a1} the input; {"y" z} ' * 18_000):
        start = time.perf_counter()
        with pytest.raises(PlanError):
            parse_plan(text)
        assert time.perf_counter() - start < 2.5  # main: 17.5 s and 12 s


def test_a_plan_among_prose_braces_is_still_found():
    text = "Let {x} be {1, 2}; I use ${a}. {not json} " + A_PLAN % "Solve." + ' {"tail": 1}'
    assert parse_plan(text).agents[0].input == "Solve."
