"""The same loop through native tool calling, against the fake OpenAI server, with its fallbacks."""

import asyncio
import json

from fake_openai import Reply
from orchrm.evidence.agent import AgentConfig, EvaluatorAgent, JudgeTask
from orchrm.evidence.skills import load_skills
from orchrm.llm import LLM, OpenAIBackend

TASK = JudgeTask(
    "pointwise",
    "3 boxes of 12 pens, 5 given away. How many left?",
    ["3 * 12 = 36. 36 - 5 = 30. Answer: 30"],
    kind="math",
)


def call(name, **arguments):
    return Reply(
        body=json.dumps(
            {
                "id": "c",
                "object": "chat.completion",
                "created": 0,
                "model": "m",
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "tool_calls",
                        "message": {
                            "role": "assistant",
                            "content": None,
                            "tool_calls": [
                                {
                                    "id": "t",
                                    "type": "function",
                                    "function": {"name": name, "arguments": json.dumps(arguments)},
                                }
                            ],
                        },
                    }
                ],
                "usage": {"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25},
            }
        ).encode()
    )


def run(fake, protocol="auto"):
    llm = LLM(OpenAIBackend(fake.url, "m"))
    try:
        return asyncio.run(EvaluatorAgent(llm, load_skills(), AgentConfig(max_steps=4, protocol=protocol)).run(TASK))
    finally:
        llm.close()


def test_native_tool_calls_drive_the_loop(fake):
    fake.queue(
        call("use_skill", skill="math-answer"),
        call("run_verifier", resource="math-answer/arithmetic-consistency"),
        call("final_answer", reason="a wrong step", score=0.0, confidence=0.9),
    )
    outcome = run(fake)
    assert outcome.final["score"] == 0.0 and outcome.flags == []
    names = [[t["function"]["name"] for t in r["tools"]] for r in fake.requests]
    assert "view_resource" not in names[0] and "view_resource" in names[1]
    assert all("response_format" not in r and r["tool_choice"] == "required" for r in fake.requests)
    assert outcome.evidence["response"][0].score == 0.5
    assert outcome.prompt_tokens == 60


def test_an_invalid_tool_call_is_flagged(fake):
    fake.queue(call("use_skill", skill="no-such-skill"), call("final_answer", reason="r", score=0.5, confidence=0.5))
    outcome = run(fake)
    assert any(f.startswith("invalid_action") for f in outcome.flags) and outcome.final is not None


def test_a_server_answering_in_text_switches_to_json_actions(fake):
    fake.queue(Reply(text=json.dumps({"action": "final_answer", "reason": "r", "score": 1.0, "confidence": 0.4})))
    outcome = run(fake)
    assert outcome.final["score"] == 1.0
    assert any(f.startswith("no_tool_call") for f in outcome.flags)


def test_a_server_rejecting_tools_falls_back_to_constrained_json(fake):
    fake.queue(
        Reply(status=400, text="tools are not supported"),
        Reply(text=json.dumps({"action": "final_answer", "reason": "r", "score": 0.2, "confidence": 0.4})),
    )
    outcome = run(fake)
    assert any(f.startswith("tools_unsupported") for f in outcome.flags)
    assert fake.requests[1]["response_format"]["type"] == "json_schema" and "tools" not in fake.requests[1]
    assert outcome.final["score"] == 0.2
