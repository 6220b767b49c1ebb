"""bench/content_pairs.py's rules on hand-built (right, wrong) pairs: what counts as the same plan, and which
content rule a difference meets first (issue #41, item 5)."""

import pytest

from bench_module import load_bench
from orchrm.mas.plans import AgentSpec, Edge, Plan

SUM_Q = "State the final answer to the following arithmetic problem: 860 + 112 ="
CITY_Q = "In which city was Zioxrim Kourste born?"


@pytest.fixture(scope="module")
def cp(request):
    return load_bench(request, "content_pairs.py")


def one(text: str, type_: str = "cot", **options) -> Plan:
    return Plan(agents=[AgentSpec(id="a1", type=type_, input=text, options=options)])


def fanout(ids: tuple[str, str, str], first: str, space: str = " ", **options) -> Plan:
    s1, s2, p = ids
    return Plan(
        agents=[
            AgentSpec(id=s1, type="search", input=first, options=options),
            AgentSpec(id=s2, type="search", input="How many people does Velb Works employ?"),
            AgentSpec(id=p, type="python", input=f"Add{space}${{{s1}}} and ${{{s2}}}."),
        ],
        edges=[Edge(src=s1, dst=p), Edge(src=s2, dst=p)],
    )


def test_the_same_plan_under_other_ids_and_spacing_is_equal_and_options_alone_are_apart(cp):
    q, first = "How many people do Arno Mills and Velb Works employ together?", "How many people does Arno employ?"
    right = fanout(("a1", "a2", "a3"), first)
    assert cp.classify(q, "9", right, fanout(("s1", "s2", "sum"), first, space="   ")) == cp.EQUAL
    assert cp.classify(q, "9", right, fanout(("a1", "a2", "a3"), first, top_k=3)) == cp.OPTIONS
    assert cp.classify(q, "9", right, fanout(("a1", "a2", "a3"), "Which year was Arno founded?")).startswith("content:")


@pytest.mark.parametrize(
    ("question", "gold", "right", "wrong", "rule"),
    [
        (
            SUM_Q,
            "972",
            "Compute 860 + 112.",
            "860 + 112 = 972. Which company was founded first, Arlen Mills or Dovet Labs? Answer with its name.",
            "copies a worked example",
        ),
        (SUM_Q, "972", "Add 860 and 112.", "860 + 112 equals 2082.", "states a wrong number"),
        (
            SUM_Q,
            "972",
            "Compute 860 + 112.",
            "860 + 112 = 972. Answer with its name.",
            "asks a number question for a name",
        ),
        (SUM_Q, "972", "860 + 112 = 972", "Compute 112.", "leaves out a value of the question"),
        (SUM_Q, "972", "Compute 860 - 112 + 0.", "Compute 860 + 112 - 0.", "other signs"),
        (SUM_Q, "972", "Compute 112 + 860.", "Add 112 to 860.", "same values, other wording"),
        (CITY_Q, "Sexhaven", CITY_Q, "In which year was Zioxrim Kourste born?", "asks about another attribute"),
        (CITY_Q, "Sexhaven", CITY_Q, "Zioxrim Kourste was born in Toronto.", "states another value"),
    ],
)
def test_a_content_difference_takes_the_first_rule_it_meets(cp, question, gold, right, wrong, rule):
    assert cp.classify(question, gold, one(right), one(wrong)) == f"content: {rule}"
    assert set(cp.CONTENT) <= set(cp.RULES)


def test_values_skip_sentence_openers_instruction_words_and_references(cp):
    assert cp.values("Which city is Rourkbury in? Answer with its name. Add ${a1} and 1,250.") == {"Rourkbury", "1250"}
    assert cp.sums("5 + 1 =") == cp.sums("1 + 5") != cp.sums("5 - 1")
