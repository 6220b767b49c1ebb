"""`import orchrm` is the front door: a deliberate list of names, each importable, and nothing else in `dir`."""

import importlib
import subprocess
import sys

import orchrm

API = {
    "__version__",
    "OrchrmError",
    "LLM",
    "open_llm",
    "load_task",
    "Plan",
    "Trace",
    "read_traces",
    "RunConfig",
    "arollout",
    "PairConfig",
    "build_pairs",
    "RMConfig",
    "train_reward_model",
    "RewardModel",
    "serve",
    "BonConfig",
    "abon",
    "LoopConfig",
    "arun_loop",
    "GRPORunConfig",
    "setup_run",
    "TRLReward",
    "AsyncTRLReward",
    "import_executions",
}


def test_all_is_the_api():
    assert sorted(orchrm.__all__) == sorted(API)
    assert sorted(orchrm.__all__) == sorted([*orchrm._EXPORTS, "__version__"])  # each name has a home


def test_every_name_imports():
    for name in orchrm.__all__:
        assert getattr(orchrm, name) is not None, name
        assert getattr(importlib.import_module(orchrm._EXPORTS.get(name, ".version"), "orchrm"), name) is getattr(
            orchrm, name
        )


def test_dir_holds_only_the_api():
    for name in orchrm.__all__:
        getattr(orchrm, name)  # loads the subpackages, which become attributes of the package
    importlib.import_module("orchrm.cli.app")
    assert dir(orchrm) == sorted(API)


def test_every_name_is_documented():
    doc = orchrm.__doc__ or ""
    assert [n for n in API if f"`{n}`" not in doc] == []


def test_unknown_name_is_an_attribute_error():
    try:
        orchrm.no_such_name  # noqa: B018
    except AttributeError as exc:
        assert "no_such_name" in str(exc)
    else:
        raise AssertionError("expected AttributeError")


def test_import_stays_light():
    heavy = "('torch', 'transformers', 'trl', 'numpy', 'orchrm.mas')"
    code = f"import sys, orchrm; print(sorted(m for m in {heavy} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
