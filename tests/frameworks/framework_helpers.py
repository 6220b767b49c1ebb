"""What both frameworks' tests share: the reward orchrm itself pays, and the README's command blocks."""

import importlib
import os
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"


def framework(name: str):
    """The framework's module, imported. Where it is not installed its tests skip, except where `ORCHRM_FRAMEWORK`
    names it (ci/frameworks/run.sh sets it in each framework's venv): there a missing or broken install fails."""
    if os.environ.get("ORCHRM_FRAMEWORK") == name:
        return importlib.import_module(name)
    return pytest.importorskip(
        name, reason=f"{name} is not installed: `make test-frameworks` runs this in .venv-{name}"
    )


def expected_reward(rm, question: str, text: str) -> float:
    """What orchrm itself pays `text` (a completion) for `question`: the one place these tests state the reward
    contract. A valid plan gets the contract's value of `RewardModel.score` (the sigmoid of the raw score by
    default); text with no valid plan gets the contract's penalty."""
    from orchrm.mas.plans import PlanError
    from orchrm.rm.reward import RewardContract

    contract = RewardContract()
    try:
        plan = contract.check(text)
    except PlanError:
        return contract.invalid_penalty
    return contract.value(rm.score(question, [plan])[0])


def readme_block(marker: str) -> str:
    """The README's one fenced code block that holds `marker` (the tests run exactly what users copy)."""
    blocks = [b for b in re.findall(r"^```[a-z]*\n(.*?)^```", README.read_text(), re.S | re.M) if marker in b]
    assert len(blocks) == 1, f"README.md has {len(blocks)} fenced blocks holding {marker!r}, not one"
    return blocks[0]
