import asyncio

import pytest

from mas_fakes import scripted_llm
from orchrm.mas.agents import AGENTS, AgentRun, AgentSettings, ProgramFailed
from orchrm.mas.agents.python import extract_code
from orchrm.mas.executor import execute_plan
from orchrm.mas.plans import AgentSpec, parse_and_validate


def run_python_agent(*replies, attempts=2, task="Compute 1663 - 5242 - 9376."):
    llm = scripted_llm(*replies)
    spec = AgentSpec(id="p", type="python", input=task, options={"attempts": attempts})
    run = AgentRun(llm=llm, question="Q?", task_input=task, settings=AgentSettings())
    result = asyncio.run(AGENTS["python"](spec).run(run))
    return result, run


def fenced(code: str) -> str:
    return f"Here is the program:\n```python\n{code}\n```"


def test_the_printed_result_is_the_answer():
    result, run = run_python_agent(fenced("print(1663 - 5242 - 9376)"))
    assert result.answer == "-12955"
    assert run.steps[0]["outcome"] == "ok" and run.steps[0]["code"] == "print(1663 - 5242 - 9376)"
    assert "Answer: -12955" in result.output
    assert run.calls[0].messages[-1].content.startswith("Original question")  # a single agent is the final one


def test_an_error_is_shown_to_the_model_and_it_retries():
    result, run = run_python_agent(fenced("print(undefined_name)"), fenced("print(2 + 3)"))
    assert result.answer == "5"
    assert [s["outcome"] for s in run.steps] == ["error", "ok"]
    retry = run.calls[1].messages
    assert "NameError" in retry[-1].content and retry[-2].role == "assistant"


@pytest.mark.parametrize(
    ("code", "outcome"),
    [
        ("while True:\n    pass", {"timeout", "cpu_limit"}),
        ("import socket\nsocket.create_connection(('1.1.1.1', 80), timeout=2)\nprint('connected')", {"error"}),
        ("print('x' * 10**7)", {"output_limit"}),
        ("x = 1", {"no_output"}),
    ],
)
def test_hostile_or_silent_programs_fail_with_the_outcome_recorded(code, outcome):
    with pytest.raises(ProgramFailed) as info:
        run_python_agent(fenced(code), attempts=1)
    assert "no attempt printed a result" in str(info.value)


def test_a_reply_without_code_is_recorded_and_retried():
    result, run = run_python_agent("The answer is 5.", fenced("print(5)"))
    assert result.answer == "5" and run.steps[0]["outcome"] == "no_code"


def test_extract_code_prefers_a_fence_and_accepts_bare_print():
    assert extract_code("```py\nprint(1)\n```") == "print(1)"
    assert extract_code("```python\nprint(2)") == "print(2)"  # an unclosed fence at the token limit
    assert extract_code("print(3)") == "print(3)"
    assert extract_code("I would add them.") is None


def test_a_looping_program_fails_its_agent_and_the_plan_records_it():
    plan = parse_and_validate(
        '{"agents": [{"id": "p", "type": "python", "input": "Loop.", "options": {"attempts": 1}},'
        ' {"id": "c", "type": "cot", "input": "Use ${p}."}]}'
    )
    ex = asyncio.run(execute_plan(plan, "Q?", scripted_llm(fenced("while True:\n    pass"))))
    p, c = ex.agents
    assert p.status == "failed" and "ProgramFailed" in p.error and p.steps[0]["outcome"] in {"timeout", "cpu_limit"}
    assert c.status == "skipped" and ex.final_answer is None
