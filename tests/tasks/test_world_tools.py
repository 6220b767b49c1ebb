"""world_qa:tools=exact: every kind answerable by a correct tool plan of at most 4 agents (check the checker), and
plans that name the wrong thing fail."""

import asyncio
import json

import pytest

from mas_fakes import scripted_llm
from orchrm.errors import ConfigError
from orchrm.mas.executor import execute_plan
from orchrm.mas.plans import SCHEMA_MAX_AGENTS, parse_and_validate
from orchrm.mas.rollout import agent_types_for
from orchrm.tasks import load_task
from orchrm.tasks.world_qa import ALL_KINDS

# (attribute chain per entity, how the chains' answers combine): the plan a correct orchestrator writes.
REFERENCE = {
    "employer": (["employer"], None),
    "birth_city": (["birth city"], None),
    "founded": (["founding year"], None),
    "population": (["population"], None),
    "employees": (["employees"], None),
    "birth_country": (["birth city", "country"], None),
    "employer_founded": (["employer", "founding year"], None),
    "employer_city": (["employer", "headquarters city"], None),
    "hq_population": (["headquarters city", "population"], None),
    "employer_hq_population": (["employer", "headquarters city", "population"], None),
    "employer_hq_country": (["employer", "headquarters city", "country"], None),
}
PAIR_ATTRIBUTE = {"founded": "founding year", "employees": "employees", "population": "population"}


def reference_plan(meta: dict) -> dict:
    kind, template, entities = meta["kind"], meta["template"], meta["entities"]
    agents: list[dict] = []

    def add(type_: str, text: str) -> str:
        agents.append({"id": f"a{len(agents) + 1}", "type": type_, "input": text})
        return "${" + agents[-1]["id"] + "}"

    if kind in ("lookup", "bridge", "chain"):
        ref = entities[0]
        for attribute in REFERENCE[template][0]:
            ref = add("lookup", f"{attribute} of {ref}")
    elif kind == "fanout":
        refs = [add("lookup", f"{PAIR_ATTRIBUTE[template]} of {e}") for e in entities]
        add("calc", " + ".join(refs))
    else:
        attribute = PAIR_ATTRIBUTE[template.removesuffix("_gap")]
        x, y = (add("lookup", f"{attribute} of {e}") for e in entities)
        if kind == "arithmetic":
            # founding: the later (second) minus the earlier; counts: the larger (first) minus the smaller
            add("calc", f"{y} - {x}" if template == "founded_gap" else f"{x} - {y}")
        else:
            a, b = entities
            op = "<" if template == "founded" else ">"
            add("calc", f"'{a}' if {x} {op} {y} else '{b}'")
    return {"agents": agents}


@pytest.fixture(scope="module")
def task():
    return load_task("world_qa:tools=exact")


def _run(task, plan, question):
    validated = parse_and_validate(json.dumps(plan))
    ex = asyncio.run(execute_plan(validated, question.question, scripted_llm("never asked"), retriever=task.corpus))
    assert all(e.calls == [] for e in ex.agents)
    return ex


def test_the_preset_offers_the_tools_alone_and_every_kind(task):
    assert agent_types_for(task) == ("lookup", "calc")
    assert task.kinds == ALL_KINDS
    assert agent_types_for(load_task("world_qa")) == (
        "cot",
        "self_consistency",
        "reflexion",
        "debate",
        "search",
        "python",
    )
    with pytest.raises(ConfigError, match="unknown world_qa tools"):
        load_task("world_qa:tools=fuzzy")


@pytest.mark.parametrize("split", ["train", "test"])
def test_every_question_has_a_correct_tool_plan_within_the_schema(task, split):
    questions = task.questions(150, split=split)
    assert {q.metadata["kind"] for q in questions} == set(ALL_KINDS)
    for q in questions:
        plan = reference_plan(q.metadata)
        assert len(plan["agents"]) <= SCHEMA_MAX_AGENTS
        ex = _run(task, plan, q)
        assert task.correct(ex.final_answer, q)[1], (q.question, plan, ex.final_answer, q.answer)


def test_content_decides_a_wrong_order_or_entity_is_wrong(task):
    q = next(q for q in task.questions(60, split="train") if q.metadata["kind"] == "arithmetic")
    plan = reference_plan(q.metadata)
    x, y = plan["agents"][-1]["input"].split(" - ")
    plan["agents"][-1]["input"] = f"{y} - {x}"  # the difference the wrong way round
    assert not task.correct(_run(task, plan, q).final_answer, q)[1]
    plan = reference_plan(q.metadata)
    plan["agents"][0]["input"] = plan["agents"][0]["input"].replace(q.metadata["entities"][0], "Ilsa Marrow")
    ex = _run(task, plan, q)
    assert ex.final_answer is None and "no entity named 'Ilsa Marrow'" in ex.agents[0].error


def test_the_prompt_examples_name_no_entity_of_the_world(task):
    names = {*task.world.people, *task.world.companies, *task.world.cities}
    assert not {"Ilsa Marrow", "Velmor Labs"} & names
