"""The private TRL method `grpo/shared_prompt.py` overrides still has the shape the override was written for.

`SharedPromptGRPOTrainer._get_per_token_logps_and_entropies` replaces GRPOTrainer's own (TRL 1.16): it takes
the same arguments, passes the multimodal ones through to TRL, and returns (logps, entropies, aux_loss). A TRL
release that renames, adds or reorders an argument, or returns something else, would break training silently
(a keyword dropped, a value in the wrong slot); this test fails first, naming what moved. When it fails: read
TRL's new method, update the override, then `WRITTEN_FOR` and the pin in pyproject.toml.
"""

import inspect
import tomllib
from importlib.metadata import version
from pathlib import Path

from packaging.requirements import Requirement

P = inspect.Parameter
#: (name, kind, default) of GRPOTrainer._get_per_token_logps_and_entropies in TRL 1.16.
WRITTEN_FOR = [
    ("self", P.POSITIONAL_OR_KEYWORD, P.empty),
    ("model", P.POSITIONAL_OR_KEYWORD, P.empty),
    ("input_ids", P.POSITIONAL_OR_KEYWORD, P.empty),
    ("attention_mask", P.POSITIONAL_OR_KEYWORD, P.empty),
    ("logits_to_keep", P.POSITIONAL_OR_KEYWORD, P.empty),
    ("batch_size", P.POSITIONAL_OR_KEYWORD, None),
    ("compute_entropy", P.POSITIONAL_OR_KEYWORD, False),
    ("compute_aux_loss", P.POSITIONAL_OR_KEYWORD, False),
    *(
        (name, P.POSITIONAL_OR_KEYWORD, None)
        for name in (  # the multimodal inputs, passed through as **extra
            "pixel_values",
            "image_grid_thw",
            "num_images",
            "pixel_attention_mask",
            "spatial_shapes",
            "num_tiles",
            "image_sizes",
            "token_type_ids",
            "mm_token_type_ids",
            "image_position_ids",
        )
    ),
]
RETURNS = "tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]"  # (logps, entropies, aux_loss)
PYPROJECT = Path(__file__).parents[2] / "pyproject.toml"


def shape(function) -> list[tuple[str, object, object]]:
    return [(p.name, p.kind, p.default) for p in inspect.signature(function).parameters.values()]


def test_the_overridden_method_has_the_shape_it_was_written_for():
    from trl import GRPOTrainer

    method = GRPOTrainer._get_per_token_logps_and_entropies
    assert shape(method) == WRITTEN_FOR, (
        f"TRL {version('trl')} changed GRPOTrainer._get_per_token_logps_and_entropies: "
        "review orchrm/grpo/shared_prompt.py's override before moving the pin"
    )
    returns = inspect.signature(method).return_annotation
    assert (returns if isinstance(returns, str) else inspect.formatannotation(returns)) == RETURNS


def test_what_the_override_calls_into_is_there():
    from trl import GRPOTrainer
    from trl.trainer import grpo_trainer

    assert callable(grpo_trainer.add_fused_lm_head)  # gives model(..., fused_lm_head=True) its log_probs, entropy
    assert "rollout_func" in inspect.signature(GRPOTrainer.__init__).parameters


def test_the_override_takes_every_argument_it_replaces():
    from orchrm.grpo.shared_prompt import shared_prompt_trainer

    ours = inspect.signature(shared_prompt_trainer()._get_per_token_logps_and_entropies).parameters
    named = [name for name, _, _ in WRITTEN_FOR[:8]]
    assert list(ours)[:8] == named and ours["extra"].kind is P.VAR_KEYWORD


def test_trl_is_pinned_below_the_next_minor_and_the_installed_one_fits():
    deps = tomllib.loads(PYPROJECT.read_text())["project"]["dependencies"]
    trl = next(Requirement(d) for d in deps if Requirement(d).name == "trl")
    assert any(s.operator == "<" for s in trl.specifier), "trl needs an upper bound: a private method is overridden"
    assert version("trl") in trl.specifier
