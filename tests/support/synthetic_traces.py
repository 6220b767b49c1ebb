"""Hand-built rollout traces for pair-building tests."""

import json
from pathlib import Path

from orchrm.mas.plans import parse_plan
from orchrm.mas.traces import AgentEvent, OrchestratorInfo, PlanErrorRecord, ScoreRecord, Trace, TraceWriter


def plan_text(*types, question="q"):
    agents = [{"id": f"a{i}", "type": t, "input": f"step {i} of {question}"} for i, t in enumerate(types)]
    return (
        json.dumps({"agents": agents[:1], "edges": []})
        if len(types) == 1
        else json.dumps(
            {
                "agents": [agents[0], *({**a, "input": a["input"] + " ${a0}"} for a in agents[1:])],
                "edges": [{"from": "a0", "to": a["id"]} for a in agents[1:]],
            }
        )
    )


def trace(qid, idx, text, *, correct=None, answer=None, gold="4", checkpoint="base", invalid=False, failed=False):
    plan = None if invalid else parse_plan(text)
    agents = (
        []
        if invalid
        else [AgentEvent(id=a.id, type=a.type, status="failed" if failed else "ok", input=a.input) for a in plan.agents]
    )
    return Trace(
        task="t",
        question_id=qid,
        question=f"question {qid}?",
        gold=gold,
        plan_index=idx,
        plan_text=text,
        plan=plan,
        plan_error=PlanErrorRecord(rule="parse", message="bad") if invalid else None,
        orchestrator=OrchestratorInfo(backend="scripted", model_id="m", checkpoint=checkpoint),
        executed=not invalid,
        agents=agents,
        final_answer=answer,
        score=None if invalid or correct is None else ScoreRecord(value=float(correct), correct=correct),
    )


def write_run(folder: Path, questions: int = 10) -> Path:
    """A run folder whose careful plans are right and hasty ones wrong, for every question."""
    with TraceWriter(folder / "traces.jsonl") as w:
        for q in range(questions):
            w.write(
                trace(
                    f"q{q}", 0, plan_text("self_consistency", "reflexion", question=f"q{q}"), correct=True, answer="4"
                )
            )
            w.write(trace(f"q{q}", 1, plan_text("cot", question=f"q{q}"), correct=False, answer="5"))
            w.write(trace(f"q{q}", 2, "{not a plan", invalid=True))
    return folder
