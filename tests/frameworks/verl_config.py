"""verl's config as `main_ppo` composes it from the README's verl block: the lines a user copies, run as a shell
would run them (the `orchrm prompts` commands, the `$(python -c ...)` substitutions), shared by the verl tests."""

import functools
import re
import shlex
import subprocess
import sys
from pathlib import Path

from framework_helpers import readme_block

#: The rest of a GRPO command line: enough for `validate_config` (the README shows it as `...`).
BASE = [
    "algorithm.adv_estimator=grpo",
    "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=1",
    "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=1",
    "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=1",
    "ray_kwargs.ray_init.num_cpus=2",
]
OVERRIDE = re.compile(r"(\+?(?:reward|data)\.[\w.]+)=(\$\(python -c '[^']*'\)|\S+)")


#: What the tests that drive `RewardLoopManager.compute_rm_score` directly add: one reward worker (the agent-loop
#: test runs verl's default, 8).
ONE_WORKER = ["reward.num_workers=1"]
MARKER = "verl.trainer.main_ppo"


@functools.cache
def python_c(code):
    """What `$(python -c CODE)` expands to in the user's shell (here: this venv's Python)."""
    return subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout.strip()


def readme_overrides(rm_folder, url, data="/abs/data"):
    """The README's verl override lines, as a shell would hand them to `main_ppo`: `$(python -c ...)` run, the
    placeholders filled (`data`: the folder the README's `orchrm prompts` lines wrote). Returns (the lines every
    run has, {"rm": line, "url": line})."""
    found = OVERRIDE.findall(readme_block(MARKER))
    keys = [k for k, _ in found]
    assert keys == [
        "data.train_files",
        "data.val_files",
        "data.max_prompt_length",
        "reward.custom_reward_function.path",
        "reward.custom_reward_function.name",
        "+reward.custom_reward_function.reward_kwargs.rm",
        "+reward.custom_reward_function.reward_kwargs.url",
    ], keys
    lines = {}
    for key, value in found:
        if value.startswith("$("):
            value = python_c(re.fullmatch(r"\$\(python -c '([^']*)'\)", value).group(1))
        value = value.replace("/abs/rm", str(rm_folder)).replace("http://HOST:8765", url).replace("/abs/data", data)
        lines[key.removeprefix("+")] = f"{key}={value}"
    common = [line for key, line in lines.items() if "reward_kwargs" not in key]
    kwargs = "reward.custom_reward_function.reward_kwargs"
    return common, {"rm": lines[f"{kwargs}.rm"], "url": lines[f"{kwargs}.url"]}


def compose(overrides, rm_folder, base=(*BASE, *ONE_WORKER)):
    """The config as `main_ppo` gets it from Hydra (verl's packaged ppo_trainer.yaml plus the command line),
    checked by `main_ppo`'s own steps; the tiny RM folder's tokenizer stands in for the policy's."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_module
    from omegaconf import OmegaConf
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import validate_config
    from verl.utils.device import auto_set_device

    with initialize_config_module(config_module="verl.trainer.config", version_base=None):
        config = hydra_compose(
            "ppo_trainer", overrides=[*base, f"actor_rollout_ref.model.path={rm_folder}", *overrides]
        )
    auto_set_device(config)
    validate_config(config=config, use_reference_policy=need_reference_policy(config), use_critic=need_critic(config))
    OmegaConf.resolve(config)
    return config


def run_readme_prompts(data: Path) -> list[Path]:
    """The README's `orchrm prompts` lines, run as written with `data` for /abs/data: the files they wrote."""
    written = []
    for line in readme_block(MARKER).splitlines():
        if line.startswith("orchrm prompts "):
            argv = [a.replace("/abs/data", str(data)) for a in shlex.split(line)]
            exe = Path(sys.executable).with_name("orchrm")
            subprocess.run([str(exe), *argv[1:]], check=True, capture_output=True, text=True)
            written.append(Path(argv[argv.index("--out") + 1]))
    return written
