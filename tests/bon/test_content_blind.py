"""The content-blind baselines: `router` (question words × plan shape), `kind-prior` (shape rate per question
kind), the `shape-mean` ablation of rm, and the marks that hold rm to the best of them."""

from dataclasses import replace

import pytest

from orchrm.bon.blind import ContentBlind
from orchrm.bon.candidates import Candidate, Case
from orchrm.bon.cases import build_cases
from orchrm.bon.compute import compute_results
from orchrm.bon.config import BonConfig
from orchrm.bon.prior import KindPrior, ShapePrior
from orchrm.bon.report import content_lines, mark_rows
from orchrm.bon.results import RunInfo
from orchrm.bon.router import Router, question_ngrams
from orchrm.bon.selection import METHODS, Context
from orchrm.bon.selectors import shape_mean
from orchrm.mas.plans import parse_plan
from synthetic_traces import plan_text, trace

SEARCH, PYTHON, COT = plan_text("search"), plan_text("python"), plan_text("cot")
DEBATE = plan_text("debate")  # a shape no training trace has


def asked(t, question, kind=None):
    return t.model_copy(update={"question": question, "question_kind": kind})


def training():
    """Lookups are won by `search`, sums by `python`; `cot` always loses. Pooled, search and python tie."""
    rows = []
    for i in range(6):
        who = f"Which company does Person{i} work for?"
        rows += [
            asked(trace(f"w{i}", 0, SEARCH, correct=True), who, "lookup"),
            asked(trace(f"w{i}", 1, PYTHON, correct=False), who, "lookup"),
            asked(trace(f"w{i}", 2, COT, correct=False), who, "lookup"),
        ]
        total = f"What is {i} + 7 + {i * 3}?"
        rows += [
            asked(trace(f"s{i}", 0, SEARCH, correct=False), total),
            asked(trace(f"s{i}", 1, PYTHON, correct=True), total),
            asked(trace(f"s{i}", 2, COT, correct=False), total),
        ]
    return rows


def test_question_ngrams_fold_numbers_so_they_do_not_become_vocabulary():
    assert question_ngrams("What is 12 + 7?") == question_ngrams("what is 3 + 45?")
    assert "works for" in question_ngrams("Who works for Acme?")


def test_the_router_sends_each_kind_of_question_to_the_shape_that_won_it_in_training():
    rows = training()
    prior = ShapePrior.fit(rows)
    router = Router.fit(rows, prior=prior, exclude={"s0"})
    assert router.rows == 33 and router.summary().fitted  # held-out s0 never counts (36 rows less its 3)
    search, python = parse_plan(SEARCH), parse_plan(PYTHON)
    assert prior.score(search) == pytest.approx(prior.score(python), abs=0.05)  # the pooled prior cannot tell
    who, total = "Which company does Somebody work for?", "What is 40 + 2 + 9?"
    assert router.lookup(who, search).value > router.lookup(who, python).value + 0.1
    assert router.lookup(total, python).value > router.lookup(total, search).value + 0.1
    assert not router.lookup(who, search).fallback


def test_a_shape_the_router_never_saw_falls_back_to_the_shape_prior_and_is_counted():
    rows = training()
    blind = ContentBlind.fit(rows)
    debate = parse_plan(DEBATE)
    hit = blind.router.lookup("Which company does Somebody work for?", debate)
    assert hit.fallback and hit.value == blind.prior.score(debate)
    held = [
        asked(trace("h", i, text, correct=ok), "Which company does Nobody work for?", "lookup")
        for i, (text, ok) in enumerate([(SEARCH, True), (DEBATE, False), (DEBATE, False)])
    ]
    held.append(asked(trace("h", 3, "{bad", invalid=True), "Which company does Nobody work for?"))
    cases = build_cases({"h": held}, {"h": [0.0, 1.0, 2.0, 3.0]}, {}, blind)
    assert [c.router_fallback for c in cases[0].candidates] == [False, True, True, False]  # the invalid plan: unscored
    res = compute_results(cases, BonConfig(judge=False, resamples=100), [], meta=RunInfo(task="t"))
    assert res.router_fallbacks == 2 and any("2 of 3 valid plans" in n for n in res.notes)
    assert res.methods["router"].accuracy.value == 1.0 and res.methods["rm"].accuracy.value == 0.0


def test_a_router_trained_on_one_outcome_only_falls_back_everywhere():
    rows = [asked(trace(f"q{i}", 0, SEARCH, correct=True), "Who?") for i in range(3)]
    router = Router.fit(rows, prior=ShapePrior.fit(rows))
    assert not router.summary().fitted and router.lookup("Who?", parse_plan(SEARCH)).fallback


def test_the_kind_prior_rates_shapes_per_kind_and_pools_questions_without_one():
    rows = training()
    kp = KindPrior.fit(rows)
    search, python = parse_plan(SEARCH), parse_plan(PYTHON)
    assert set(kp.kinds) == {"lookup"} and kp.summary() == {"lookup": 18}
    assert kp.score(search, "lookup") > kp.score(python, "lookup")
    assert kp.score(search, "lookup") == kp.kinds["lookup"].score(search)  # smoothed like ShapePrior, within the kind
    assert kp.score(python, None) == kp.pooled.score(python) == kp.score(python, "a kind never seen")


def cand(i, correct, reward, shape):
    return Candidate(i, True, reward, f"#{i}", correct, 10, 100, 1.0, 1.0, length=5, shape=shape)


def test_shape_mean_scores_each_plan_by_its_shapes_mean_reward_and_ties_in_expectation():
    case = Case(
        "q",
        [
            cand(0, False, 3.0, "cot"),
            cand(1, True, -2.0, "cot"),
            cand(2, True, 0.9, "python"),
            replace(cand(3, True, 9.0, None), valid=False),
        ],
    )
    seen = shape_mean(case)
    assert [c.reward for c in seen.candidates] == [0.5, 0.5, 0.9, 9.0]  # the invalid plan is left alone
    out = METHODS["shape-mean"].run(case, Context())
    assert out.correct == 1.0 and out.chosen == 2  # python's 0.9 beats cot's mean 0.5, though cot holds the max
    assert METHODS["rm"].run(case, Context()).correct == 0.0
    tie = Case("t", [cand(0, False, 1.0, "cot"), cand(1, True, 3.0, "cot"), cand(2, False, 0.0, "python")])
    o = METHODS["shape-mean"].run(tie, Context())
    assert o.correct == pytest.approx(0.5) and o.chosen is None  # plans of one shape share the pick


def test_rm_is_held_to_the_best_content_blind_selector_and_to_shape_mean():
    def c(i, ok, reward, shape, prior, kind_prior, router, length=5):
        return Candidate(
            i,
            True,
            reward,
            f"#{i}",
            ok,
            10,
            100,
            1.0,
            1.0,
            length=length,
            prior=prior,
            kind_prior=kind_prior,
            router=router,
            shape=shape,
        )

    cases = [
        Case("a", [c(0, True, 2.0, "x", 0.1, 0.9, 0.9), c(1, False, 1.0, "y", 0.9, 0.1, 0.1)]),
        Case("b", [c(0, True, 2.0, "x", 0.1, 0.2, 0.9), c(1, False, 1.0, "y", 0.9, 0.8, 0.1)]),
        Case("c", [c(0, True, 2.0, "x", 0.1, 0.2, 0.1), c(1, False, 1.0, "y", 0.9, 0.8, 0.9)]),
    ]
    res = compute_results(cases, BonConfig(judge=False, resamples=200), [], meta=RunInfo(task="t"))
    acc = {m: s.accuracy.value for m, s in res.methods.items()}
    assert (acc["prior"], acc["kind-prior"], acc["router"], acc["shape-mean"]) == (
        0.0,
        pytest.approx(1 / 3),
        pytest.approx(2 / 3),
        1.0,
    )
    assert res.best_content_blind == "router" and res.best_trivial == "shortest"  # equal lengths: 0.5 each
    assert res.mark("rm_minus_best_content_blind").value == pytest.approx(1 / 3)
    assert res.mark("rm_minus_shape-mean").value == 0.0
    assert set(res.auc) >= {"kind-prior", "router", "shape-mean"}
    rows = {r[0]: r[1] for r in mark_rows(res)}
    assert rows["rm - best content-blind selector, router (accuracy points)"].startswith("33.3")


def test_marks_are_repeated_on_templates_training_saw_and_on_those_it_never_did():
    def c(i, ok, reward, shape, router):
        return Candidate(
            i,
            True,
            reward,
            f"#{i}",
            ok,
            10,
            100,
            1.0,
            1.0,
            length=5,
            prior=0.5,
            kind_prior=0.5,
            router=router,
            shape=shape,
        )

    # seen: rm and the router agree; unseen: the router routes wrong, rm reads right
    seen = [Case(f"s{k}", [c(0, True, 2.0, "x", 0.9), c(1, False, 1.0, "y", 0.1)], seen=True) for k in range(3)]
    unseen = [Case(f"u{k}", [c(0, True, 2.0, "x", 0.1), c(1, False, 1.0, "y", 0.9)], seen=False) for k in range(2)]
    untemplated = [Case("n", [c(0, False, 2.0, "x", 0.1), c(1, True, 1.0, "y", 0.9)])]
    config = BonConfig(judge=False, resamples=200)
    res = compute_results(seen + unseen + untemplated, config, [], meta=RunInfo(task="t"))
    g = res.by_template
    assert set(g) == {"seen", "unseen"} and (g["seen"].questions, g["unseen"].questions) == (3, 2)
    assert g["seen"].accuracy["rm"] == 1.0 and g["seen"].marks["rm_minus_best_content_blind"].value == 0.0
    assert g["unseen"].accuracy["router"] == 0.0 and g["unseen"].marks["best_content_blind"] != "router"
    assert g["unseen"].marks["rm_minus_best_content_blind"].value > 0
    assert "by_template" in res.dump() and any(line.startswith("unseen templates (2") for line in content_lines(res))
    every_seen = compute_results(seen + untemplated, config, [], meta=RunInfo(task="t"))
    assert every_seen.by_template is None and "by_template" not in every_seen.dump()  # old files keep their keys


def test_a_case_is_seen_when_training_traces_hold_its_template():
    rows = [t.model_copy(update={"question_template": "lookup.employer"}) for t in training()]
    blind = ContentBlind.fit(rows)
    assert blind.templates == frozenset({"lookup.employer"})
    held = [trace("h", i, SEARCH, correct=True) for i in range(2)]
    new = [t.model_copy(update={"question_template": "bridge.employer_city"}) for t in held]
    old = [t.model_copy(update={"question_template": "lookup.employer"}) for t in held]
    [case_new], [case_old], [case_none] = (
        build_cases({"h": g}, {"h": [0.0, 0.0]}, {}, blind) for g in (new, old, held)
    )
    assert (case_new.seen, case_old.seen, case_none.seen) == (False, True, None)
    assert ContentBlind.fit(training()).templates is None  # traces without templates: no seen/unseen split
