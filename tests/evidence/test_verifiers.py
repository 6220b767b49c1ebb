import pytest
import reasoning_gym

from orchrm.evidence.verifiers import BUILTIN, VerifierResult, check_the_checker, run_verifier
from orchrm.tasks.scoring import ScoringTimeout


@pytest.mark.parametrize(
    ("name", "response", "reference", "params", "verdict"),
    [
        ("math_answer", "so x = 1/2. Answer: \\frac{1}{2}", "0.5", {}, "pass"),
        ("math_answer", "Answer: 3", "0.5", {}, "fail"),
        ("math_answer", "I am not sure.", "0.5", {}, "fail"),
        ("math_answer", "Answer: 3", None, {}, "abstain"),
        ("numeric_tolerance", "Answer: 1,000.0001", "1000", {"rel_tol": 1e-3}, "pass"),
        ("numeric_tolerance", "Answer: 1001", "1000", {"rel_tol": 1e-6}, "fail"),
        ("numeric_tolerance", "Answer: 5", "Paris", {}, "abstain"),
        ("exact_answer", "Answer: The Eiffel Tower.", "eiffel tower", {}, "pass"),
        ("exact_answer", "Answer: Big Ben", "eiffel tower", {}, "fail"),
        ("answer_f1", "Answer: Smith", "John Ronald Smith", {}, "partial"),
        ("answer_f1", "Answer: john ronald smith", "John Ronald Smith", {}, "pass"),
        ("has_answer", "nothing here", None, {}, "fail"),
        ("regex", "ID: AB-123", None, {"pattern": r"[A-Z]{2}-\d{3}"}, "pass"),
        ("regex", "ID: AB-123", None, {"pattern": r"secret", "must_match": False}, "pass"),
        ("json_valid", '{"a": 1}', None, {"schema": {"type": "object", "required": ["a"]}}, "pass"),
        ("json_valid", '{"a": 1', None, {}, "fail"),
        ("json_valid", '{"b": 1}', None, {"schema": {"type": "object", "required": ["a"]}}, "fail"),
        ("length", "one two three", None, {"max_words": 2}, "fail"),
        ("keywords", "Paris is in France", None, {"keywords": ["paris", "germany"]}, "partial"),
    ],
)
def test_builtin_verdicts(name, response, reference, params, verdict):
    r = run_verifier(name, response, reference, **params)
    assert r.verdict == verdict, r
    assert (r.score is None) == (verdict in ("abstain", "error"))
    assert r.reason


def test_a_crashed_verifier_is_an_error_not_a_score():
    def broken(response, reference, **_):
        raise ZeroDivisionError("oops")

    r = run_verifier(broken, "Answer: 1", "1")
    assert r.verdict == "error" and r.score is None and "ZeroDivisionError" in r.error


def test_a_timeout_is_an_error(monkeypatch):
    import orchrm.evidence.verifiers as v

    def slow(pred, gold, timeout_s=5.0):
        raise ScoringTimeout("too slow")

    monkeypatch.setattr(v, "math_equivalent", slow)
    r = run_verifier("math_answer", "Answer: x^2", "x*x")
    assert r.verdict == "error" and r.score is None


def test_unknown_verifier_and_wrong_return_type_are_errors():
    assert run_verifier("nope", "x").verdict == "error"
    assert run_verifier(lambda r, ref, **_: 1.0, "x").verdict == "error"


def test_result_invariants_are_enforced():
    with pytest.raises(ValueError):
        VerifierResult("v", "pass", None, "no score")
    with pytest.raises(ValueError):
        VerifierResult("v", "error", 0.0, "a score on an error")
    with pytest.raises(ValueError):
        VerifierResult("v", "pass", 1.5, "out of range")


def _golds(dataset, n=8):
    ds = reasoning_gym.create_dataset(dataset, size=n, seed=7)
    return [(e["answer"], e["answer"], {"entry": e}) for e in ds]


@pytest.mark.parametrize("dataset", ["gsm_symbolic", "basic_arithmetic", "chain_sum", "family_relationships"])
def test_check_the_checker_reasoning_gym_scorer_gives_golds_full_marks(dataset):
    report = check_the_checker("reasoning_gym", _golds(dataset))
    assert report.ok, report.failures


@pytest.mark.parametrize("dataset", ["gsm_symbolic", "basic_arithmetic", "chain_sum"])
def test_check_the_checker_math_answer_on_numeric_golds(dataset):
    report = check_the_checker("math_answer", _golds(dataset))
    assert report.ok, report.failures


def test_check_the_checker_exact_answer_on_relation_golds():
    report = check_the_checker("exact_answer", _golds("family_relationships"))
    assert report.ok, report.failures


def test_check_the_checker_catches_a_bad_checker():
    def too_strict(response, reference, **_):
        return VerifierResult("strict", "fail", 0.0, "rejects everything")

    report = check_the_checker(too_strict, [("1", "1", {})])
    assert not report.ok and len(report.failures) == 1


def test_every_builtin_is_registered_by_its_name():
    assert {"math_answer", "numeric_tolerance", "exact_answer", "answer_f1", "reasoning_gym"} <= set(BUILTIN)


def test_check_the_checker_math_answer_on_champ_golds():
    champ_dataset = pytest.importorskip("champ_dataset")
    problems = sorted(champ_dataset.load("v0").problems.values(), key=lambda p: p.identifier)[:40]
    report = check_the_checker("math_answer", [(p.answer, p.answer, {}) for p in problems])
    assert report.checked == 40 and report.ok, report.failures[:3]


def test_check_the_checker_answer_f1_on_fanoutqa_golds():
    fanoutqa = pytest.importorskip("fanoutqa")
    golds = [str(q.answer) for q in sorted(fanoutqa.load_dev(), key=lambda q: q.id)[:40]]
    report = check_the_checker("answer_f1", [(g, g, {}) for g in golds], as_response=lambda g: g)
    assert report.ok, report.failures[:3]
