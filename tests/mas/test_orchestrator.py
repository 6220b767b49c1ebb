import asyncio
import json

import pytest

from mas_fakes import scripted_llm
from orchrm.errors import ConfigError
from orchrm.mas.orchestrator import Orchestrator, OrchestratorConfig, system_prompt
from orchrm.mas.plans import AGENT_TYPES
from orchrm.mas.run_config import RolloutSettings

GOOD = json.dumps({"agents": [{"id": "a", "type": "cot", "input": "Solve."}], "edges": []})
CYCLE = json.dumps(
    {
        "agents": [{"id": "a", "type": "cot", "input": "${b}"}, {"id": "b", "type": "cot", "input": "${a}"}],
        "edges": [{"from": "a", "to": "b"}, {"from": "b", "to": "a"}],
    }
)


def test_prompts_list_only_the_tasks_agent_types():
    no_search = system_prompt("dag", tuple(t for t in AGENT_TYPES if t != "search"))
    assert "- search:" not in no_search and '"type": "search"' not in no_search
    assert "- debate:" in no_search and "Example plan" in no_search
    with_search = system_prompt("dag", AGENT_TYPES)
    assert "- search:" in with_search and '"type": "search"' in with_search
    assert "exactly one agent" in system_prompt("single", AGENT_TYPES)
    assert '"answer"' in system_prompt("direct", AGENT_TYPES)


def test_samples_n_plans_with_distinct_seeds_and_records_invalid_ones():
    llm = scripted_llm(GOOD, "I refuse to plan.", CYCLE, "```json\n" + GOOD + "\n```")
    orch = Orchestrator(llm, OrchestratorConfig(RolloutSettings(temperature=0.9, seed=10), checkpoint="ckpt-7"))
    samples = asyncio.run(orch.sample("What is 2+3?", 4))
    assert [s.index for s in samples] == [0, 1, 2, 3]
    seeds = sorted(call[2] for call in llm.backend.calls)
    assert seeds == sorted(orch.config.plan_seed("What is 2+3?", i) for i in range(4)) and len(set(seeds)) == 4
    assert sorted(s.info.plan_seed for s in samples) == seeds  # the trace says which seed drew it
    valid = [s for s in samples if s.plan is not None]
    rules = sorted(s.error.rule for s in samples if s.error)
    assert len(valid) == 2 and rules == ["cycle", "parse"]
    assert all(s.info.checkpoint == "ckpt-7" and s.info.temperature == 0.9 for s in samples)
    assert llm.ledger.totals()["plan"].calls == 4
    assert samples[0].call.messages[-1].content.startswith("Question: What is 2+3?")


def test_only_missing_indices_are_sampled():
    llm = scripted_llm(GOOD)
    samples = asyncio.run(Orchestrator(llm).sample("Q", 4, indices=[1, 3]))
    assert [s.index for s in samples] == [1, 3]
    assert len(llm.backend.calls) == 2


def test_degree_single_rejects_multi_agent_plans():
    two = json.dumps(
        {
            "agents": [{"id": "a", "type": "cot", "input": "x"}, {"id": "b", "type": "cot", "input": "${a}"}],
            "edges": [{"from": "a", "to": "b"}],
        }
    )
    [s] = asyncio.run(
        Orchestrator(scripted_llm(two), OrchestratorConfig(RolloutSettings(degree="single"))).sample("Q", 1)
    )
    assert s.plan is None and s.error.rule == "degree"


def test_degree_direct_accepts_json_or_an_answer_line():
    orch = Orchestrator(
        scripted_llm('{"answer": "5"}', "It is five.\nAnswer: 5", "hmm"),
        OrchestratorConfig(RolloutSettings(degree="direct")),
    )
    samples = asyncio.run(orch.sample("Q", 3))
    assert [s.plan.answer if s.plan else None for s in samples][:2] == ["5", "5"]
    assert samples[2].plan is None and samples[2].error.rule == "parse"


def test_constrained_decoding_sends_the_schema_and_records_violations():
    chain = json.dumps(
        {
            "agents": [
                {"id": "a1", "type": "python", "input": "Compute 2 + 3."},
                {"id": "a2", "type": "cot", "input": "Check ${a1}."},
            ]
        }
    )
    orch = Orchestrator(
        scripted_llm(chain, '{"agents": [broken'), OrchestratorConfig(RolloutSettings(constrained=True))
    )
    samples = asyncio.run(orch.sample("Q", 2))
    assert orch.llm.backend.calls[0][1].json_schema is not None
    assert samples[0].plan is not None and [(e.src, e.dst) for e in samples[0].plan.edges] == [("a1", "a2")]
    assert samples[1].plan is None and samples[1].error.rule == "parse" and samples[1].text.startswith('{"agents"')


def test_degree_direct_takes_no_answer_from_broken_json():
    # main scraped "7," out of the cut JSON and "800" out of the escaped surrogate.
    replies = ['{"answer": 7,', '{"answer": "\\ud800"}', '{"answer": "5", "extra": 1}', "I get 12.\nAnswer: 12"]
    orch = Orchestrator(scripted_llm(*replies), OrchestratorConfig(RolloutSettings(degree="direct")))
    samples = asyncio.run(orch.sample("Q", 4))
    assert [s.plan.answer if s.plan else s.error.rule for s in samples] == ["parse", "json_surrogate", "schema", "12"]


def test_a_bare_prompt_keeps_the_instructions_and_drops_the_worked_examples():
    from orchrm.mas.orchestrator import PROMPTS, system_prompt
    from orchrm.mas.rollout import RunConfig, orchestrator_config

    types = ("cot", "python", "search")
    full, bare = system_prompt("dag", types), system_prompt("dag", types, examples=False)
    example = (PROMPTS / "examples_math.md").read_text().strip()
    assert example in full and example not in bare
    assert bare.startswith("You are the orchestrator") and "Agent types:" in bare and len(bare) < len(full) - 100
    cfg = orchestrator_config(RunConfig(task="chain_sum", prompt_examples=False))
    assert cfg.sampling.prompt_examples is False


def test_the_ith_plans_of_two_questions_are_independent_draws_and_reproducible():
    config = OrchestratorConfig(RolloutSettings(seed=3))
    a, b = ([config.plan_seed(q, i) for i in range(8)] for q in ("What is 2+3?", "Who founded Acme?"))
    assert len(set(a) | set(b)) == 16  # no seed shared between questions or plan indices
    assert a == [
        OrchestratorConfig(RolloutSettings(seed=3)).plan_seed("What is 2+3?", i) for i in range(8)
    ]  # same run, same plans
    assert a != [OrchestratorConfig(RolloutSettings(seed=4)).plan_seed("What is 2+3?", i) for i in range(8)]
    # runs made before that drew plan i with seed + i for every question, and resume that way
    legacy = OrchestratorConfig(RolloutSettings(seed=3), seeds="index")
    assert [legacy.plan_seed(q, 2) for q in ("x", "y")] == [5, 5]
    with pytest.raises(ConfigError, match="seed scheme"):
        OrchestratorConfig(seeds="random")
