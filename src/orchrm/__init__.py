"""orchrm: label-free reward models for LLM multi-agent orchestration plans.

The front door is the 25 names below: a config and an action per stage, the few types they pass between them,
and the adapters. Behind it, each room's `__init__` names its public parts in `__all__`: `orchrm.llm`,
`orchrm.tasks`, `orchrm.mas`, `orchrm.evidence`, `orchrm.pairs`, `orchrm.rm`, `orchrm.bon`, `orchrm.grpo`,
`orchrm.adapters` (and the framework reward files `orchrm.adapters.verl`, `orchrm.adapters.openrlhf`),
`orchrm.loop`, `orchrm.view` and `orchrm.cli` (`main(argv)` is the command line). The benchmarks import nothing
else (tests/test_bench_imports.py). A module inside a room (`orchrm.bon.stats`), a `_` module, a module outside
these rooms (`orchrm.atomic`) and a name left out of an `__all__` are internal and may change without notice.

| stage | name | one line |
|---|---|---|
| models | `open_llm`, `LLM` | `with open_llm("local") as llm: llm.generate("2+2?", category="execute")` |
| tasks | `load_task` | `task = load_task("mix:world_qa,chain_sum")` |
| rollout | `RunConfig`, `arollout` | `await arollout(task, llm, Path("runs/a"), RunConfig(task="chain_sum"))` |
| traces | `read_traces` | `traces = read_traces(Path("runs/a/traces.jsonl"))` |
| | `Trace`, `Plan` | a `Trace` is one executed plan; `trace.plan` is its `Plan` |
| pairs | `PairConfig`, `build_pairs` | `pairs = build_pairs(traces, PairConfig(seed=0))` |
| RM | `RMConfig`, `train_reward_model` | `train_reward_model(pairs.train, pairs.val, RMConfig()).model.save("rm")` |
| | `RewardModel` | `RewardModel.load("rm").score("What is 2+2?", [plan_a, plan_b])` |
| | `serve` | `serve(RewardModel.load("rm"), port=8765)` (POST /score) |
| best-of-N | `BonConfig`, `abon` | `await abon(task, llm, rm, Path("runs/bon"), run_config, BonConfig())` |
| the loop | `LoopConfig`, `arun_loop` | `await arun_loop(task, llm, Path("runs/demo"), LoopConfig())` |
| orchestrator | `GRPORunConfig` | `settings = GRPORunConfig(task=t, policy=p)` |
| | `setup_run` | `with setup_run(settings, out, rm=Path("rm")) as run: run.train()` |
| adapters | `TRLReward`, `AsyncTRLReward` | `GRPOTrainer(..., reward_funcs=TRLReward("rm"))` |
| import | `import_executions` | `import_executions(Path("runs.jsonl"), Path("runs/imported"))` |
| errors | `OrchrmError` | `except OrchrmError as e: print(e, e.detail)` |
| | `__version__` | `orchrm.__version__` |

The names are imported on first use (PEP 562), not when `orchrm` is: every `import orchrm.x` runs this file
first, and eager imports here made each of them (and the CLI's start) load every room.
"""

from __future__ import annotations

import importlib as _importlib
import typing as _typing

from .version import __version__

_EXPORTS = {
    "LLM": ".llm",
    "open_llm": ".llm",
    "load_task": ".tasks",
    "RunConfig": ".mas",
    "arollout": ".mas",
    "Plan": ".mas",
    "Trace": ".mas",
    "read_traces": ".mas",
    "PairConfig": ".pairs",
    "build_pairs": ".pairs",
    "RMConfig": ".rm",
    "RewardModel": ".rm",
    "train_reward_model": ".rm",
    "serve": ".rm.server",
    "BonConfig": ".bon",
    "abon": ".bon",
    "LoopConfig": ".loop",
    "arun_loop": ".loop",
    "GRPORunConfig": ".grpo",
    "setup_run": ".grpo",
    "TRLReward": ".adapters",
    "AsyncTRLReward": ".adapters",
    "import_executions": ".mas.interop",
    "OrchrmError": ".errors",
}

__all__ = [
    "LLM",
    "AsyncTRLReward",
    "BonConfig",
    "GRPORunConfig",
    "LoopConfig",
    "OrchrmError",
    "PairConfig",
    "Plan",
    "RMConfig",
    "RewardModel",
    "RunConfig",
    "TRLReward",
    "Trace",
    "__version__",
    "abon",
    "arollout",
    "arun_loop",
    "build_pairs",
    "import_executions",
    "load_task",
    "open_llm",
    "read_traces",
    "serve",
    "setup_run",
    "train_reward_model",
]

if _typing.TYPE_CHECKING:
    from .adapters import AsyncTRLReward, TRLReward
    from .bon import BonConfig, abon
    from .errors import OrchrmError
    from .grpo import GRPORunConfig, setup_run
    from .llm import LLM, open_llm
    from .loop import LoopConfig, arun_loop
    from .mas import Plan, RunConfig, Trace, arollout, read_traces
    from .mas.interop import import_executions
    from .pairs import PairConfig, build_pairs
    from .rm import RewardModel, RMConfig, train_reward_model
    from .rm.server import serve
    from .tasks import load_task


def __getattr__(name: str) -> object:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'orchrm' has no attribute {name!r}")
    value = getattr(_importlib.import_module(module, __name__), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return list(__all__)
