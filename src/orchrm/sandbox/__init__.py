"""Run untrusted Python in a separate, confined process: the model-written programs of the `python` sub-agent
(`mas`) and the verifier scripts and `run_python` calls of the evaluator (`evidence`).

It sits below both rooms and imports nothing of orchrm's but `safejson`. `_launch.py` is the caller's side
(scratch directory, wall-clock limit, how the run ended); `_runner.py` is the child it starts, stdlib only
and never imported. A hostile script ends as a `SandboxResult` whose `outcome` says so; which isolation
layers (`LAYERS`) were really in place is recorded on every result.
"""

from ._launch import LAYERS, Outcome, SandboxLimits, SandboxResult, arun_python, run_python

__all__ = ["LAYERS", "Outcome", "SandboxLimits", "SandboxResult", "arun_python", "run_python"]
