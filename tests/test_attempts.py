"""Append-only step logs keep every attempt a resume makes; `latest` reads the run as it stands."""

from pydantic import BaseModel

from orchrm import jsonl
from orchrm.attempts import latest, next_attempt
from orchrm.grpo.timing import STEPS_FILE, StepClock, read_steps


class Row(BaseModel):
    step: int
    attempt: int = 0
    n: int = 0


def test_the_first_start_is_attempt_0_and_each_resume_one_more(tmp_path):
    path = tmp_path / "log.jsonl"
    assert next_attempt(path, Row.model_validate, "row") == 0
    jsonl.append(path, Row(step=0, attempt=0))
    jsonl.append(path, Row(step=1, attempt=2))
    assert next_attempt(path, Row.model_validate, "row") == 3


def test_a_later_attempt_supersedes_a_step_and_leaves_the_others_in_file_order():
    rows = [
        Row(step=0, n=1),
        Row(step=1, n=2),
        Row(step=1, n=3),
        Row(step=1, attempt=1, n=4),
        Row(step=2, attempt=1, n=5),
        Row(step=1, attempt=1, n=6),
    ]
    assert [r.n for r in latest(rows)] == [1, 4, 5, 6]  # step 1: both of attempt 1's records, none of attempt 0's


def test_a_resumed_clock_stamps_its_attempt_and_its_repeat_supersedes(tmp_path):
    legacy = '{"step": 1, "sampler": "server", "generation_s": 1, "reward_s": 0, "update_s": 1, "step_s": 2}\n'
    (tmp_path / STEPS_FILE).write_text(legacy)  # written before steps carried an attempt: attempt 0
    first = StepClock(tmp_path / STEPS_FILE, "server")
    assert first.attempt == 1
    first.end(2)
    again = StepClock(tmp_path / STEPS_FILE, "server")
    again.end(2)
    assert again.attempt == 2 and [(t.step, t.attempt) for t in read_steps(tmp_path)] == [(1, 0), (2, 2)]
    assert read_steps(tmp_path / "missing") == []
