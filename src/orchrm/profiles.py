"""Named profiles: settings fitted to one purpose, laid over the one set of defaults.

Every setting has one default, on the config model that declares it (`RolloutSettings`, `RunConfig`,
`BonConfig`, `RMConfig`, `LoopConfig`); the library, every CLI verb and `orchrm demo` share it. A profile is a
named set of overrides by field name, each applied to whichever model has that field (`overrides`). On the
command line `--profile NAME` fills every option of such a field that was not given (a given option wins), and
the run records the name (`RunConfig.profile`, `LoopConfig.profile`), so a run folder says where its settings
came from. `orchrm demo` runs with `demo`; `orchrm bon --profile demo` selects exactly as the demo's best-of-N.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeVar

from pydantic import BaseModel

from .errors import ConfigError

__all__ = ["BASE", "PROFILES", "overrides", "profile_help", "profiled"]

Model = TypeVar("Model", bound=BaseModel)

BASE = "base"
PROFILES: dict[str, dict[str, Any]] = {
    BASE: {},
    # The whole loop on the embedded 0.5B and 2 CPU cores in minutes.
    "demo": {
        # A hotter, shorter plan under the plan schema: valid by construction, so the 0.5B's plans are valid DAGs
        # but for those that run past the token limit (their share: bench/results/plan_validity.json).
        "constrained": True,
        "temperature": 0.9,
        "plan_max_tokens": 320,
        # Short sub-agent calls, capped samples and rounds.
        "agent_max_tokens": 192,
        "agent_max_samples": 3,
        "agent_max_rounds": 1,
        # 4 plans a question, in the training rollouts and in best-of-N alike.
        "n_plans": 4,
        # The RM's epochs and a shorter judge: the demo's values since its first version.
        "epochs": 6,
        "judge_max_steps": 2,
        "judge_max_tokens": 192,
    },
}


def overrides(name: str, fields: Iterable[str]) -> dict[str, Any]:
    """Profile `name`'s values for those of `fields` it sets (pass a model's `model_fields`); an unknown name is
    a `ConfigError` naming the profiles there are."""
    if name not in PROFILES:
        raise ConfigError(f"--profile: no profile {name!r} (there are: {', '.join(PROFILES)})")
    wanted = set(fields)
    return {k: v for k, v in PROFILES[name].items() if k in wanted}


def profiled(model: type[Model], name: str, /, **given: Any) -> Model:
    """`model` with profile `name` laid over its defaults, down its nested settings models (a `LoopConfig`'s
    `rollout`, `rm`, `bon`), then `given` over that (a nested mapping merged into its model's); a model with a
    `profile` field records `name`. `profiled(LoopConfig, "demo")` is what `orchrm demo` runs with."""
    return model.model_validate(_merged(_laid(model, name), given))


def _laid(model: type[BaseModel], name: str) -> dict[str, Any]:
    out: dict[str, Any] = overrides(name, model.model_fields)
    for field, info in model.model_fields.items():
        if isinstance(info.annotation, type) and issubclass(info.annotation, BaseModel):
            nested = _laid(info.annotation, name)
            if nested:
                out[field] = nested
    return {**out, "profile": name} if "profile" in model.model_fields else out


def _merged(base: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in given.items():
        both = isinstance(v, dict) and isinstance(out.get(k), dict)
        out[k] = _merged(out[k], v) if both else v
    return out


def profile_help() -> str:
    """The profiles and what each sets, for `--profile`'s help."""
    shown = [
        f"{n}: " + (", ".join(f"{k}={v}" for k, v in s.items()) or "the shared defaults") for n, s in PROFILES.items()
    ]
    lead = "Named settings over the shared defaults; an option given wins (`--profile NAME --help` shows them). "
    return lead + "; ".join(shown) + "."
