"""The evaluator loop against a scripted LLM: progressive disclosure, tools, and every fallback recorded."""

import json

import pytest

from orchrm.errors import BackendTimeout
from orchrm.evidence.agent import AgentConfig, EvaluatorAgent, JudgeTask
from orchrm.evidence.skills import load_skills
from orchrm.llm import LLM
from orchrm.llm.scripted import ScriptedBackend


def act(action, **args):
    return json.dumps({"action": action, **args})


FINAL = act("final_answer", reason="the step 36 - 5 = 30 is wrong", score=0.1, confidence=0.8)


def run(replies, task=None, max_steps=6):
    backend = ScriptedBackend(replies)
    llm = LLM(backend)
    agent = EvaluatorAgent(llm, load_skills(), AgentConfig(max_steps=max_steps))
    task = task or JudgeTask(
        "pointwise",
        "3 boxes of 12 pens, 5 given away. How many left?",
        ["3 * 12 = 36. 36 - 5 = 30. Answer: 30"],
        kind="math",
    )
    import asyncio

    return asyncio.run(agent.run(task)), backend, llm


def schema_actions(config):
    return {b["properties"]["action"]["const"] for b in config.json_schema.get("anyOf", [config.json_schema])}


def test_progressive_disclosure_and_a_full_run():
    outcome, backend, llm = run(
        [
            act("use_skill", skill="math-answer"),
            act("view_resource", resource="math-answer/solution-quality"),
            act("run_verifier", resource="math-answer/arithmetic-consistency"),
            act("run_python", code="print(3 * 12 - 5)"),
            FINAL,
        ]
    )
    assert outcome.final["score"] == 0.1 and outcome.flags == []
    first, second = backend.calls[0][1], backend.calls[1][1]
    assert schema_actions(first) == {"use_skill", "run_python", "final_answer"}  # only names before use_skill
    assert {"view_resource", "run_verifier", "list_resources"} <= schema_actions(second)
    assert "math-answer: " in backend.calls[0][0][0].content  # the catalog shows names and descriptions
    assert "Recompute" not in backend.calls[0][0][0].content  # resources appear only after use_skill
    observations = [s.observation for s in outcome.steps]
    assert "Procedure" in observations[0] and "arithmetic-consistency" in observations[0]
    assert "Final answer correct" in observations[1]
    assert "partial" in observations[2] and "36 - 5 = 30" in observations[2]
    assert "31" in observations[3]
    assert [e.source for e in outcome.evidence["response"]] == ["math-answer/arithmetic-consistency"]
    assert outcome.used_resources == ["math-answer/arithmetic-consistency", "math-answer/solution-quality"]
    assert llm.ledger.totals()["verify"].calls == 5 == outcome.calls


def test_invalid_json_and_unknown_tool_are_recorded_and_the_loop_goes_on():
    outcome, backend, llm = run(["this is not json", act("delete_files", path="/"), FINAL])
    assert outcome.final is not None
    assert sum(f.startswith("invalid_action") for f in outcome.flags) == 2
    assert "not a valid action" in backend.calls[1][0][-1].content
    assert outcome.calls == 3 and outcome.prompt_tokens > 0  # the bad replies' tokens are counted too
    assert llm.ledger.totals()["verify"].calls == 3


def test_resource_of_an_unloaded_skill_is_refused():
    outcome, backend, _ = run(
        [act("use_skill", skill="math-answer"), act("view_resource", resource="short-answer-qa/qa-faithfulness"), FINAL]
    )
    assert any("invalid_action" in f for f in outcome.flags)  # not in the schema's enum: rejected before any tool runs


def test_step_limit_forces_finalization():
    outcome, backend, _ = run([act("run_python", code="print(1)")] * 2 + [FINAL], max_steps=3)
    assert "forced_finalization" in outcome.flags
    last = backend.calls[-1][1]
    assert schema_actions(last) == {"final_answer"}
    assert "Step limit reached" in backend.calls[-1][0][-1].content
    assert outcome.final is not None
    # a model that ignores the forced finalisation ends with no final answer, flagged
    outcome, _, _ = run([act("run_python", code="print(1)")] * 3, max_steps=3)
    assert outcome.final is None and outcome.flags[-2:] == [outcome.flags[-2], "no_final_answer"]
    assert any(f.startswith("invalid_action") for f in outcome.flags)


def test_no_final_answer_is_flagged_not_defaulted():
    outcome, _, _ = run(["{}"] * 5, max_steps=2)
    assert outcome.final is None and "no_final_answer" in outcome.flags


def test_llm_failure_stops_the_loop_with_a_flag():
    outcome, _, _ = run([BackendTimeout("server took too long")])
    assert outcome.final is None
    assert any(f.startswith("llm_error") for f in outcome.flags) and "no_final_answer" in outcome.flags


def test_pairwise_targets_and_verdict_schema():
    task = JudgeTask("pairwise", "17 + 25 - 8?", ["42 - 8 = 34. Answer: 34", "42 - 8 = 36. Answer: 36"], kind="math")
    outcome, backend, _ = run(
        [
            act("use_skill", skill="math-answer"),
            act("run_verifier", resource="math-answer/arithmetic-consistency", target="both"),
            act("final_answer", reason="B has a wrong step", verdict="A", confidence=0.9),
        ],
        task=task,
    )
    assert outcome.final["verdict"] == "A"
    assert outcome.evidence["A"][0].score == 1.0 and outcome.evidence["B"][0].score == 0.0
    with pytest.raises(KeyError):
        backend.calls[0][1].json_schema["anyOf"][-1]["properties"]["score"]
