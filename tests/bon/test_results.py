"""The typed results: `dump()` is the results.json contract benchmarks read by key (same keys, same order,
same value types), a file reads back into the same model, and run fields never given stay out."""

import json

import pytest

from orchrm.bon.candidates import Candidate, Case
from orchrm.bon.compute import compute_results
from orchrm.bon.config import BonConfig
from orchrm.bon.report import auc_rows, mark_rows, method_rows
from orchrm.bon.results import RESULTS_FILE, BonResults, RMInfo, RunInfo, read_results, write_results
from orchrm.errors import RunFileError
from orchrm.folders import folder_kind

KEYS = [
    "task",
    "model",
    "agent_model",
    "rm",
    "rollout",
    "warnings",
    "prior",
    "n",
    "questions",
    "plans",
    "valid_plans_per_question",
    "questions_without_valid_plan",
    "reward_std",
    "config",
    "methods",
    "marks",
    "router_fallbacks",
    "auc",
    "content",
    "per_kind",
    "notes",
    "adaptive_sweep",
    "curves",
]


def cases():
    def cand(i, ok, reward, length):
        return Candidate(i, True, reward, f"#{int(ok)}", ok, 100, 1000, 1.0, 10.0, length=length, prior=0.5)

    return [
        Case("a", [cand(0, True, 1.0, 20), cand(1, False, 0.0, 5)], kind="bridge"),
        Case("b", [cand(0, False, 1.0, 5), cand(1, True, 0.0, 20)], kind="bridge"),
        Case("c", [cand(0, True, 0.5, 9), cand(1, True, 0.0, 9)]),
    ]


def full_run() -> RunInfo:
    return RunInfo(
        task="t",
        model="m",
        agent_model="m",
        rm=RMInfo(path="rm", backbone="b", tasks=["t"], weights_sha256="s"),
        rollout={"degree": "dag", "temperature": 0.8},
        warnings=[],
        prior={"trials": 4},
    )


def test_dump_keeps_the_results_json_keys_order_and_value_types():
    r = compute_results(cases(), BonConfig(judge=False, resamples=200), [], meta=full_run())
    d = r.dump()
    assert list(d) == KEYS
    assert list(d["methods"]) == ["rm", "rm-adaptive", "random", "shortest", "prior", "majority", "oracle"]
    assert list(d["methods"]["rm"]) == ["accuracy", "tokens", "executed_plans", "wall_s"]
    assert list(d["methods"]["rm"]["accuracy"]) == ["value", "low", "high"]
    assert list(d["methods"]["rm"]["tokens"]) == ["plan", "execute", "verify", "total"]
    assert list(d["adaptive_sweep"][0]) == ["tau", "accuracy", "tokens", "executed_plans", "wall_s"]
    assert list(d["auc"]["rm"]) == ["value", "low", "high", "n_questions"]
    assert list(d["curves"]["rm"]["2"]) == ["accuracy", "tokens"] and set(d["curves"]["rm"]) == {"1", "2"}
    assert d["per_kind"]["bridge"]["n"] == 2 and type(d["per_kind"]["bridge"]["n"]) is int  # not 2.0
    assert type(d["per_kind"]["bridge"]["rm"]) is float and type(d["auc"]["rm"]["n_questions"]) is int
    assert (
        d["marks"]["best_trivial"] == "prior" and d["marks"]["rm_minus_random"]["value"] is not None
    )  # a name among intervals
    assert d["config"] == BonConfig(judge=False, resamples=200).model_dump()


def test_a_results_file_reads_back_into_the_same_results(tmp_path):
    r = compute_results(cases(), BonConfig(judge=False, resamples=200), [], meta=full_run())
    write_results(tmp_path, r, [{"question_id": c.question_id} for c in cases()])
    back = read_results(tmp_path / RESULTS_FILE)
    assert back == r and back.dump() == json.loads((tmp_path / RESULTS_FILE).read_text())
    assert (method_rows(back), mark_rows(back), auc_rows(back)) == (method_rows(r), mark_rows(r), auc_rows(r))
    assert (tmp_path / "per_question.jsonl").read_text().count("\n") == 3
    assert folder_kind(tmp_path) == "bon"


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (None, "[Errno 2] No such file or directory"),
        ("[" * 100 + "]" * 100, "nesting depth 100, at most 64 (json depth)"),
        ("[]", "(results): Input should be a valid dictionary or instance of BonResults"),
        ("{}", "task: Field required"),
    ],
)
def test_a_damaged_results_file_is_one_line_naming_it_and_why(tmp_path, text, reason):
    path = tmp_path / RESULTS_FILE
    if text is not None:
        path.write_text(text)
    with pytest.raises(RunFileError) as caught:
        read_results(tmp_path)
    assert str(caught.value).startswith(f"{path}: not a best-of-N results file ({reason}")
    assert caught.value.__suppress_context__


def test_run_fields_never_given_stay_out_of_the_file():
    r = compute_results(cases(), BonConfig(judge=False, resamples=200), [], meta=RunInfo(task="t", prior=None))
    d = r.dump()
    assert list(d)[:2] == ["task", "prior"] and d["prior"] is None
    assert not {"model", "agent_model", "rm", "rollout", "warnings"} & set(d)
    assert BonResults.model_validate(d).dump() == d
