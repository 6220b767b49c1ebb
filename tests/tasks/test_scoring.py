import threading
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orchrm.tasks.scoring import (
    ScoringTimeout,
    answer_key,
    exact_match,
    extract_answer,
    math_equivalent,
    numeric_match,
    parse_number,
    token_f1,
)


@pytest.mark.parametrize(
    "text, answer",
    [
        ("steps...\nAnswer: 48", "48"),
        ("so the result is \\boxed{\\frac{1}{2}}.", "\\frac{1}{2}"),
        ("Answer: \\boxed{12}", "12"),
        ("The final answer is: Paris.", "Paris"),
        ("I had 3 apples and ate 1, leaving 2 apples", "2"),
        ("Answer: 1\nwait, no.\nAnswer: 2", "2"),
        ("", None),
        ("no numbers here", None),
    ],
)
def test_extract_answer(text, answer):
    assert extract_answer(text) == answer


def test_numbers():
    assert parse_number("1,234") == 1234 and parse_number("$5") == 5 and parse_number("3/4") == 0.75
    assert parse_number("12.5%") == 12.5 and parse_number("five") is None
    assert numeric_match("48.0", "48") is True
    assert numeric_match("47", "48") is False
    assert numeric_match("x", "48") is None


def test_text_matching():
    assert exact_match("The Eiffel Tower.", "eiffel tower")
    assert not exact_match("tower", "eiffel tower")
    assert token_f1("eiffel tower", "the eiffel tower") == 1.0
    assert 0 < token_f1("big eiffel", "eiffel tower") < 1
    assert token_f1("", "x") == 0.0


def test_math_equivalence():
    assert math_equivalent("\\frac{1}{2}", "0.5")
    assert math_equivalent("x^2+2x+1", "(x+1)^2")
    assert not math_equivalent("\\sqrt{2}", "1.41")


def test_math_timeout_is_enforced_and_worker_recovers():
    start = time.monotonic()
    with pytest.raises(ScoringTimeout, match="exceeded 1s"):
        math_equivalent("9^{9^{9^{9}}}", "2", timeout_s=1)
    assert time.monotonic() - start < 5
    assert math_equivalent("\\frac{2}{4}", "\\frac{1}{2}")


def test_math_equivalence_off_the_main_thread():
    results = []
    threads = [threading.Thread(target=lambda: results.append(math_equivalent("2\\pi", "\\pi+\\pi"))) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [True, True, True]


ANSWERS = st.sampled_from(
    ["5", "5.0", "$5", "5%", "1,000", "1000", "0.1", "1/10", "The Cat", "cat!", "the", "nan", "1e-10"]
)


@settings(max_examples=300)
@given(ANSWERS | st.text(max_size=8), ANSWERS | st.text(max_size=8))
def test_answers_under_one_key_are_answers_the_scorers_call_equal(a, b):
    """Votes and agreement merge answers by `answer_key`; two answers it merges must be ones the scorers
    (which decide correctness and do not use the key) already treat as the same."""
    key = answer_key(a)
    if key is not None and key == answer_key(b):
        assert numeric_match(a, b) is True if key.startswith("#") and key != "#nan" else exact_match(a, b)


def test_answer_key():
    assert answer_key("5") == answer_key("5.0") == answer_key("$5") == "#5"
    assert answer_key("The Cat") == answer_key("cat") == "cat"
    assert answer_key("the") is None and answer_key("  ") is None and answer_key(None) is None
