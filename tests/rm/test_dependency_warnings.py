"""Training prints no deprecation warnings from our dependencies (issue #26: `make demo` printed one)."""

import warnings
from dataclasses import dataclass

import pytest

from orchrm.grpo.config import GRPORunConfig
from orchrm.grpo.shared_prompt import cache_argument
from orchrm.grpo.train import grpo_args
from orchrm.rm.config import RMConfig
from orchrm.rm.trl_setup import checkpointing, reward_config


def test_the_reward_trainers_arguments_warn_nothing(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        args = reward_config(RMConfig(), str(tmp_path), n_train=8, validate=True, progress=False)
    assert args.gradient_checkpointing is True  # TRL's reward-trainer default, as before


def test_the_grpo_arguments_warn_nothing(tmp_path):
    config = GRPORunConfig(task="chain_sum", policy="p", group_size=2, questions_per_step=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        args = grpo_args(config, tmp_path, progress=False)
    assert args.gradient_checkpointing is False  # the shared-prompt pass keeps a KV cache


def test_older_transformers_get_the_old_name():
    @dataclass
    class Old:
        gradient_checkpointing: bool = False

    assert checkpointing(Old, True) == {"gradient_checkpointing": True}


def test_the_shared_prompt_pass_names_the_cache_as_the_model_does():
    class New:
        def forward(self, input_ids, cache=None, **kw): ...

    class Old:
        def forward(self, input_ids, past_key_values=None, **kw): ...

    class Adapter:  # peft's wrapper: its own forward takes **kwargs
        def __init__(self, base):
            self.base = base

        def get_base_model(self):
            return self.base

    assert [cache_argument(m) for m in (New(), Old(), Adapter(New()), Adapter(Old()))] == [
        "cache",
        "past_key_values",
        "cache",
        "past_key_values",
    ]


def test_only_the_named_deprecation_is_hidden():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        checkpointing(object, False)
        for name in ("is_gradient_checkpointing", "gradient_checkpointing_enable"):
            warnings.warn(f"`{name}` is deprecated and will be removed in v6.", FutureWarning, stacklevel=1)
        warnings.warn("something else is deprecated", FutureWarning, stacklevel=1)
    assert [str(w.message) for w in caught] == ["something else is deprecated"]


@pytest.mark.parametrize("on", [True, False])
def test_the_setting_is_kept(on):
    from trl import RewardConfig

    assert list(checkpointing(RewardConfig, on).values()) == [on]
