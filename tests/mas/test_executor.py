import asyncio
import json
import time

from hypothesis import given
from hypothesis import strategies as st

from mas_fakes import by_prompt, scripted_llm
from orchrm.errors import BackendTimeout
from orchrm.mas.agents import AgentSettings
from orchrm.mas.executor import ExecutorConfig, busy_time, execute_plan, resolve_input
from orchrm.mas.plans import Plan, parse_and_validate
from orchrm.mas.run_config import RolloutSettings


def plan(agents, edges):
    return parse_and_validate(json.dumps({"agents": agents, "edges": [{"from": a, "to": b} for a, b in edges]}))


def a(id, input="Solve.", type="cot", **options):
    return {"id": id, "type": type, "input": input, "options": options}


def test_resolve_input_substitutes_and_clips():
    assert resolve_input("got ${x} and ${y}", {"x": "1", "y": "abcdef"}, limit=3) == "got 1 and ...def"


def test_busy_time_is_the_union_of_intervals():
    assert busy_time([(0, 2), (1, 3), (5, 6)]) == 4
    assert busy_time([]) == 0


@given(st.lists(st.tuples(st.integers(0, 40), st.integers(0, 12)), max_size=8))
def test_busy_time_counts_each_covered_moment_once(spans):
    # integer intervals: the union's length is the number of unit cells some interval covers
    intervals = [(float(s), float(s + w)) for s, w in spans]
    cells = {c for s, w in spans for c in range(s, s + w)}
    assert busy_time(intervals) == len(cells)


def test_topological_execution_passes_outputs_downstream():
    p = plan([a("s1", "first"), a("s2", "second"), a("j", "combine ${s1} | ${s2}")], [("s1", "j"), ("s2", "j")])
    llm = scripted_llm(by_prompt({"first": "one\nAnswer: 1", "second": "two\nAnswer: 2", "combine": "Answer: 3"}))
    ex = asyncio.run(execute_plan(p, "Q?", llm))
    assert [e.id for e in ex.agents][-1] == "j"
    j = ex.agents[-1]
    assert j.resolved_input == "combine 1 | 2"  # the upstream answers, not their reasoning
    assert ex.final_agent == "j" and ex.final_answer == "3"
    assert all(e.status == "ok" for e in ex.agents)
    assert not ex.errors


def test_independent_agents_run_concurrently():
    p = plan([a("s1"), a("s2"), a("s3"), a("j", "${s1}${s2}${s3}")], [("s1", "j"), ("s2", "j"), ("s3", "j")])
    llm = scripted_llm("Answer: 1", delay_s=0.3, concurrency=4)
    start = time.perf_counter()
    ex = asyncio.run(execute_plan(p, "Q?", llm))
    wall = time.perf_counter() - start
    assert wall < 0.3 * 4 * 0.8  # three sources overlap: about two delays, not four
    starts = sorted(e.start_s for e in ex.agents[:3])
    assert starts[-1] - starts[0] < 0.1
    assert 0 < ex.llm_busy_s <= ex.wall_s


def test_failed_agent_skips_its_downstream_but_others_run():
    p = plan(
        [a("bad", "explode"), a("good", "fine"), a("mid", "use ${bad}"), a("j", "${mid} ${good}")],
        [("bad", "mid"), ("mid", "j"), ("good", "j")],
    )
    llm = scripted_llm(lambda m, c: BackendTimeout("server too slow") if "explode" in m[-1].content else "Answer: 1")
    ex = asyncio.run(execute_plan(p, "Q?", llm))
    status = {e.id: e.status for e in ex.agents}
    assert status == {"bad": "failed", "good": "ok", "mid": "skipped", "j": "skipped"}
    assert "BackendTimeout" in next(e.error for e in ex.agents if e.id == "bad")
    assert ex.final_answer is None
    assert any("final agent 'j'" in e for e in ex.errors)


def test_agent_timeout_is_recorded_with_the_calls_it_made():
    p = plan([a("slow", "think", type="self_consistency", samples=2)], [])
    llm = scripted_llm("Answer: 1", delay_s=1.0)
    ex = asyncio.run(
        execute_plan(p, "Q?", llm, config=ExecutorConfig(AgentSettings(RolloutSettings(agent_timeout_s=0.2))))
    )
    [ev] = ex.agents
    assert ev.status == "failed" and "timed out" in ev.error
    assert ex.final_answer is None


def test_search_agent_without_corpus_is_a_failure_not_a_crash():
    p = plan([a("s", "look it up", type="search")], [])
    ex = asyncio.run(execute_plan(p, "Q?", scripted_llm("Answer: 1")))
    assert ex.agents[0].status == "failed" and "corpus" in ex.agents[0].error


def test_direct_plan_executes_to_its_own_answer():
    ex = asyncio.run(execute_plan(Plan(answer="42"), "Q?", scripted_llm("unused")))
    assert ex.final_answer == "42" and ex.agents == []


def test_bugs_are_not_swallowed():
    p = plan([a("x")], [])

    def broken(messages, config):
        raise ZeroDivisionError("bug")

    import pytest

    with pytest.raises(ZeroDivisionError):
        asyncio.run(execute_plan(p, "Q?", scripted_llm(broken)))
