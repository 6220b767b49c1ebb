"""`reflexion`: answer, let a critic check it, revise; up to `rounds` critiques, stopping when the critic accepts."""

from __future__ import annotations

import re

from .base import Agent, AgentResult, AgentRun, answer_of, context_block, prompt, render, system_prompt, task_prompt

_VERDICT = re.compile(r"verdict\s*[:=]?\s*\**\s*(correct|wrong|incorrect)", re.IGNORECASE)


def accepted(critique: str) -> bool:
    """The critic accepts when its last verdict says CORRECT; a missing verdict is not acceptance."""
    verdicts = _VERDICT.findall(critique)
    return bool(verdicts) and verdicts[-1].lower() == "correct"


class Reflexion(Agent):
    type = "reflexion"
    defaults = {"rounds": 1}

    async def run(self, run: AgentRun) -> AgentResult:
        [c] = await run.generate(task_prompt(run), system=system_prompt())
        attempt = c.text
        for r in range(self.count(run, "rounds")):
            critic_prompt = render(
                prompt("critic.txt"), context=context_block(run), task=run.task_input, attempt=attempt
            )
            [critique] = await run.generate(critic_prompt, max_tokens=min(256, run.settings.max_tokens))
            ok = accepted(critique.text)
            run.steps.append({"round": r + 1, "accepted": ok, "answer": answer_of(attempt)})
            if ok:
                break
            revise = render(
                prompt("revise.txt"),
                context=context_block(run),
                task=run.task_input,
                attempt=attempt,
                critique=critique.text,
            )
            [c] = await run.generate(revise, system=system_prompt())
            attempt = c.text
        return AgentResult(output=attempt, answer=answer_of(attempt))
