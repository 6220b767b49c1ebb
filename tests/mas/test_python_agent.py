import asyncio

import pytest

from mas_fakes import scripted_llm
from orchrm.mas.agents import AGENTS, AgentRun, AgentSettings, ProgramFailed
from orchrm.mas.agents.python import echo_last_expression, extract_code
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


def test_a_program_ending_in_an_expression_shows_its_value_like_a_notebook():
    # An agent that sees only its sub-task often writes the computation without print() (context none).
    result, run = run_python_agent(fenced("1663 - 5242 - 9376"), attempts=1)
    assert result.answer == "-12955" and run.steps[0]["echoed"] and run.steps[0]["outcome"] == "ok"
    assert run.steps[0]["code"] == "1663 - 5242 - 9376"  # the model's program is recorded as written


def test_a_program_that_printed_is_not_run_again_or_echoed():
    result, run = run_python_agent(fenced("print(2)\n3 + 4"), attempts=1)
    assert result.answer == "2" and "echoed" not in run.steps[0]


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("x = 5\nx * (2 +\n  3)", "x = 5\n__value = (x * (2 +\n  3))\nif __value is not None:\n    print(__value)"),
        (
            "def f():\n    return 1\nf()  # done",
            "def f():\n    return 1\n__value = (f())\nif __value is not None:\n    print(__value)",
        ),
        ("x = 1", "x = 1"),  # no final expression
        ("a = 1; a + 2", "a = 1; a + 2"),  # shares its line: left alone
        ("1 +", "1 +"),  # does not parse: the sandbox reports the SyntaxError
        ("", ""),
    ],
)
def test_echo_last_expression(code, expected):
    assert echo_last_expression(code) == expected


def test_a_final_call_returning_none_stays_silent_and_fails():
    with pytest.raises(ProgramFailed, match="no_output"):
        run_python_agent(fenced("def main():\n    x = 1\nmain()"), attempts=1)
