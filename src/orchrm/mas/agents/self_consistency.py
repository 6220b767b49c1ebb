"""`self_consistency`: k sampled chains of thought, majority vote over their answers."""

from __future__ import annotations

from ...tasks.scoring import answer_key
from .base import Agent, AgentResult, AgentRun, answer_of, majority, system_prompt, task_prompt


class SelfConsistency(Agent):
    type = "self_consistency"
    defaults = {"samples": 3}

    async def run(self, run: AgentRun) -> AgentResult:
        k = self.count(run, "samples")
        samples = await run.generate(
            task_prompt(run), system=system_prompt(), n=k, temperature=run.settings.sample_temperature
        )
        answers = [answer_of(c.text) for c in samples]
        winner, votes = majority(answers)
        run.steps.append({"answers": answers, "votes": votes})
        if winner is None:
            return AgentResult(output=samples[0].text, answer=None)
        won = answer_key(winner)
        chosen = next(c.text for c, a in zip(samples, answers, strict=True) if a and answer_key(a) == won)
        # Numbers are keyed `#5`; the tally shows them as the plain number it has always written.
        tally = ", ".join(f"{key.removeprefix('#')} ({n})" for key, n in sorted(votes.items(), key=lambda kv: -kv[1]))
        return AgentResult(output=f"{chosen}\n\nVotes over {k} samples: {tally}\nAnswer: {winner}", answer=winner)
