from orchrm.completions import completion_text


def test_completion_text_reads_plain_and_conversational_completions():
    assert completion_text('{"answer": "4"}') == '{"answer": "4"}'
    assert completion_text({"role": "assistant", "content": "plan"}) == "plan"
    chat = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "a"},
        {"role": "assistant", "content": None},
    ]
    assert completion_text(chat) == "a"
