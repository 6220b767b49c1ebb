"""Option defaults come from the configs: a verb's default never differs from the config field it fills."""

import dataclasses
import inspect

import pytest

from orchrm.bon.run import BonConfig
from orchrm.cli.bon import bon
from orchrm.cli.options import RUN
from orchrm.cli.pairs import pairs
from orchrm.cli.rollout import rollout
from orchrm.mas.rollout import RunConfig
from orchrm.pairs import PairConfig

# CLI names that fill a config field of another name.
RENAMED = {"agent_timeout": "agent_timeout_s", "n": "n_plans", "max_per_question": "max_pairs_per_question",
           "judge_steps": "judge_max_steps", "source": "sources"}  # fmt: skip


def defaults(command) -> dict[str, object]:
    return {RENAMED.get(k, k): p.default for k, p in inspect.signature(command).parameters.items()}


def test_run_defaults_are_a_run_configs():
    assert RUN == RunConfig(task="")


# Not the config's on purpose: the task has no default; agent_backend None means "the orchestrator's" and is
# resolved before the config is built, as checkpoint None is (the adapter's label, else RUN.checkpoint); N
# and bon's held-out question count are checked below.
OWN = ("task", "n_plans", "agent_backend", "checkpoint")


@pytest.mark.parametrize("command", [rollout, bon])
def test_plan_running_verbs_default_to_run_config(command):
    own = OWN + (("n_questions",) if command is bon else ())
    shared = {k: v for k, v in defaults(command).items() if k in RunConfig.model_fields and k not in own}
    assert len(shared) >= 9
    assert shared == {k: getattr(RUN, k) for k in shared}


def test_rollout_covers_every_run_setting_a_user_sets():
    assert {"n_questions", "n_plans", "top_p", "agent_timeout_s", "checkpoint", "execute"} <= set(defaults(rollout))
    assert defaults(rollout)["n_plans"] == RUN.n_plans


def test_bon_defaults_to_bon_config():
    cfg, got = BonConfig(), defaults(bon)
    assert {k: got[k] for k in ("judge", "judge_max_steps", "judge_max_tokens", "tau")} == {
        "judge": cfg.judge, "judge_max_steps": cfg.judge_max_steps, "judge_max_tokens": cfg.judge_max_tokens, "tau": cfg.tau
    }
    assert got["n_plans"] == cfg.n


def test_pairs_defaults_to_pair_config():
    got = defaults(pairs)
    fields = {f.name: getattr(PairConfig(), f.name) for f in dataclasses.fields(PairConfig)}
    shared = {k: got[k] for k in fields if k in got and k not in ("sources", "specialized", "base")}
    assert len(shared) == 7 and shared == {k: fields[k] for k in shared}


def test_the_checkpoint_label_is_the_users_else_the_adapters_else_base(tmp_path):
    from orchrm.cli.llms import checkpoint_label
    from orchrm.llm import LLM, AdapterFile, LocalBackend

    adapter = AdapterFile(name="grpo-rm:step-20", path=tmp_path / "a.gguf", sha256="0" * 64)
    adapted, plain = LLM(LocalBackend(adapter=adapter), cache=None), LLM(LocalBackend(), cache=None)
    assert checkpoint_label(adapted, None) == "grpo-rm:step-20"
    assert checkpoint_label(adapted, "mine") == "mine"
    assert checkpoint_label(plain, None) == RUN.checkpoint == "base"
