"""Grading a final answer by the result it states (MAS-Orchestra's math grade: math-verify's extraction and
equivalence), beside the task's own scorer: "825 - 515 = 310" against 310 is right, "825 - 515" is not."""

import pytest

from orchrm.tasks import load_task
from orchrm.tasks.base import Question
from orchrm.tasks.gym import GymTask
from orchrm.tasks.scoring import result_matches, stated_result


@pytest.mark.parametrize(
    "prediction, gold, right",
    [
        ("825 - 515 = 310", "310", True),
        ("478 - 682 = -204", "-204", True),
        ("94,100 - 38,900 = 55,200", "55200", True),
        ("x = 310.0", "310", True),
        ("5 + 0 equals 5", "5", True),
        ("Sum of 241 and 447 equals 688", "688", True),
        ("The answer is 310.", "310", True),
        ("825 - 515 = 311", "310", False),
        ("2 - 0 + 6 - 4 = 2", "4", False),
        ("825 - 515", "310", False),  # left unevaluated: no result stated, though it equals 310
        ("1 2 3", "3", False),  # several numbers: no single result
        ("478 - 682 = 204", "-204", False),
        ("no number", "3", False),
    ],
)
def test_the_stated_result_is_graded(prediction, gold, right):
    assert result_matches(prediction, gold) is right


def test_the_stated_result_is_the_right_side_of_the_last_equals():
    assert stated_result("a = b = 7 ") == "7" and stated_result("42") == "42"
    assert stated_result("5 + 0 Equals 5") == "5" and stated_result("the sequel") == "the sequel"


def expression(q: Question) -> str:
    """The arithmetic in a reasoning-gym question, without the trailing '=' or '.'."""
    body = q.question.split(":")[-1] if ":" in q.question else q.question.removeprefix("Calculate ")
    return body.strip().rstrip("=.").strip()


@pytest.mark.parametrize("generator", ["chain_sum", "basic_arithmetic"])
def test_a_reasoning_gym_answer_that_states_its_computation_is_right(generator):
    task = GymTask(generator)
    q = task.questions(1, split="test")[0]
    expr, gold = expression(q), q.answer
    stated = f"{expr} = {gold}"
    raw = float(task._dataset(q.metadata["seed"], 64).score_answer(stated, q.metadata["entry"]))
    assert raw < 1.0  # the generator's own scorer wants the bare answer
    assert task.correct(stated, q) == (1.0, True)
    assert task.correct(gold, q) == (1.0, True)
    assert task.correct(expr, q)[1] is False  # the computation without its result
    assert task.correct(f"{expr} = {int(gold) + 1}", q)[1] is False


def test_a_question_rebuilt_without_its_generator_entry_is_graded_by_the_stated_result():
    task = GymTask("chain_sum")
    q = Question(id="chain_sum-x", question="State the final answer: 825 - 515 =", answer="310")
    assert task.score("825 - 515 = 310", q) == 1.0 and task.score("825 - 515", q) == 0.0


def test_world_qa_arithmetic_grades_the_stated_result_and_keeps_text_answers_exact():
    task = load_task("world_qa")
    numeric = Question(id="w", question="How many more people live in A than in B?", answer="55200")
    assert task.score("94,100 - 38,900 = 55,200", numeric) == 1.0
    assert task.score("94,100 - 38,900", numeric) == 0.0
    assert task.score("about 55,200", numeric) == 0.0  # world_qa's own rule: a hedge is not an answer
    named = Question(id="w2", question="Which company does X work for?", answer="Acme Corp")
    assert task.score("Acme Corp", named) == 1.0 and task.score("x = 3", named) == 0.0
