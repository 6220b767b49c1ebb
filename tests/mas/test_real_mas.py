"""The MAS on real embedded models: a tiny rollout never crashes, whatever the model writes."""

import asyncio

import pytest

from orchrm.llm import LLM, LocalBackend
from orchrm.llm.server import ServerConfig
from orchrm.mas import AgentSettings, ExecutorConfig, Plan, execute_plan
from orchrm.mas.plans import AgentSpec
from orchrm.mas.rollout import RunConfig, arollout
from orchrm.mas.traces import read_traces
from orchrm.tasks import load_task

pytestmark = pytest.mark.real_model


def test_smollm_rollout_records_every_plan(tmp_path):
    # SmolLM2-135M is too weak to plan well: what matters is that every sample becomes a trace.
    task = load_task("search_qa")
    config = RunConfig(task="search_qa", n_questions=1, n_plans=2, plan_max_tokens=96, agent_max_tokens=48, temperature=1.0)
    llm = LLM(LocalBackend("smollm2-135m", server=ServerConfig(parallel=2, ctx_per_slot=2048)))
    try:
        progress = asyncio.run(arollout(task, llm, tmp_path / "run", config))
    finally:
        llm.close()
    traces = read_traces(tmp_path / "run" / "traces.jsonl")
    assert sorted(t.plan_index for t in traces) == [0, 1] and progress.plans_done == 2
    for t in traces:
        assert t.plan_call is not None and t.plan_call.usage.prompt_tokens > 300
        assert t.valid or t.plan_error.rule
        assert t.executed == t.valid


def test_qwen_search_agent_reads_the_corpus():
    task = load_task("search_qa")
    q = task.questions(1, split="test")[0]
    plan = Plan(agents=[AgentSpec(id="find", type="search", input=q.question, options={"steps": 2, "top_k": 2})])
    llm = LLM(LocalBackend("qwen2.5-coder-0.5b", server=ServerConfig(parallel=2, ctx_per_slot=2048)))
    try:
        ex = asyncio.run(execute_plan(plan, q.question, llm, retriever=task.corpus, config=ExecutorConfig(settings=AgentSettings(max_tokens=64))))
    finally:
        llm.close()
    [ev] = ex.agents
    # one call writes the first query, then at most `steps` read-and-decide calls
    assert ev.status == "ok" and 2 <= len(ev.calls) <= 3
    searches = [s for s in ev.steps if "query" in s]
    assert searches and searches[0]["hits"], "the first search, on the agent's own keywords, finds documents"
    assert "Documents found" in ev.calls[1].messages[-1].content
    assert ex.llm_busy_s <= ex.wall_s
