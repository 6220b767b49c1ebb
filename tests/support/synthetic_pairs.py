"""Synthetic, learnable plan pairs (careful plans beat hasty ones) for reward-model tests."""

import json

from orchrm.pairs import PairRow, render_plan, render_question


def plan_json(kind: str, i: int) -> str:
    agents = {
        "good": [
            {
                "id": "solve",
                "type": "self_consistency",
                "input": f"Solve part {i} carefully",
                "options": {"samples": 5},
            },
            {"id": "check", "type": "reflexion", "input": "Check ${solve}"},
        ],
        "bad": [
            {"id": "guess", "type": "cot", "input": f"Guess quickly {i}"},
            {"id": "echo", "type": "cot", "input": "Repeat ${guess}"},
        ],
    }[kind]
    return json.dumps({"agents": agents, "edges": [{"from": agents[0]["id"], "to": agents[1]["id"]}]})


def question(i: int) -> str:
    return f"What is {i} + {i * 3}?"


def make_rows(n: int, offset: int = 0) -> list[PairRow]:
    return [
        PairRow(
            prompt=render_question(question(i)),
            chosen=render_plan(plan_json("good", i)),
            rejected=render_plan(plan_json("bad", i)),
            source="correct-over-incorrect" if i % 2 else "artifact",
            question_id=f"q{i}",
            task="synthetic",
        )
        for i in range(offset, offset + n)
    ]
