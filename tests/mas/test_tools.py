"""The exact tools: `calc`'s evaluator, `lookup`'s parsing, and both inside the executor (no LLM call)."""

import asyncio
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mas_fakes import scripted_llm
from orchrm.mas.agents import AGENTS, BadLookup, Calc, Lookup
from orchrm.mas.agents.arithmetic import CalcError, evaluate, formatted
from orchrm.mas.agents.tools import parse_lookup
from orchrm.mas.executor import execute_plan
from orchrm.mas.interop import to_mas_orchestra
from orchrm.mas.options import TOOL_TYPES
from orchrm.mas.plans import PlanError, parse_and_validate, plan_json_schema, plan_shape
from orchrm.tasks import load_task


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1 + 2 * 3", "7"),
        ("94100 - 38900", "55200"),
        ("7 / 2", "3.5"),
        ("6 / 3", "2"),
        ("-(4 - 10)", "6"),
        ("max(3, 9, 4)", "9"),
        ("'Arlen Mills' if 1912 < 1931 else 'Dovet Labs'", "Arlen Mills"),
        ("'A' if 5 > 9 else 'B'", "B"),
        ("3 < 4 < 5", "true"),
        ("2 ** 10", "1024"),
    ],
)
def test_calc_evaluates(text, value):
    assert formatted(evaluate(text)) == value


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("1 / 0", "division by zero"),
        ("10 ** 1000", "exponent"),
        ("9 ** 60", "beyond"),
        ("__import__('os').system('true')", "may be called"),
        ("().__class__", "not allowed"),
        ("Norvex Foundry + 3", "not an expression"),
        ("x + 1", "unknown name"),
        ("'a' * 3", "arithmetic on text"),
        ("'A' if 3 else 'B'", "comparison"),
        ("Add 3 and 4.", "not an expression"),
        ("", "empty"),
        ("1" + "+1" * 400, "longer than"),
        ("-" * 300 + "1", "deeper"),
        ("[1, 2]", "not allowed"),
        ("'a' < 3", "cannot compare"),
    ],
)
def test_calc_refuses_with_a_reason(text, why):
    with pytest.raises(CalcError, match=why):
        evaluate(text)


@given(st.text(max_size=80))
def test_calc_never_raises_anything_but_calc_error(text):
    try:
        formatted(evaluate(text))
    except CalcError:
        pass


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("founding year of Varnex Labs", ("founding year", "Varnex Labs")),
        ("  Population  of 'Brenford'. ", ("population", "Brenford")),
        ("headquarters city of Norvex   Foundry?", ("headquarters city", "Norvex Foundry")),
    ],
)
def test_lookup_input_is_attribute_of_entity(text, parsed):
    assert parse_lookup(text) == parsed


def test_lookup_input_without_of_is_refused():
    with pytest.raises(BadLookup, match="ATTRIBUTE of ENTITY"):
        parse_lookup("Varnex Labs founded")


def test_tool_types_are_registered_agents():
    assert {AGENTS["lookup"], AGENTS["calc"]} == {Lookup, Calc}
    assert set(TOOL_TYPES) <= set(AGENTS)
    schema = json.dumps(plan_json_schema(TOOL_TYPES))
    assert '"lookup"' in schema and '"calc"' in schema and '"cot"' not in schema


def _plan(*agents):
    return parse_and_validate(json.dumps({"agents": [{"id": i, "type": t, "input": x} for i, t, x in agents]}))


def test_a_tool_plan_executes_exactly_with_no_llm_call():
    task = load_task("world_qa:tools=exact")
    person, row = next(iter(task.world.people.items()))
    company = task.world.companies[row["employer"]]
    plan = _plan(
        ("a1", "lookup", f"employer of {person}"),
        ("a2", "lookup", "founding year of ${a1}"),
        ("a3", "calc", "${a2} + 100"),
    )
    llm = scripted_llm("never asked")  # the tools make no call (asserted below)
    ex = asyncio.run(execute_plan(plan, "q", llm, retriever=task.corpus))
    assert ex.final_answer == str(company["founded"] + 100)
    assert all(e.calls == [] and e.status == "ok" for e in ex.agents)
    assert plan_shape(plan) == "lookup | lookup | calc"


def test_a_wrong_entity_or_attribute_fails_the_plan_with_the_reason():
    task = load_task("world_qa:tools=exact")
    city = next(iter(task.world.cities))
    for text, why in (
        ("population of Nowhereville", "no entity named 'Nowhereville'"),
        (f"founding year of {city}", "is a city; its attributes are country, population"),
        (f"populaton of {city}", "not 'populaton'"),
    ):
        ex = asyncio.run(
            execute_plan(_plan(("a1", "lookup", text)), "q", scripted_llm("never asked"), retriever=task.corpus)
        )
        assert ex.final_answer is None
        assert why in ex.agents[0].error


def test_lookup_without_records_is_a_recorded_failure():
    task = load_task("world_qa")  # a corpus to search, no records
    ex = asyncio.run(
        execute_plan(
            _plan(("a1", "lookup", "population of X")), "q", scripted_llm("never asked"), retriever=task.corpus
        )
    )
    assert "NoRecords" in ex.agents[0].error


def test_mas_orchestra_export_refuses_tool_plans():
    with pytest.raises(PlanError, match="MAS-Orchestra has no agent for"):
        to_mas_orchestra(_plan(("a1", "lookup", "population of X")))
