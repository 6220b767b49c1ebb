import asyncio

import pytest

from mas_fakes import FakeCorpus, by_prompt, scripted_llm
from orchrm.errors import BackendTimeout
from orchrm.mas.agents import AGENTS, AgentRun, AgentSettings, NoCorpus, accepted, majority
from orchrm.mas.plans import AgentSpec
from orchrm.mas.run_config import RolloutSettings


def run_agent(type_, llm, options=None, retriever=None, task="Solve it.", settings=None):
    spec = AgentSpec(id="x", type=type_, input=task, options=options or {})
    run = AgentRun(
        llm=llm, question="What is 2+3?", task_input=task, settings=settings or AgentSettings(), retriever=retriever
    )
    result = asyncio.run(AGENTS[type_](spec).run(run))
    return result, run


def test_registry_has_the_six_llm_types_and_the_two_tools():
    assert set(AGENTS) == {"cot", "self_consistency", "reflexion", "debate", "search", "python", "lookup", "calc"}


def test_cot_is_one_call_with_question_and_input():
    llm = scripted_llm("2 plus 3 is 5.\nAnswer: 5")
    result, run = run_agent("cot", llm, task="Add the numbers.")
    assert result.answer == "5"
    assert len(run.calls) == 1
    user = run.calls[0].messages[-1].content
    assert "What is 2+3?" in user and "Add the numbers." in user
    assert llm.ledger.totals()["execute"].calls == 1


def test_votes_merge_equal_numbers_under_the_one_answer_key():
    assert majority(["4", "5", "5.0", "$5", None]) == ("5", {"#4": 1, "#5": 3})
    assert majority(["The Cat", "cat", "dog"]) == ("The Cat", {"cat": 2, "dog": 1})
    assert majority([None, None]) == (None, {})


def test_votes_are_total_and_an_answer_without_a_key_is_no_vote():
    # The old vote key raised on these (int(nan), int(inf)) and counted "the" as a vote for "".
    assert majority(["nan", "NaN", "7"]) == ("nan", {"#nan": 2, "#7": 1})
    assert majority(["inf", "7", "7"]) == ("7", {"#inf": 1, "#7": 2})
    assert majority(["the", "The", "7"]) == ("7", {"#7": 1})


def test_self_consistency_votes_over_k_samples():
    llm = scripted_llm("Answer: 4", "Answer: 5", "Answer: 5.0", "Answer: 7", "Answer: 5")
    result, run = run_agent("self_consistency", llm, {"samples": 5})
    assert result.answer == "5"
    assert len(run.calls) == 5
    assert all(c.temperature == 0.7 for c in run.calls)
    assert run.steps[0]["votes"]["#5"] == 3
    assert "Votes over 5 samples: 5 (3), 4 (1), 7 (1)" in result.output  # the tally text as it always read


def test_budgets_clip_what_a_plan_asks_for():
    _, run = run_agent(
        "self_consistency",
        scripted_llm("Answer: 5"),
        {"samples": 7},
        settings=AgentSettings(RolloutSettings(agent_max_samples=2)),
    )
    assert len(run.calls) == 2
    wrong = by_prompt({"strict reviewer": "VERDICT: WRONG"}, default="Answer: 4")
    _, run = run_agent(
        "reflexion", scripted_llm(wrong), {"rounds": 4}, settings=AgentSettings(RolloutSettings(agent_max_rounds=1))
    )
    assert len(run.calls) == 1 + 2 * 1


def test_reflexion_stops_when_the_critic_accepts():
    llm = scripted_llm(by_prompt({"strict reviewer": "Looks right.\nVERDICT: CORRECT"}, default="Answer: 5"))
    result, run = run_agent("reflexion", llm, {"rounds": 4})
    assert result.answer == "5"
    assert len(run.calls) == 2  # answer + one accepting critique


def test_reflexion_revises_up_to_r_rounds():
    llm = scripted_llm(
        by_prompt(
            {"strict reviewer": "Step 2 is off.\nVERDICT: WRONG", "reviewer found": "Answer: 6"}, default="Answer: 4"
        )
    )
    result, run = run_agent("reflexion", llm, {"rounds": 3})
    assert result.answer == "6"
    assert len(run.calls) == 1 + 2 * 3
    assert [s["accepted"] for s in run.steps] == [False, False, False]


def test_critic_verdict_parsing():
    assert accepted("fine\nVERDICT: CORRECT")
    assert not accepted("VERDICT: WRONG")
    assert not accepted("I think it is correct")  # no verdict line is not acceptance
    assert accepted("**VERDICT:** CORRECT")


def test_debate_runs_roles_rounds_and_a_judge():
    llm = scripted_llm(
        by_prompt({"As the judge": "B is right.\nAnswer: 5", "Other debaters": "Answer: 5"}, default="Answer: 4")
    )
    result, run = run_agent("debate", llm, {"roles": ["solver", "skeptic", "checker"], "rounds": 2})
    assert result.answer == "5"
    assert len(run.calls) == 3 * 2 + 1
    assert "Your role in this debate: skeptic" in run.calls[1].messages[0].content or any(
        "skeptic" in c.messages[0].content for c in run.calls
    )


def test_search_retrieves_then_searches_again_then_answers():
    corpus = FakeCorpus(
        {"p": "Ana Vel works for Mox Labs.", "c": "Mox Labs was founded in 1950.", "z": "Unrelated text."}
    )
    llm = scripted_llm("SEARCH: Ana Vel", "SEARCH: Mox Labs founded", "Mox Labs was founded in 1950.\nAnswer: 1950")
    result, run = run_agent("search", llm, {"steps": 3, "top_k": 1}, retriever=corpus, task="Who employs Ana Vel?")
    assert result.answer == "1950"
    assert corpus.queries == ["Ana Vel", "Mox Labs founded"]  # its own keywords, never the sub-task verbatim
    assert "founded in 1950" in run.calls[2].messages[-1].content
    assert len(run.calls) == 3


def test_search_must_answer_on_its_last_step():
    corpus = FakeCorpus({"a": "alpha beta"})
    llm = scripted_llm("SEARCH: alpha", "SEARCH: beta", "SEARCH: gamma", "Answer: alpha")
    result, run = run_agent("search", llm, {"steps": 2}, retriever=corpus, task="alpha")
    assert len(run.calls) == 3
    assert "Using only the documents above" in run.calls[-1].messages[-1].content


def test_search_runs_a_search_asked_for_before_a_guessed_answer():
    corpus = FakeCorpus({"p": "Ana Vel works for Mox Labs.", "c": "Mox Labs is headquartered in Oslo."})
    llm = scripted_llm("SEARCH: Ana Vel works", "SEARCH: Mox Labs headquartered\nAnswer: Paris", "Answer: Oslo")
    result, run = run_agent("search", llm, {"steps": 3, "top_k": 1}, retriever=corpus, task="Ana Vel works")
    assert corpus.queries == ["Ana Vel works", "Mox Labs headquartered"]
    assert result.answer == "Oslo" and len(run.calls) == 3


def test_search_stops_at_an_answer_written_before_a_search_line():
    corpus = FakeCorpus({"p": "Ana Vel works for Mox Labs."})
    llm = scripted_llm("SEARCH: Ana Vel", "Answer: Mox Labs\nSEARCH: anything else")
    result, run = run_agent("search", llm, {"steps": 3}, retriever=corpus, task="Ana Vel works")
    assert result.answer == "Mox Labs" and len(run.calls) == 2


def test_search_repeated_query_brings_documents_not_found_yet():
    corpus = FakeCorpus({"a": "Mox Labs alpha", "b": "Mox Labs beta", "c": "Mox Labs gamma", "z": "unrelated"})
    llm = scripted_llm("SEARCH: Mox Labs", "SEARCH: Mox Labs", "SEARCH: Mox Labs", "Answer: gamma")
    result, run = run_agent("search", llm, {"steps": 3, "top_k": 1}, retriever=corpus, task="Mox Labs")
    assert [s["hits"] for s in run.steps] == [["a"], ["b"], ["c"]]
    assert all(doc in run.calls[-1].messages[-1].content for doc in ("alpha", "beta", "gamma"))


def test_search_falls_back_to_the_sub_task_when_it_writes_no_keywords():
    corpus = FakeCorpus({"p": "Ana Vel works for Mox Labs."})
    llm = scripted_llm("I think we should look it up.", "Answer: Mox Labs")
    result, run = run_agent("search", llm, {"steps": 2}, retriever=corpus, task="Ana Vel works")
    assert corpus.queries == ["Ana Vel works"] and result.answer == "Mox Labs"
    assert run.steps[0] == {"query_fallback": "no SEARCH line; searching the sub-task text"}


def test_only_the_final_agent_sees_the_question_by_default():
    for mode, is_final, shown in [
        ("final", True, True),
        ("final", False, False),
        ("all", False, True),
        ("none", True, False),
    ]:
        llm = scripted_llm("Answer: 5")
        spec = AgentSpec(id="x", type="cot", input="Add the numbers.")
        run = AgentRun(
            llm=llm,
            question="What is 2+3?",
            task_input="Add the numbers.",
            settings=AgentSettings(RolloutSettings(agent_context=mode)),
            is_final=is_final,
        )
        asyncio.run(AGENTS["cot"](spec).run(run))
        assert ("What is 2+3?" in run.calls[0].messages[-1].content) is shown, (mode, is_final)


def test_search_without_corpus_fails_clearly():
    with pytest.raises(NoCorpus):
        run_agent("search", scripted_llm("Answer: 1"))


def test_llm_errors_propagate_out_of_agents():
    with pytest.raises(BackendTimeout):
        run_agent("cot", scripted_llm(BackendTimeout("slow")))
