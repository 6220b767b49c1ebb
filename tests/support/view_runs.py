"""Run folders for the viewer's tests (tests/view): hostile ones, where every text is a markup or script payload,
the committed 100-question best-of-N run, and a viewer running over runs in a thread."""

import json
import threading
from pathlib import Path

from orchrm.jsonl import JsonlWriter
from orchrm.llm import Message, Usage
from orchrm.mas.plans import parse_plan
from orchrm.mas.traces import AgentEvent, LLMCall, OrchestratorInfo, ScoreRecord, Trace, TraceWriter, token_totals
from orchrm.view import ViewServer

ROOT = Path(__file__).resolve().parents[2]
BENCH_BON = ROOT / "bench" / "results" / "tts" / "chain_sum" / "bon"

#: Markup a trace may carry: if any of it were parsed as HTML, the page would gain an <img>, run a handler or
#: set window.pwned.
PAYLOAD = '<img src=x onerror="window.pwned=1"><script>window.pwned=2</script><b id="injected">bold</b>'

# A diamond: a0 feeds a1 and a2, both feed the sink a3.
DIAMOND = json.dumps(
    {
        "agents": [
            {"id": "a0", "type": "cot", "input": "first " + PAYLOAD},
            {"id": "a1", "type": "cot", "input": "left ${a0}"},
            {"id": "a2", "type": "reflexion", "input": "right ${a0}"},
            {"id": "a3", "type": "cot", "input": "join ${a1} ${a2}"},
        ]
    }
)
SINGLE = json.dumps({"agents": [{"id": "solo", "type": "cot", "input": "just solve it"}]})


def _call(text: str) -> LLMCall:
    return LLMCall(
        messages=[Message(role="user", content="prompt " + PAYLOAD)],
        text=text,
        finish_reason="stop",
        usage=Usage(prompt_tokens=11, completion_tokens=7),
        latency_s=0.1,
        cached=False,
    )


def make_trace(qid: str, index: int, text: str, *, correct: bool, kind: str) -> Trace:
    plan = parse_plan(text)
    agents = [
        AgentEvent(
            id=a.id,
            type=a.type,
            status="ok",
            input=a.input,
            resolved_input=a.input,
            output=f"out {PAYLOAD}",
            answer=PAYLOAD,
            calls=[_call(f"reply {PAYLOAD}")],
        )
        for a in plan.agents
    ]
    plan_call = _call(text)
    return Trace(
        task="hostile",
        split="test",
        question_id=qid,
        question=f"What is {PAYLOAD}?",
        gold="4",
        question_kind=kind,
        plan_index=index,
        plan_text=text,
        plan=plan,
        orchestrator=OrchestratorInfo(backend="scripted", model_id="m"),
        plan_call=plan_call,
        executed=True,
        agents=agents,
        final_agent=plan.sink(),
        final_output=PAYLOAD,
        final_answer="4" if correct else PAYLOAD,
        score=ScoreRecord(value=float(correct), correct=correct),
        tokens=token_totals(plan_call, agents),
    )


def write_bon(folder: Path, questions: int = 4) -> Path:
    """A best-of-N folder: N=2 (plan 0 a diamond, right on even questions; plan 1 a single agent, wrong), rm
    picks plan 0, random has no pick; per-question rows, a judgment per question, and a results file."""
    (folder / "heldout").mkdir(parents=True)
    rows = []
    with TraceWriter(folder / "heldout" / "traces.jsonl") as w:
        for q in range(questions):
            qid = f"q{q}-{PAYLOAD}" if q == 0 else f"q{q}"
            kind = "even" if q % 2 == 0 else "odd"
            w.write(make_trace(qid, 0, DIAMOND, correct=q % 2 == 0, kind=kind))
            w.write(make_trace(qid, 1, SINGLE, correct=False, kind=kind))
            rows.append(
                {
                    "question_id": qid,
                    "valid": 2,
                    "rm": {"correct": float(q % 2 == 0), "chosen": 0, "tokens": 100.0, "executed": 1},
                    "random": {"correct": 0.5 * (q % 2 == 0), "chosen": None, "tokens": 50.0, "executed": 1},
                    "rewards": {"0": 1.25, "1": -0.5},
                }
            )
    (folder / "per_question.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (folder / "judgments.jsonl").write_text(
        "".join(
            json.dumps({"question_id": r["question_id"], "n": 2, "key": "k", "best": 1, "scores": {"0": 0.2, "1": 0.9}})
            + "\n"
            for r in rows
        )
    )
    tokens = {"plan": 10.0, "execute": 20.0, "verify": 0.0, "total": 30.0}
    (folder / "results.json").write_text(
        json.dumps(
            {
                "task": "hostile",
                "n": 2,
                "methods": {
                    "rm": {
                        "accuracy": {"mean": 0.5, "low": 0.0, "high": 1.0},
                        "tokens": tokens,
                        "executed_plans": 1.0,
                        "wall_s": 1.0,
                    },
                    "random": {
                        "accuracy": {"mean": 0.25, "low": 0.0, "high": 0.5},
                        "tokens": tokens,
                        "executed_plans": 1.0,
                        "wall_s": 1.0,
                    },
                },
            }
        )
    )
    return folder


def write_grpo(folder: Path) -> Path:
    """A train-orchestrator folder: two steps, two questions, each step one diamond (rewarded), one single
    agent plan and one invalid completion (the penalty); tokens.json with its categories."""
    from orchrm.llm.accounting import TOKENS_FILE, LedgerTotals, TokenLedger, UsageRecord
    from orchrm.samples import SAMPLES_FILE, SampleRecord

    folder.mkdir(parents=True)
    with JsonlWriter(folder / SAMPLES_FILE) as w:
        for step in (1, 2):
            for q in ("g0", "g1"):
                w.write(
                    SampleRecord(
                        step=step,
                        question_id=q,
                        completion=DIAMOND,
                        valid=True,
                        reward=0.5 + step / 10,
                        detail={"raw": PAYLOAD},
                    )
                )
                w.write(SampleRecord(step=step, question_id=q, completion=SINGLE, valid=True, reward=0.25))
                w.write(
                    SampleRecord(
                        step=step,
                        question_id=q,
                        completion=PAYLOAD,
                        valid=False,
                        rule="parse",
                        reason=PAYLOAD,
                        reward=-1.0,
                    )
                )
    ledger = TokenLedger()
    for category, prompt, completion in (("plan", 1000, 200), ("train", 2000, 400)):
        usage = {"prompt_tokens": prompt, "completion_tokens": completion, "cached": False}
        ledger.add([UsageRecord(category=category, backend="transformers", model_id="m", **usage)])
    (folder / TOKENS_FILE).write_text(LedgerTotals.of(ledger).model_dump_json(indent=2))
    return folder


class Running:
    """A viewer serving `runs` from a thread, on a free port of 127.0.0.1."""

    def __init__(self, runs):
        self.server = ViewServer(runs, 0)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return self.server.url

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
