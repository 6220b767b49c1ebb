"""The code is linted and formatted as pyproject.toml's `[tool.ruff]` says: `ruff check` and `ruff format --check`
pass on src, tests and bench, so a change that breaks either fails here rather than in a reviewer's eye."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    "args", [["check", "--no-cache"], ["format", "--check", "--no-cache"]], ids=["check", "format"]
)
def test_ruff_passes(args):
    out = subprocess.run(
        [sys.executable, "-m", "ruff", *args, "src", "tests", "bench"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
