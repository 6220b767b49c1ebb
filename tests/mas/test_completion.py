"""The one reading of a completion: reasoning dropped, the last complete plan, MAS-Orchestra XML, bounded size."""

import json
import time

import pytest

from orchrm.mas.completion import plan_region, read_plan
from orchrm.mas.plans import MAX_PLAN_TEXT_CHARS, PlanError, parse_plan

A = json.dumps({"agents": [{"id": "a", "type": "cot", "input": "first"}]})
B = json.dumps({"agents": [{"id": "b", "type": "cot", "input": "final"}]})


@pytest.mark.parametrize(
    ("completion", "region"),
    [
        ("<think>draft</think>final", "final"),
        ("<THINK>draft</think>final", "final"),
        ("keep <reasoning>x</reasoning> this <thinking>y</thinking>too", "keep  this too"),
        ("before <think>never closed", "before"),
        ("thought opened by the template</think> plan", "plan"),
        ("<think>a</think><think>b</think> c", "c"),
        ("<|im_start|>assistant\n<think>x</think>plan<|im_end|>junk", "plan"),
        ("<think><thinking>nested</thinking> still thinking</think>after", "after"),
    ],
)
def test_reasoning_is_not_the_plan(completion, region):
    assert plan_region(completion) == region


def test_the_last_complete_plan_wins():
    assert read_plan(f"Draft: {A}\nFinal: {B}") == parse_plan(B)
    assert read_plan(f"```json\n{A}\n```\nthen\n```json\n{B}\n```") == parse_plan(B)
    assert read_plan(f"{A} and a broken one: {B[:-5]}") == parse_plan(A)  # the last *complete* one
    assert read_plan(f"<think>{B}</think>{A}") == parse_plan(A)


@pytest.mark.parametrize(
    ("completion", "rule"),
    [
        ("", "parse"),
        ("<think>" + A + "</think>", "parse"),
        (A[:-2] + "\ud800" + A[-2:], "encoding"),
        ("x" * (MAX_PLAN_TEXT_CHARS + 1), "too_large"),
        (None, "parse"),
        (b"bytes", "parse"),
    ],
)
def test_what_is_not_a_plan_is_a_plan_error(completion, rule):
    with pytest.raises(PlanError) as err:
        read_plan(completion)
    assert err.value.rule == rule


def test_many_unclosed_openings_stay_linear():
    text = "<think>" * 200_000
    start = time.process_time()
    assert plan_region(text) == ""
    assert time.process_time() - start < 2.0  # linear: quadratic would take minutes
