"""MAS-Orchestra both ways: texts its medium-level parser runs (harmony_parser/medium.py with common.extract_xml)
import with the agents, edges and data flow it runs, or are refused with a rule docs/design.md lists; import and
the reward path read one text one way (`read_completion`). Fixtures are small hand-written texts in its format."""

import pytest

from orchrm.mas.completion import read_plan
from orchrm.mas.interop import read_completion, read_mas_orchestra, to_mas_orchestra
from orchrm.mas.interop._executions import _plan
from orchrm.mas.plans import PlanError, validate_plan


def agent(agent_id, body="<agent_input>solve</agent_input>", name="CoTAgent"):
    return (
        f"<agent><agent_id>{agent_id}</agent_id><agent_name>{name}</agent_name>"
        f"<agent_description>d</agent_description><required_arguments>{body}</required_arguments></agent>\n"
    )


def edges(*pairs):
    return "<edge>" + "".join(f"<from>{a}</from><to>{b}</to>" for a, b in pairs) + "</edge>\n"


CHAIN = agent("1st") + agent("2nd", "<agent_input>Check ${1st}</agent_input>") + edges(("1st", "2nd"))


def imported(text):
    plan, error, _ = _plan(text, "mas-orchestra")
    return plan, error


def test_ids_the_prompt_allows_import_alike():
    # propose_harmony_medium.py: "contain only alphanumeric or underscore characters"; a leading digit included.
    plan, error = imported(CHAIN)
    assert error is None and [a.id for a in plan.agents] == ["1st", "2nd"] and plan.sink() == "2nd"


def test_an_inner_tag_left_unclosed_reads_to_the_block_end():
    # mirrors propose_harmony_medium_igsm_parallel.py, whose second agent never closes its <agent_input>
    text = (
        agent("a")
        + agent("b", "<agent_input>Passage: x.\n  Task: count")
        + agent("c", "<agent_input>${a} ${b}</agent_input>")
    )
    plan, error = imported(text + edges(("a", "c"), ("b", "c")))
    assert error is None and plan.agent("b").input == "Passage: x.\n  Task: count"


def test_a_repeated_id_is_its_first_block():
    text = (
        agent("a")
        + agent("a", "<agent_input>other</agent_input>", "SCAgent")
        + agent("b", "<agent_input>${a}</agent_input>")
    )
    plan, error = imported(text + edges(("a", "b")))
    assert error is None and [(a.id, a.type, a.input) for a in plan.agents] == [
        ("a", "cot", "solve"),
        ("b", "cot", "${a}"),
    ]


def test_a_spaced_reference_is_refused_with_its_reason():
    # MAS-Orchestra substitutes only `${a}` exactly and passes `${ a }` on as text
    plan, error = imported(agent("a") + agent("b", "<agent_input>${ a }</agent_input>") + edges(("a", "b")))
    assert plan is None and error.rule == "bad_reference" and "as text" in error.message


def test_python_quoted_role_lists_with_escapes():
    roles = "<agent_input>go</agent_input><debate_roles>['Devil\\'s advocate', \"Judge\"]</debate_roles>"
    plan, error = imported(agent("d", roles, "DebateAgent"))
    assert error is None and plan.agents[0].options["roles"] == ["Devil's advocate", "Judge"]
    _, error = imported(
        agent("d", "<agent_input>go</agent_input><debate_roles>['A', 'B']</debate_roles>", "DebateAgent")
    )
    assert error.rule == "options"  # MAS-Orchestra drops a debate block whose roles are one character


def test_gpt_oss_final_channel_is_the_plan():
    text = "analysisWe need one CoT agent.assistantfinal" + agent("a")
    assert [a.id for a in read_plan(text).agents] == ["a"] and imported(text)[1] is None
    plan_in_analysis = "analysis" + agent("x") + "assistantfinal" + agent("a")
    assert [a.id for a in read_plan(plan_in_analysis).agents] == ["a"]
    assert imported(plan_in_analysis)[1].rule == "mas_orchestra_differs"  # medium.py reads the analysis too


def test_agent_tags_in_reasoning_are_read_alike_by_both_paths_and_refused_by_import():
    text = "<think>draft: " + agent("x") + "</think>" + agent("a")
    assert read_plan(text) == read_completion(text).plan
    assert [a.id for a in read_plan(text).agents] == ["a"]
    assert imported(text)[1].rule == "mas_orchestra_differs"
    prose = "<thinking>I could write an agent or an edge.</thinking>" + agent("a")
    assert imported(prose)[1] is None


def test_answer_is_a_direct_answer_on_the_reward_path_too():
    assert read_plan("<answer> 42 </answer>").answer == "42"
    plan, error = imported("<thinking>easy</thinking><answer>42</answer>")
    assert error is None and plan.answer == "42"
    with pytest.raises(PlanError):
        read_plan("<answer>  </answer>")


def test_a_draft_then_a_final_plan_reads_the_final_and_import_says_why_not():
    draft = agent("a") + agent("b", "<agent_input>${a}</agent_input>") + edges(("a", "b"))
    final = agent("c") + agent("d", "<agent_input>use ${c}</agent_input>") + edges(("c", "d"))
    assert [a.id for a in validate_plan(read_plan(draft + "Better:\n" + final)).agents] == ["c", "d"]
    assert imported(draft + final)[1].rule == "mas_orchestra_differs"


def test_edges_without_data_keep_the_worked_example_data_flow():
    # mirrors propose_harmony_medium_igsm_combine.py: a QA agent feeds the sink by an edge the sink never quotes
    text = (
        agent("s")
        + agent("qa", "<agent_input>check ${s}</agent_input>")
        + agent("f", "<agent_input>box ${s}</agent_input>")
        + edges(("s", "qa"), ("s", "f"), ("qa", "f"))
    )
    plan, error = imported(text)
    assert error is None and plan.sink() == "f" and plan.agent("f").input == "box ${s}"
    assert {(e.src, e.dst) for e in plan.edges} == {("s", "qa"), ("s", "f"), ("qa", "f")}
    assert validate_plan(read_mas_orchestra(to_mas_orchestra(read_mas_orchestra(text))).plan) == plan


def test_the_writer_refuses_what_mas_orchestra_would_misread():
    plan = read_mas_orchestra(agent("a")).plan
    for bad in ('ends in "quote"', "a \\N{x} escape"):
        with pytest.raises(PlanError) as info:
            to_mas_orchestra(plan, descriptions={"a": bad})
        assert info.value.rule == "unrepresentable"
    with pytest.raises(PlanError):
        to_mas_orchestra(plan, thinking="I will add <agent> blocks")
