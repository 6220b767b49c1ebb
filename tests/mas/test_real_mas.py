"""The MAS on real embedded models: a tiny rollout never crashes, whatever the model writes."""

import asyncio
import re

import httpx
import pytest

from orchrm.llm import LLM, LocalBackend
from orchrm.llm.server import ServerConfig
from orchrm.mas import AgentSettings, ExecutorConfig, Plan, RolloutSettings, execute_plan
from orchrm.mas.plans import AgentSpec
from orchrm.mas.rollout import RunConfig, arollout
from orchrm.mas.traces import read_traces
from orchrm.tasks import load_task

pytestmark = pytest.mark.real_model


def test_smollm_rollout_records_every_plan(tmp_path):
    # SmolLM2-135M is too weak to plan well: what matters is that every sample becomes a trace.
    task = load_task("search_qa")
    config = RunConfig(
        task="search_qa", n_questions=1, n_plans=2, plan_max_tokens=96, agent_max_tokens=48, temperature=1.0
    )
    llm = LLM(LocalBackend("smollm2-135m", server=ServerConfig(parallel=2, ctx_per_slot=2048)))
    try:
        progress = asyncio.run(arollout(task, llm, tmp_path / "run", config)).progress
    finally:
        llm.close()
    traces = read_traces(tmp_path / "run" / "traces.jsonl")
    assert sorted(t.plan_index for t in traces) == [0, 1] and progress.plans_done == 2
    # the two plans are one request: the ~400-token prompt is billed once, on the first
    assert sum(t.plan_call.usage.prompt_tokens for t in traces) > 300
    assert min(t.plan_call.usage.prompt_tokens for t in traces) == 0
    for t in traces:
        assert t.plan_call is not None
        assert t.valid or t.plan_error.rule
        assert t.executed == t.valid


def _server_counters(llm: LLM) -> dict[str, float]:
    text = httpx.get(llm.backend.server.url.removesuffix("/v1") + "/metrics", timeout=10).text
    return {k: float(v) for k, v in re.findall(r"^llamacpp:(\w+_total) ([\d.e+]+)$", text, re.M)}


def test_a_rollouts_ledger_and_traces_equal_what_the_server_counted(tmp_path):
    # Plans cut at a small token limit (constrained decoding: they end as invalid plans), groups of plans,
    # sub-agent calls: every token the server processed or generated is on the ledger and on a trace.
    task = load_task("chain_sum")
    config = RunConfig(
        task="chain_sum",
        n_questions=2,
        n_plans=3,
        plan_max_tokens=48,
        agent_max_tokens=32,
        temperature=1.0,
        constrained=True,
    )
    llm = LLM(LocalBackend("smollm2-135m", server=ServerConfig(parallel=3, ctx_per_slot=2048)))
    try:
        asyncio.run(llm.backend.start())
        before = _server_counters(llm)
        asyncio.run(arollout(task, llm, tmp_path / "run", config))
        after = _server_counters(llm)
    finally:
        llm.close()
    served = {k: after[k] - before.get(k, 0.0) for k in after}
    total = llm.ledger.total()
    assert total.completion_tokens == served["tokens_predicted_total"] > 0
    assert total.processed_prompt_tokens == served["prompt_tokens_total"] > 0
    assert total.cached_prompt_tokens == served["prompt_tokens_cached_total"]
    traces = read_traces(tmp_path / "run" / "traces.jsonl")
    assert len(traces) == 6 and any(t.plan_call.finish_reason == "length" for t in traces)
    on_traces = [c for t in traces for c in t.tokens.values()]
    assert sum(c.completion_tokens for c in on_traces) == total.completion_tokens
    assert sum(c.prompt_tokens for c in on_traces) == total.prompt_tokens


def test_qwen_search_agent_reads_the_corpus():
    task = load_task("search_qa")
    q = task.questions(1, split="test")[0]
    plan = Plan(agents=[AgentSpec(id="find", type="search", input=q.question, options={"steps": 2, "top_k": 2})])
    llm = LLM(LocalBackend("qwen2.5-coder-0.5b", server=ServerConfig(parallel=2, ctx_per_slot=2048)))
    try:
        ex = asyncio.run(
            execute_plan(
                plan,
                q.question,
                llm,
                retriever=task.corpus,
                config=ExecutorConfig(settings=AgentSettings(RolloutSettings(agent_max_tokens=64))),
            )
        )
    finally:
        llm.close()
    [ev] = ex.agents
    # one call writes the first query, then at most `steps` read-and-decide calls
    assert ev.status == "ok" and 2 <= len(ev.calls) <= 3
    searches = [s for s in ev.steps if "query" in s]
    assert searches and searches[0]["hits"], "the first search, on the agent's own keywords, finds documents"
    assert "Documents found" in ev.calls[1].messages[-1].content
    assert ex.llm_busy_s <= ex.wall_s
