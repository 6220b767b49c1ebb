"""bench/kind_contrast.py's type-contrast pairs: one wording, entities of the other kind, labelled by execution."""

import json
from types import SimpleNamespace

import pytest

from bench_module import load_bench
from orchrm.mas.plans import parse_and_validate
from orchrm.tasks import load_task


@pytest.fixture(scope="module")
def kc(request):
    return load_bench(request, "kind_contrast.py")


@pytest.fixture(scope="module")
def task():
    return load_task("world_qa:tools=exact")


def _trace(qid, question, agents, correct=True, index=0):
    plan = parse_and_validate(json.dumps({"agents": [{"id": i, "type": t, "input": x} for i, t, x in agents]}))
    return SimpleNamespace(
        question_id=qid,
        question=question,
        plan=plan,
        plan_index=index,
        score=SimpleNamespace(correct=correct),
        task="world_qa:tools=exact",
    )


def test_a_company_question_gets_cities_and_the_plan_that_fits_them(kc, task):
    hi, lo = sorted(task.world.companies)[:2]
    trace = _trace(
        "q1",
        f"How many more people does {hi} employ than {lo}?",
        [
            ("a1", "lookup", f"employees of {hi}"),
            ("a2", "lookup", f"employees of {lo}"),
            ("a3", "calc", "${a1} - ${a2}"),
        ],
    )
    (row,) = kc.kind_contrast_pairs([trace], task.world, task.corpus, {"q1"})
    cities = list(row.metadata["swap"].values())
    assert set(row.metadata["swap"]) == {hi, lo} and all(c in task.world.cities for c in cities)
    assert f"How many more people does {cities[0]} employ than {cities[1]}?" in row.prompt
    assert f"population of {cities[0]}" in row.chosen and f"employees of {cities[0]}" in row.rejected
    assert hi not in row.prompt + row.chosen + row.rejected
    assert row.source == "counterfactual" and row.question_id == "q1"
    assert kc.kind_contrast_pairs([trace], task.world, task.corpus, {"q1"}) == [row]  # seeded: the same swap again


def test_nothing_is_made_where_the_label_would_be_a_guess(kc, task):
    city, other = sorted(task.world.cities)[:2]
    company = sorted(task.world.companies)[0]
    population = [("a1", "lookup", f"population of {city}"), ("a2", "lookup", f"population of {other}")]
    cases = [
        # a city's population has two company counterparts (employees, founding year): skipped, not guessed
        _trace(
            "q1",
            f"How many more people live in {city} than in {other}?",
            [*population, ("a3", "calc", "${a1} - ${a2}")],
        ),
        # a wrong plan, a plan with an LLM agent, a question outside the allowed ones
        _trace(
            "q2",
            f"How many people does {company} employ?",
            [("a1", "lookup", f"employees of {company}")],
            correct=False,
        ),
        _trace("q3", f"How many people does {company} employ?", [("a1", "cot", f"employees of {company}")]),
        _trace("q4", f"How many people does {company} employ?", [("a1", "lookup", f"employees of {company}")]),
    ]
    assert kc.kind_contrast_pairs(cases, task.world, task.corpus, {"q1", "q2", "q3"}) == []
