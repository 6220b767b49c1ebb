"""`debate`: several roles answer, read each other for `rounds` rounds, then a judge decides."""

from __future__ import annotations

import asyncio

from .base import Agent, AgentResult, AgentRun, answer_of, prompt, render, system_prompt, task_prompt


class Debate(Agent):
    type = "debate"
    defaults = {"roles": ["careful solver", "skeptical checker"], "rounds": 1}

    async def run(self, run: AgentRun) -> AgentResult:
        roles: list[str] = list(self.options["roles"])
        rounds = self.count(run, "rounds")
        base = task_prompt(run)

        async def speak(role: str, others: str | None) -> str:
            system = f"{system_prompt()}\nYour role in this debate: {role}."
            user = base if others is None else render(prompt("debate_round.txt"), task=base, others=others)
            [c] = await run.generate(user, system=system)
            return c.text

        said = await asyncio.gather(*(speak(role, None) for role in roles))
        run.steps.append({"round": 1, "answers": [answer_of(t) for t in said]})
        for r in range(1, rounds):
            views = [
                "\n\n".join(f"[{roles[j]}]\n{said[j]}" for j in range(len(roles)) if j != i) for i in range(len(roles))
            ]
            said = await asyncio.gather(*(speak(role, views[i]) for i, role in enumerate(roles)))
            run.steps.append({"round": r + 1, "answers": [answer_of(t) for t in said]})
        transcript = "\n\n".join(f"[{role}]\n{text}" for role, text in zip(roles, said, strict=True))
        [verdict] = await run.generate(
            render(prompt("debate_judge.txt"), task=base, transcript=transcript), system=system_prompt()
        )
        return AgentResult(output=verdict.text, answer=answer_of(verdict.text))
