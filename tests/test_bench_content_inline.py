"""bench/content_inline.py: the second confirmation's questions are the pre-registered fresh ones."""

from collections import Counter

import pytest

from bench_module import load_bench
from orchrm.mas import locate_traces, read_traces


@pytest.fixture(scope="module")
def ci(request):
    return load_bench(request, "content_inline.py")


def test_the_questions_are_none_an_earlier_run_sampled_and_those_plan_md_counted(ci):
    got = ci.fresh_task().questions(ci.QUESTIONS, split="test", seed=0)
    sampled = ci.first.sampled_before() | {t.question_id for t in read_traces(locate_traces(ci.first.HELDOUT))}
    assert len(sampled) == 360 + 150 and not {q.id for q in got} & sampled
    # bench/results/content_inline/PLAN.md, counted before any plan was sampled
    assert Counter(q.metadata["kind"] for q in got) == {"bridge": 27, "fanout": 27, "arithmetic": 26, "compare": 20}
    group = Counter(
        "new" if t in ci.first.NEW else "old" if t in ci.first.OLD else "trained"
        for t in (f"{q.metadata['kind']}.{q.metadata['template']}" for q in got)
    )
    assert group == {"new": 41, "old": 54, "trained": 5}


def test_inline_minus_plain_pairs_the_auc_by_seed(ci):
    auc = lambda v: {"content": {"auc": {"rm": {"value": v}}}}  # noqa: E731
    rows = [
        {"arm": "inline", "seed": 0, **auc(0.8)},
        {"arm": "plain", "seed": 0, **auc(0.7)},
        {"arm": "inline", "seed": 1, **auc(0.6)},
    ]
    assert ci._auc_minus(rows) == [{"seed": 0, "inline": {"value": 0.8}, "plain": {"value": 0.7}}]
