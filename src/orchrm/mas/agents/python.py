"""`python`: program of thought. The agent writes a program, the sandbox runs it, its printed result is the answer.

A program that prints nothing but ends in an expression (`1663 - 5242 + 77`) is run again showing that
expression's value, as a notebook cell or code interpreter does (`echo_last_expression`): an agent that sees
only its sub-task often writes the computation without print(), and a right program must not fail on that.
The step records `echoed`.

The program runs in `orchrm.sandbox` (its own namespaces, no network, CPU, memory and output limits), so a
model-written loop, flood or socket ends as a recorded outcome, never as a hang or a side effect. A program
that fails or prints nothing is shown what happened and may try again (`attempts`); when no attempt prints a
result the agent fails with the last outcome, so a plan never takes a silent answer from a broken program.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from ...errors import OrchrmError
from ...llm import Message
from ...sandbox import SandboxLimits, arun_python
from .base import Agent, AgentResult, AgentRun, context_block, prompt, render

_CODE = re.compile(r"```[ \t]*(?:python3?|py)?[ \t]*\n(.*?)(?:```|\Z)", re.DOTALL | re.IGNORECASE)
#: Arithmetic over a few numbers needs milliseconds: limits far below the sandbox's defaults.
LIMITS = SandboxLimits(cpu_s=2, wall_s=5.0, memory_bytes=256 * 2**20, output_bytes=8 * 2**10, processes=4)
MAX_ANSWER_CHARS = 200


class ProgramFailed(OrchrmError):
    """No attempt of a python agent printed a result."""


def extract_code(text: str) -> str | None:
    """The program in a reply: the first fenced block, else the whole reply when it calls print()."""
    m = _CODE.search(text)
    if m:
        return m.group(1).strip() or None
    stripped = text.strip()
    return stripped if "print(" in stripped else None


def echo_last_expression(code: str) -> str:
    """`code` with its final top-level expression's value printed (when not None), else `code` unchanged.

    The agent runs this only after `code` itself printed nothing, so what a program prints is never doubled. Code
    that does not parse or does not end in an expression is returned as it is.
    """
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return code
    if not tree.body or not isinstance(last := tree.body[-1], ast.Expr) or last.end_lineno is None:
        return code
    lines = code.splitlines()
    head, expr = lines[: last.lineno - 1], ast.get_source_segment(code, last.value)
    if expr is None or lines[last.lineno - 1][: last.col_offset].strip():  # `a = 1; a + 2`: not worth a rewrite
        return code
    tail = lines[last.end_lineno :]
    echo = [f"__value = ({expr})", "if __value is not None:", "    print(__value)"]
    return "\n".join([*head, *echo, *tail])


class Python(Agent):
    type = "python"
    defaults = {"attempts": 2}

    async def run(self, run: AgentRun) -> AgentResult:
        user = render(prompt("python_task.txt"), context=context_block(run), task=run.task_input)
        history: list[Message] = []
        last = ""
        for attempt in range(int(self.options["attempts"])):
            [c] = await run.generate(user, history=history)
            step: dict[str, Any] = {"attempt": attempt}
            code = extract_code(c.text)
            if code is None:
                step["outcome"] = "no_code"
                report = "The reply held no ```python block."
            else:
                result = await arun_python(code, limits=LIMITS)
                if result.ok and not result.stdout.strip() and (echoed := echo_last_expression(code)) != code:
                    result = await arun_python(echoed, limits=LIMITS)
                    step["echoed"] = True
                lines = result.stdout.strip().splitlines()
                step.update(
                    code=code,
                    outcome=result.outcome,
                    exit_code=result.exit_code,
                    stdout=result.stdout[-500:],
                    stderr=result.stderr[-500:],
                )
                run.steps.append(step)
                if result.ok and lines:
                    answer = lines[-1].strip()[:MAX_ANSWER_CHARS]
                    output = f"```python\n{code}\n```\nOutput:\n{result.stdout.strip()[-1000:]}\nAnswer: {answer}"
                    return AgentResult(output=output, answer=answer)
                if result.ok:
                    step["outcome"] = "no_output"
                report = result.stderr.strip()[-400:] or "It printed nothing."
            if code is None:
                run.steps.append(step)
            last = f"{step['outcome']}: {report[-200:]}"
            history = [*history, Message(role="user", content=user), Message(role="assistant", content=c.text)]
            user = render(prompt("python_retry.txt"), outcome=step["outcome"], report=report)
        raise ProgramFailed(f"no attempt printed a result (last: {last})")
