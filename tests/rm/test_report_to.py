"""`--report-to` (none | tensorboard | wandb | trackio): the setting reaches TRL's arguments, and a tracker whose
package is not installed is one line before anything trains."""

import importlib.util

import pytest

from orchrm.errors import ConfigError
from orchrm.grpo.config import GRPORunConfig
from orchrm.grpo.train import grpo_args
from orchrm.rm import RMConfig, train_reward_model
from orchrm.rm.trackers import tracker_list
from orchrm.rm.trl_setup import reward_config

REAL_FIND_SPEC = importlib.util.find_spec


def installed(monkeypatch, *names):
    """Pretend the trackers' packages `names` are installed and every other tracker's is not."""
    trackers = {"tensorboard", "tensorboardX", "wandb", "trackio"}

    def find_spec(name, *args, **kw):
        if name in trackers:
            return object() if name in names else None
        return REAL_FIND_SPEC(name, *args, **kw)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)


def test_none_reports_nowhere(monkeypatch):
    installed(monkeypatch)
    assert tracker_list("none") == []
    assert RMConfig().report_to == "none" and GRPORunConfig(task="t", policy="p").report_to == "none"


@pytest.mark.parametrize("tracker", ["tensorboard", "wandb", "trackio"])
def test_a_missing_tracker_is_one_line_naming_its_package(monkeypatch, tracker):
    installed(monkeypatch)
    with pytest.raises(ConfigError) as err:
        tracker_list(tracker)
    assert "\n" not in str(err.value) and f"the {tracker} package is not installed" in str(err.value)


def test_tensorboardx_serves_for_tensorboard(monkeypatch):
    installed(monkeypatch, "tensorboardX")
    assert tracker_list("tensorboard") == ["tensorboard"]


def test_the_setting_reaches_the_reward_trainers_arguments(tmp_path, monkeypatch):
    installed(monkeypatch, "tensorboard", "wandb", "trackio")
    for tracker in ("tensorboard", "wandb", "trackio"):
        args = reward_config(RMConfig(report_to=tracker), str(tmp_path), 64, validate=False, progress=False)
        assert args.report_to == [tracker]
    assert reward_config(RMConfig(), str(tmp_path), 64, validate=False, progress=False).report_to in ([], ["none"])


def test_the_setting_reaches_the_grpo_trainers_arguments(tmp_path, monkeypatch):
    installed(monkeypatch, "trackio")
    config = GRPORunConfig(task="chain_sum", policy="p", group_size=2, questions_per_step=1, report_to="trackio")
    assert grpo_args(config, tmp_path, progress=False).report_to == ["trackio"]


def test_rm_training_refuses_a_missing_tracker_before_anything_loads(monkeypatch):
    installed(monkeypatch)
    with pytest.raises(ConfigError, match="the wandb package is not installed"):
        train_reward_model([], [], RMConfig(report_to="wandb"), progress=False)  # not "no training pairs"


def test_a_resumed_run_may_change_where_it_reports():
    old = GRPORunConfig(task="chain_sum", policy="p")
    assert old.model_copy(update={"report_to": "tensorboard"}).differences(old) == []
