"""The embedded 0.5B orchestrator converted from its GGUF and trained one GRPO step (slow: a real model)."""

import json

import pytest

from mas_fakes import make_task
from orchrm.grpo import GRPORunConfig, open_run, policy_weights, train_orchestrator
from orchrm.mas.orchestrator import check_plan
from orchrm.mas.plans import PlanError
from orchrm.mas.rollout import agent_types_for

pytestmark = pytest.mark.real_model


def test_one_grpo_step_on_the_embedded_orchestrator(tmp_path):
    task = make_task(tmp_path)
    weights = policy_weights("qwen2.5-coder-0.5b")

    def valid(prompts, completions, **kw):
        out = []
        for c in completions:
            try:
                check_plan(c[0]["content"], degree="dag", agent_types=agent_types_for(task))
                out.append(1.0)
            except PlanError:
                out.append(-1.0)
        return out

    config = GRPORunConfig(
        task="jsonl",
        policy="qwen2.5-coder-0.5b",
        reward="custom",
        group_size=4,
        n_questions=4,
        max_steps=1,
        save_steps=1,
        plan_max_tokens=200,
    )
    ledger = open_run(tmp_path / "run", config)
    result = train_orchestrator(config, task, weights, tmp_path / "run", ledger=ledger, reward=valid)
    ledger.close()
    assert result.steps == 1 and (tmp_path / "run" / "adapter" / "adapter_model.safetensors").is_file()
    assert json.loads((tmp_path / "run" / "tokens.json").read_text())["categories"]["plan"]["calls"] == 4
