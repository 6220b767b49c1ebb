"""An option that fills a config field takes its default and help from that field: a verb never restates a
setting. The rollout settings are made into options from their model (`options_from`), the other fields one
by one (`field_option`); these tests hold every verb's options to the fields they fill, so an option written
by hand that drifts from its field fails here."""

import click
import pytest

from orchrm.bon.config import BonConfig
from orchrm.cli.app import VERBS, load_verb
from orchrm.cli.options import RUN, ModelOptions, ProgressOptions
from orchrm.cli.reward_model import TRAIN_RM
from orchrm.grpo.config import GRPORunConfig
from orchrm.loop import LoopConfig
from orchrm.mas.run_config import PlanSampling, RolloutSettings, RunConfig
from orchrm.pairs import PairConfig
from orchrm.rm.config import DECODER_DEFAULTS, RMConfig

#: The progress options of the long verbs (`with_progress`): --quiet, --json, --log-every.
PROGRESS = (ProgressOptions, None)
#: Per verb, the settings its options fill, first match wins: (model, the instance holding the verb's defaults
#: where they are not the model's own).
SOURCES = {
    "rollout": [(ModelOptions, None), (RolloutSettings, None), (RunConfig, None), (LoopConfig, None), PROGRESS],
    "bon": [
        (ModelOptions, None),
        (RolloutSettings, None),
        (BonConfig, None),
        (RunConfig, None),
        (LoopConfig, None),
        PROGRESS,
    ],
    "demo": [
        (ModelOptions, None),
        (RolloutSettings, None),
        (LoopConfig, None),
        (BonConfig, None),
        (RMConfig, None),
        PROGRESS,
    ],
    "train-orchestrator": [(GRPORunConfig, None), (RolloutSettings, None), (ModelOptions, None), PROGRESS],
    "counterfactual": [(ModelOptions, None), PROGRESS],
    "generate": [(ModelOptions, None)],
    "judge": [(ModelOptions, None), PROGRESS],
    "pairs": [(PairConfig, None)],
    "train-rm": [(RMConfig, TRAIN_RM), PROGRESS],
}
#: Options named like a field that are the verb's own on purpose, and why.
OWN = {
    "task": "its help lists the tasks (TASK_HELP); required but in `demo`",
    "checkpoint": "None: the adapter's label, else RunConfig's `base` (`checkpoint_label`)",
    "profile": "its help lists the profiles and what each sets (`orchrm.profiles`); `demo` runs with `demo`",
    ("bon", "n_plans"): "best-of-8: more plans than a rollout's 4",
    "judge": "None: the task decides (`judge_by_default`: off where every sub-agent is an exact tool)",
    ("generate", "backend"): "one role: any backend, not the orchestrator's",
    ("generate", "model"): "one role",
    ("generate", "base_url"): "one role",
    ("judge", "backend"): "one role: the judge's",
    ("judge", "model"): "one role",
    ("judge", "base_url"): "one role",
    ("generate", "timeout"): "None: the backend's own default",
    ("judge", "concurrency"): "rows judged at once, not requests in flight",
    ("train-orchestrator", "timeout"): "the sub-agents' only: GRPO's AgentOptions default (600 s)",
    "rm": "a reward-model folder to load, not LoopConfig's RM training settings",
    ("train-orchestrator", "sampler"): "auto: chosen by the machine and the policy, then recorded as one of the three",
    ("bon", "n_questions"): "held-out questions: 20, not a rollout's 10",
    ("train-orchestrator", "policy"): "the field is required; the option defaults to the embedded model",
    ("pairs", "sources"): "None: every source, PairConfig's own default",
    ("demo", "device"): "auto: where the loop's RM trains and scores (arun_loop's rm_device), as train-rm's default",
    **{("train-rm", n): "None: the backbone kind's default (RMConfig's DECODER_DEFAULTS)" for n in DECODER_DEFAULTS},
}
#: Every flag each verb had before its options were made from the fields: users' scripts still run.
FLAGS_BEFORE = {
    "rollout": "--agent-backend --agent-base-url --agent-context --agent-max-rounds --agent-max-samples "
    "--agent-max-tokens --agent-model --agent-timeout --api-key-env --backend --base-url --checkpoint "
    "--concurrency --config --constrained --degree --execute --json --log-every --model --n-plans "
    "--n-questions --no-cache --no-constrained --no-prompt-examples --orchestrator-adapter "
    "--orchestrator-backend --orchestrator-base-url --orchestrator-model --out --parallel-questions "
    "--plan-max-tokens --prompt-examples --quiet --seed --split --task --temperature --timeout --top-p -q",
    "bon": "--agent-backend --agent-base-url --agent-context --agent-max-rounds --agent-max-samples "
    "--agent-max-tokens --agent-model --api-key-env --backend --base-url --checkpoint --concurrency "
    "--config --constrained --degree --json --judge --judge-max-tokens --judge-n --judge-steps "
    "--log-every --model --n --n-questions --no-constrained --no-judge --no-prompt-examples "
    "--orchestrator-adapter --orchestrator-backend --orchestrator-base-url --orchestrator-model --out "
    "--parallel-questions --plan-max-tokens --prior-traces --prompt-examples --quiet --rm --seed --task "
    "--tau --temperature --timeout -q",
    "demo": "--agent-context --agent-max-tokens --agent-model --config --degree --epochs --json --judge "
    "--log-every --model --n --no-judge --orchestrator-model --out --quiet --seed --task --test-questions "
    "--train-questions -q",
    "train-orchestrator": "--agent-backend --agent-base-url --agent-max-tokens --agent-model --api-key-env "
    "--beta --bf16 --concurrency --config --degree --entropy-coef --group-size --json --log-every "
    "--lora-r --lr --n-questions --no-bf16 --no-prompt-examples --out --penalty --plan-max-tokens "
    "--policy --prompt-examples --questions-per-step --quiet --reward --rm --sampler --save-steps --seed "
    "--steps --task --temperature --timeout -q",
    "pairs": "--base --config --counterfactual --max-counterfactual-per-question --max-per-question "
    "--max-source-share --min-agreement --min-margin --out --seed --source --specialized --val-fraction",
    "train-rm": "--backbone --batch-size --bf16 --center --config --device --epochs --json --log-every --lora "
    "--lr --margin --max-length --no-bf16 --no-lora --out --patience --quiet --report-to --seed -q",
}


def command(name: str) -> click.Command:
    return load_verb(next(v for v in VERBS if v.name == name))


def filled(verb: str) -> dict[str, tuple[click.Parameter, type, object]]:
    """Each option of `verb` that fills a field: name -> (option, model, the instance with the verb's defaults)."""
    out = {}
    for param in command(verb).params:
        for model, instance in SOURCES[verb]:
            if param.name in model.model_fields and param.name not in OWN and (verb, param.name) not in OWN:
                out[param.name] = (param, model, instance)
                break
    return out


@pytest.mark.parametrize("verb", list(SOURCES))
def test_every_option_that_fills_a_field_has_its_default_and_help(verb):
    wrong = []
    for name, (param, model, instance) in filled(verb).items():
        field = model.model_fields[name]
        default = getattr(instance, name) if instance is not None else field.get_default(call_default_factory=True)
        given = list(param.default) if isinstance(param.default, (list, tuple)) else param.default
        if given != default:
            wrong.append(f"--{name}: default {given!r}, {model.__name__}'s {default!r}")
        if field.description and not (param.help or "").startswith(field.description):
            wrong.append(f"--{name}: help {param.help!r}, {model.__name__}'s {field.description!r}")
        if not field.description:
            wrong.append(f"{model.__name__}.{name} has no description: the option's help is declared nowhere else")
    assert wrong == []


@pytest.mark.parametrize(
    ("verb", "model"),
    [
        ("rollout", RolloutSettings),
        ("bon", RolloutSettings),
        ("demo", RolloutSettings),
        ("train-orchestrator", PlanSampling),
        ("rollout", ModelOptions),
        ("bon", ModelOptions),
        ("demo", ModelOptions),
        ("counterfactual", ModelOptions),
    ],
)
def test_verbs_that_run_plans_offer_every_rollout_setting(verb, model):
    assert set(model.model_fields) <= set(filled(verb))


def test_rollout_offers_every_run_setting_a_user_sets():
    assert {"n_questions", "n_plans", "split", "execute"} <= set(filled("rollout"))


@pytest.mark.parametrize("verb", list(FLAGS_BEFORE))
def test_every_flag_from_before_still_works(verb):
    now = {n for p in command(verb).params for n in (*p.opts, *p.secondary_opts)}
    assert set(FLAGS_BEFORE[verb].split()) - now == set()


def test_a_verb_hands_the_validated_settings_over(monkeypatch, tmp_path):
    """`options_from` builds the model from the options: `orchrm rollout`'s settings reach the run config."""
    from orchrm.cli.app import main

    seen = []

    def stop(task, llm, out, config, **kw):
        seen.append(config)
        raise SystemExit(0)

    monkeypatch.setattr("orchrm.cli.rollout.arollout", stop)
    monkeypatch.setattr("orchrm.cli.rollout.asyncio.run", lambda coroutine: coroutine)
    monkeypatch.setattr("orchrm.cli.llms.run_llms", _fake_llms)
    with pytest.raises(SystemExit):
        main(
            [
                "rollout",
                "--task",
                "gsm_symbolic",
                "--out",
                str(tmp_path / "r"),
                "--agent-timeout",
                "12",
                "--top-p",
                "0.5",
                "--degree",
                "single",
                "--no-prompt-examples",
            ]
        )
    [config] = seen
    assert (config.agent_timeout_s, config.top_p, config.degree, config.prompt_examples) == (12.0, 0.5, "single", False)
    assert {k: getattr(config, k) for k in ("temperature", "agent_max_tokens")} == {
        "temperature": RUN.temperature,
        "agent_max_tokens": RUN.agent_max_tokens,
    }


def _fake_llms(*args, **kw):
    from contextlib import contextmanager

    from orchrm.llm import LLM
    from orchrm.llm.scripted import ScriptedBackend

    @contextmanager
    def opened():
        llm = LLM(ScriptedBackend(["x"]), cache=None)
        yield llm, llm

    return opened()


def test_train_rm_leaves_the_backbone_kinds_settings_to_rm_config(monkeypatch, tmp_path):
    """An option of `unset` that is not given leaves its field to the model: a decoder's own defaults."""
    from orchrm.cli.app import main

    seen = []

    def stop(pairs_dir, out, config, **kw):
        seen.append(config)
        raise SystemExit(0)

    monkeypatch.setattr("orchrm.rm.train.train_from_folder", stop)
    for argv in ([], ["--epochs", "3"]):
        with pytest.raises(SystemExit):
            main(["train-rm", str(tmp_path), "--out", str(tmp_path / "rm"), "--backbone", "qwen2.5-coder-0.5b", *argv])
    assert [(c.epochs, c.batch_size, c.lora, c.device) for c in seen] == [(2, 4, True, "auto"), (3, 4, True, "auto")]


def test_the_checkpoint_label_is_the_users_else_the_adapters_else_base(tmp_path):
    from orchrm.cli.llms import checkpoint_label
    from orchrm.llm import LLM, AdapterFile, LocalBackend

    adapter = AdapterFile(name="grpo-rm:step-20", path=tmp_path / "a.gguf", sha256="0" * 64)
    adapted, plain = LLM(LocalBackend(adapter=adapter), cache=None), LLM(LocalBackend(), cache=None)
    assert checkpoint_label(adapted, None) == "grpo-rm:step-20"
    assert checkpoint_label(adapted, "mine") == "mine"
    assert checkpoint_label(plain, None) == RUN.checkpoint == "base"


def test_pairs_hands_its_flags_to_pair_config(monkeypatch, tmp_path):
    """`--source` (repeatable) and `--max-per-question` keep their names, also as `--config` keys."""
    from orchrm.cli.app import main

    seen = []

    def stop(traces, cfg, edits):
        seen.append(cfg)
        raise SystemExit(0)

    monkeypatch.setattr("orchrm.cli.pairs.build_pairs", stop)
    monkeypatch.setattr("orchrm.cli.pairs.read_traces", lambda path: [])
    monkeypatch.setattr("orchrm.cli.pairs.locate_traces", lambda run: run)
    (tmp_path / "c.yaml").write_text("max_per_question: 5\nmin-margin: 3\n")
    for argv in (
        ["--source", "artifact", "--source", "consensus", "--max-per-question", "7"],
        ["--config", str(tmp_path / "c.yaml")],
        [],
    ):
        with pytest.raises(SystemExit):
            main(["pairs", str(tmp_path), "--out", str(tmp_path / "p"), *argv])
    assert [(c.sources, c.max_pairs_per_question, c.min_margin) for c in seen] == [
        (("artifact", "consensus"), 7, 2),
        (PairConfig().sources, 5, 3),
        (PairConfig().sources, 12, 2),
    ]
