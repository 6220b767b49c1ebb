"""Counterfactual plan edits: each kind on hand-made plans, and properties over generated valid plans."""

import json
import random
import re
from typing import get_args

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from orchrm.errors import ConfigError
from orchrm.mas.plans import REFERENCE, parse_and_validate, validate_plan
from orchrm.pairs.edit_kinds import EDIT_KINDS, NUMBER, EditKind, nearby_numbers, numbers_in
from orchrm.pairs.edits import choose_edits, edit_plan
from orchrm.tasks.base import Question

PEOPLE = ["Ada Lund", "Bo Ek", "Cy Moss", "Di Park"]
COMPANIES = ["Acme Works", "Zeta Labs", "Orbit Foods"]
NAMES = [PEOPLE, COMPANIES]


def question(*entities):
    return Question(id="q", question="?", answer="1", metadata={"entities": list(entities)})


def plan(*inputs, types=None):
    types = types or ["search"] * len(inputs)
    agents = [{"id": f"a{i}", "type": t, "input": text} for i, (t, text) in enumerate(zip(types, inputs, strict=True))]
    return parse_and_validate(json.dumps({"agents": agents}))


BRIDGE = plan(
    "Find the company that Ada Lund works for.",
    "Find the year ${a0} was founded.",
    "Compute 2026 minus ${a1}.",
    types=["search", "search", "python"],
)


def inputs(p):
    return [a.input for a in p.agents]


def test_unknown_kind_is_a_config_error():
    with pytest.raises(ConfigError, match="unknown edit kind"):
        edit_plan(BRIDGE, question(), "shuffle", random.Random(0))


def test_swap_entity_replaces_the_named_entity_everywhere_with_one_of_its_group():
    edit = edit_plan(BRIDGE, question("Ada Lund"), "swap-entity", random.Random(0), NAMES)
    old, new = re.fullmatch(r"'(.+)' -> '(.+)'", edit.description).groups()
    assert old == "Ada Lund" and new in PEOPLE and new != old
    assert inputs(edit.plan) == [s.replace(old, new) for s in inputs(BRIDGE)]
    assert edit.valid and edit.error is None


def test_swap_entity_needs_a_named_entity_and_another_name():
    assert edit_plan(BRIDGE, question("Nobody Here"), "swap-entity", random.Random(0)) is None
    assert edit_plan(BRIDGE, question("Ada Lund"), "swap-entity", random.Random(0)) is None  # no other name


def test_swap_number_keeps_references_and_other_numbers():
    p = plan("Add 1,200 and 7.5 to 12.", "Subtract 12 from ${a0} then add a12.")
    edit = edit_plan(p, question(), "swap-number", random.Random(3))
    old, new = edit.description.split(" -> ")
    assert old in {"1,200", "7.5", "12"} and new != old and NUMBER.fullmatch(new)
    assert ("," in new) == ("," in old) and ("." in new) == ("." in old)
    assert inputs(edit.plan) == [NUMBER.sub(lambda m: new if m.group() == old else m.group(), s) for s in inputs(p)]
    assert "${a0}" in edit.plan.agents[1].input and "a12" in edit.plan.agents[1].input


def test_nearby_numbers_differ_and_keep_their_form():
    rng = random.Random(0)
    for token in ("0", "7", "1912", "94,100", "3.25"):
        near = nearby_numbers(token, rng)
        assert near and token not in near and all(NUMBER.fullmatch(n) for n in near)
    assert nearby_numbers("9" * 40, rng) == []  # too long to be a number worth editing


def test_drop_hop_rewires_readers_to_the_dropped_agents_inputs():
    edit = edit_plan(BRIDGE, question(), "drop-hop", random.Random(0))
    assert edit.valid and edit.description in {"dropped a0 (search)", "dropped a1 (search)"}
    if edit.description.startswith("dropped a1"):
        assert inputs(edit.plan) == ["Find the company that Ada Lund works for.", "Compute 2026 minus ${a0}."]
    assert len(edit.plan.agents) == 2


def test_drop_hop_needs_two_agents():
    assert edit_plan(plan("Find it."), question(), "drop-hop", random.Random(0)) is None


def test_reorder_hops_keeps_the_shape_and_moves_the_sub_tasks():
    edit = edit_plan(BRIDGE, question(), "reorder-hops", random.Random(0))
    assert edit.valid and [a.type for a in edit.plan.agents] == ["search", "search", "python"]
    assert [a.references() for a in edit.plan.agents] == [a.references() for a in BRIDGE.agents]
    assert inputs(edit.plan) != inputs(BRIDGE)


def test_break_reference_prefers_a_runnable_break():
    p = plan("Find A.", "Find B.", "Subtract ${a1} from ${a0}.", types=["search", "search", "python"])
    edit = edit_plan(p, question(), "break-reference", random.Random(0))
    assert edit.valid and edit.description == "a2: ${a1} <-> ${a0}"
    assert edit.plan.agents[2].input == "Subtract ${a0} from ${a1}."


def test_a_break_that_cannot_run_is_an_invalid_edit_with_its_rule():
    edit = edit_plan(BRIDGE, question(), "break-reference", random.Random(0))  # a chain: every break strands an agent
    assert not edit.valid and edit.plan is None and edit.error.rule
    assert json.loads(edit.text)["agents"]  # the edited plan is kept, to render


def test_paraphrase_rewords_frames_and_is_deterministic():
    p = plan("Find the founder of Find Corp.", "Sub-task: ${a0} in 1999?")
    a = edit_plan(p, question("Find Corp"), "paraphrase", random.Random(0))
    b = edit_plan(p, question("Find Corp"), "paraphrase", random.Random(99))
    assert a == b and a.valid
    assert inputs(a.plan) == ["Look up the founder of Find Corp.", "${a0} in 1999?"]


def test_direct_answers_are_not_edited():
    direct = parse_and_validate('{"answer": "4"}', degree="direct")
    assert all(edit_plan(direct, question(), k, random.Random(0)) is None for k in EDIT_KINDS)


def test_choose_edits_is_seeded_distinct_and_grows_as_a_prefix():
    q = question("Ada Lund")
    few = choose_edits(BRIDGE, q, EDIT_KINDS, 3, "s", NAMES)
    many = choose_edits(BRIDGE, q, EDIT_KINDS, 9, "s", NAMES)
    assert len(few) == 3 and many[:3] == few
    assert choose_edits(BRIDGE, q, EDIT_KINDS, 9, "s", NAMES) == many
    assert len({e.text for e in many}) == len(many) and BRIDGE.to_json() not in {e.text for e in many}
    assert choose_edits(BRIDGE, q, EDIT_KINDS, 9, "other seed", NAMES) != many
    assert choose_edits(plan("Find it."), q, ["drop-hop", "reorder-hops"], 4, "s") == []


# ---- properties over generated valid plans -------------------------------------------------------------

WORDS = ["Find", "the", "year", "Compute", "look up", "Check", "sum", "of", "Determine", "value", "Sub-task:", "and"]
ENTITIES = ["Ada Lund", "Bo Ek", "Acme Works", "Zeta Labs"]


OPTIONS = {
    "cot": {},
    "search": {"top_k": 2},
    "python": {},
    "self_consistency": {"samples": 3},
    "debate": {"roles": ["pro", "con"], "rounds": 1},
}


@st.composite
def valid_plans(draw):
    n = draw(st.integers(1, 5))
    agents = []
    for i in range(n):
        parts = draw(
            st.lists(st.sampled_from(WORDS + ENTITIES) | st.integers(0, 99999).map(str), min_size=1, max_size=6)
        )
        refs = draw(st.lists(st.integers(0, i - 1), max_size=2, unique=True)) if i else []
        parts += [f"${{a{r}}}" for r in refs]
        draw(st.randoms()).shuffle(parts)
        kind = draw(st.sampled_from(list(OPTIONS)))
        agents.append({"id": f"a{i}", "type": kind, "input": " ".join(parts), "options": OPTIONS[kind]})
    read = {r for a in agents for r in REFERENCE.findall(a["input"])}
    for a in agents[:-1]:
        if a["id"] not in read:
            agents[-1]["input"] += f" ${{{a['id']}}}"
    return parse_and_validate(json.dumps({"agents": agents}))


def _entities(text):
    return sorted(e for e in ENTITIES for _ in re.finditer(rf"(?<!\w){re.escape(e)}(?!\w)", text))


COMMON = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@COMMON
@given(
    valid_plans(), st.sampled_from(EDIT_KINDS), st.integers(0, 2**16), st.lists(st.sampled_from(ENTITIES), max_size=2)
)
def test_edits_never_crash_and_say_whether_the_plan_runs(p, kind, seed, entities):
    edit = edit_plan(p, question(*entities), kind, random.Random(seed), [ENTITIES[:2], ENTITIES[2:]])
    if edit is None:
        return
    assert edit.kind == kind and edit.description
    assert (edit.plan is None) != (edit.error is None)
    if edit.plan is not None:
        assert validate_plan(edit.plan) == edit.plan
        assert inputs(edit.plan) != inputs(p) or [a.id for a in edit.plan.agents] != [a.id for a in p.agents]


@COMMON
@given(valid_plans(), st.lists(st.sampled_from(ENTITIES), max_size=3))
def test_paraphrase_keeps_entities_numbers_and_references(p, entities):
    edit = edit_plan(p, question(*entities), "paraphrase", random.Random(0), [ENTITIES])
    assert edit is not None
    for before, after in zip(inputs(p), inputs(edit.plan or p), strict=True):
        assert REFERENCE.findall(after) == REFERENCE.findall(before)
        assert numbers_in(after) == numbers_in(before)
        assert _entities(after) == _entities(before)
    assert edit.valid or edit.error.rule == "input_too_long"


@COMMON
@given(valid_plans(), st.integers(0, 2**16))
def test_a_swap_changes_exactly_what_it_says(p, seed):
    for kind in ("swap-entity", "swap-number"):
        edit = edit_plan(p, question(*ENTITIES), kind, random.Random(seed), [ENTITIES[:2], ENTITIES[2:]])
        if edit is None:
            continue
        assert edit.valid  # a swap never touches the graph
        old, new = re.fullmatch(r"'?(.+?)'? -> '?(.+?)'?", edit.description).groups()
        pattern = re.compile(rf"(?<!\w){re.escape(old)}(?!\w)") if kind == "swap-entity" else None
        for before, after in zip(inputs(p), inputs(edit.plan), strict=True):
            if kind == "swap-entity":
                expected = pattern.sub(new, before)
            else:
                expected = NUMBER.sub(lambda m, o=old, n=new: n if m.group() == o else m.group(), before)
            assert after == expected
            assert REFERENCE.findall(after) == REFERENCE.findall(before)


def test_swap_attribute_changes_one_lookup_attribute_and_needs_a_lookup():
    tools = plan(
        "employees of Acme Works", "employees of Zeta Labs", "${a0} - ${a1}", types=["lookup", "lookup", "calc"]
    )
    edit = edit_plan(tools, question("Acme Works", "Zeta Labs"), "swap-attribute", random.Random(0))
    assert edit is not None and edit.valid
    changed = [(a, b) for a, b in zip(inputs(tools), inputs(edit.plan), strict=True) if a != b]
    assert len(changed) == 1 and changed[0][0].startswith("employees of ")
    assert not changed[0][1].startswith("employees") and changed[0][1].endswith(" of " + changed[0][0][13:])
    assert edit_plan(BRIDGE, question("Ada Lund"), "swap-attribute", random.Random(0)) is None


def test_flip_operator_changes_one_operator_or_the_branches_and_keeps_references():
    tools = plan(
        "population of Oslo",
        "population of Rome",
        "'Oslo' if ${a0} > ${a1} else 'Rome'",
        "${a2} ${a0}-${a1}",
        types=["lookup", "lookup", "calc", "calc"],
    )
    seen = set()
    for seed in range(12):
        edit = edit_plan(tools, question("Oslo", "Rome"), "flip-operator", random.Random(seed))
        assert edit is not None and edit.valid
        changed = [(a, b) for a, b in zip(inputs(tools), inputs(edit.plan), strict=True) if a != b]
        assert len(changed) == 1
        seen.add(changed[0][1])
        assert REFERENCE.findall(changed[0][1]) == REFERENCE.findall(changed[0][0])
    assert seen == {
        "'Oslo' if ${a0} < ${a1} else 'Rome'",
        "'Rome' if ${a0} > ${a1} else 'Oslo'",
        "${a2} ${a0}+${a1}",
    }


def test_flip_operator_leaves_hyphens_and_signs_alone():
    words = plan("Find the co-founder of Acme Works.", "Subtract -3 from ${a0}.")
    assert edit_plan(words, question("Acme Works"), "flip-operator", random.Random(0)) is None


def test_the_edit_kind_type_names_every_registered_kind():
    assert EDIT_KINDS == get_args(EditKind)
