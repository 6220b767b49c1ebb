"""bench/content_ensemble.py: the third confirmation's questions are the pre-registered fresh ones."""

from collections import Counter

import pytest

from bench_module import load_bench
from orchrm.mas import locate_traces, read_traces


@pytest.fixture(scope="module")
def ce(request):
    return load_bench(request, "content_ensemble.py")


def test_the_questions_are_none_an_earlier_run_sampled_and_those_plan_md_counted(ce):
    got = ce.fresh_task().questions(ce.QUESTIONS, split="test", seed=0)
    first = ce.first
    sampled = first.sampled_before() | {
        t.question_id for f in (first.HELDOUT, ce.second.HELDOUT) for t in read_traces(locate_traces(f))
    }
    assert len(sampled) == 360 + 150 + 100 and not {q.id for q in got} & sampled
    # bench/results/content_ensemble/PLAN.md, counted before any plan was sampled
    assert Counter(q.metadata["kind"] for q in got) == {"arithmetic": 26, "bridge": 26, "fanout": 26, "compare": 22}
    group = Counter(
        "new" if t in first.NEW else "old" if t in first.OLD else "trained"
        for t in (f"{q.metadata['kind']}.{q.metadata['template']}" for q in got)
    )
    assert group == {"new": 45, "old": 41, "trained": 14}


def test_an_ensemble_reward_is_the_mean_of_its_rms_per_plan(ce):
    scored = [{"q1": [0.0, 1.0], "q2": [2.0]}, {"q1": [1.0, 0.0], "q2": [4.0]}]
    assert ce.first.mean_rewards(scored) == {"q1": [0.5, 0.5], "q2": [3.0]}
    with pytest.raises(ValueError):  # the RMs scored different plans
        ce.first.mean_rewards([{"q1": [0.0]}, {"q1": [0.0, 1.0]}])
