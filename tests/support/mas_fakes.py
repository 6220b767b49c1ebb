"""Scripted LLMs, a fake corpus and a small rollout set-up for the MAS, rollout and CLI unit tests."""

from __future__ import annotations

import json
from pathlib import Path

from orchrm.llm import LLM
from orchrm.llm.scripted import ScriptedBackend
from orchrm.mas.orchestrator import OrchestratorConfig
from orchrm.mas.rollout import RunConfig
from orchrm.mas.run_config import RolloutSettings
from orchrm.tasks.user import JsonlTask


def by_prompt(rules: dict[str, str], default: str = "Answer: 0"):
    """A reply function: the first rule whose key appears in the last user message wins."""

    def reply(messages, config):
        text = messages[-1].content
        for key, value in rules.items():
            if key in text:
                return value
        return default

    return reply


def scripted_llm(*replies, delay_s: float = 0.0, concurrency: int = 4) -> LLM:
    return LLM(ScriptedBackend(list(replies), delay_s=delay_s, concurrency=concurrency))


class FakeCorpus:
    def __init__(self, docs: dict[str, str]):
        self.docs = docs
        self.queries: list[str] = []

    def search(self, query: str, k: int):
        self.queries.append(query)
        words = set(query.lower().split())
        scored = sorted(self.docs.items(), key=lambda kv: -len(words & set(kv[1].lower().split())))
        return [(i, t) for i, t in scored[:k] if words & set(t.lower().split())]


PLAN = json.dumps(
    {
        "agents": [
            {"id": "a", "type": "cot", "input": "Add the numbers."},
            {"id": "b", "type": "self_consistency", "input": "Check ${a}", "options": {"samples": 3}},
        ],
        "edges": [{"from": "a", "to": "b"}],
    }
)


def make_task(tmp_path: Path, n: int = 6) -> JsonlTask:
    path = tmp_path / "qs.jsonl"
    rows = [{"id": f"q{i}", "question": f"What is {i} plus {i}? (item {i})", "answer": str(2 * i)} for i in range(40)]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return JsonlTask(path)


def plan_index(messages, seed: int | None) -> int:
    """Which plan of its question an orchestrator request is, from its seed: the fakes answer by plan index.
    Each question's plans are seeded from the question (`OrchestratorConfig.plan_seed` under the `group` and
    `question` schemes, run seeds 0-7 tried); a seed no question hashes to is a version-1 run's seed + index,
    with run seed 0."""
    question = messages[-1].content.removeprefix("Question: ").removesuffix("\nPlan:")
    for base in range(8):
        for scheme in ("group", "question"):
            config = OrchestratorConfig(RolloutSettings(seed=base), seeds=scheme)
            for i in range(64):
                if config.plan_seed(question, i) == seed:
                    return i
    return seed or 0


def replies():
    """Plans for the orchestrator (alternating valid / garbage), sums for the agents."""

    def reply(messages, config):
        system = messages[0].content if messages[0].role == "system" else ""
        user = messages[-1].content
        if "orchestrator" in system:
            return PLAN if plan_index(messages, config.seed) % 2 == 0 else "{ this is not a plan"
        return _sum_reply(user)

    return reply


def _sum_reply(user: str) -> str:
    """The sum when the agent sees the question (the final agent does); an earlier agent sees only its
    sub-task, and says so."""
    if "What is " not in user:
        return "I only have my sub-task.\nAnswer: unknown"
    i = int(user.split("What is ")[1].split(" plus")[0])
    return f"Answer: {2 * i}"


def run_config(**kw):
    base = dict(task="jsonl", n_questions=3, n_plans=2, temperature=0.5)
    return RunConfig(**{**base, **kw})


GUESS = json.dumps({"agents": [{"id": "g", "type": "cot", "input": "Guess wildly."}], "edges": []})


def bon_replies(judge_calls=None):
    """Plans by seed (good DAG / garbage / a guessing agent); agents add; the judge likes every run."""

    def reply(messages, config):
        system = messages[0].content if messages[0].role == "system" else ""
        user = messages[-1].content
        if "orchestrator" in system:
            return [PLAN, "{ not a plan", GUESS][plan_index(messages, config.seed) % 3]
        if config.json_schema is not None or config.tools:
            if judge_calls is not None:
                judge_calls.append(user)
            return json.dumps({"action": "final_answer", "score": 0.7, "reason": "ok", "confidence": 0.6})
        if "Guess wildly" in user:
            return "Answer: 1"
        return _sum_reply(user)

    return reply
