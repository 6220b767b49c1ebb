"""`cot`: one chain-of-thought call."""

from __future__ import annotations

from .base import Agent, AgentResult, AgentRun, answer_of, system_prompt, task_prompt


class CoT(Agent):
    type = "cot"

    async def run(self, run: AgentRun) -> AgentResult:
        [c] = await run.generate(task_prompt(run), system=system_prompt())
        return AgentResult(output=c.text, answer=answer_of(c.text))
