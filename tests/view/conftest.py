"""Fixtures for the viewer's tests; the run folders are built in support/view_runs.py."""

import pytest

from orchrm.view import load_runs
from view_runs import Running, write_bon, write_grpo


@pytest.fixture
def bon_dir(tmp_path):
    return write_bon(tmp_path / "bon")


@pytest.fixture
def viewer(bon_dir):
    running = Running(load_runs([bon_dir]))
    yield running
    running.stop()


@pytest.fixture
def grpo_dir(tmp_path):
    return write_grpo(tmp_path / "grpo")
