"""Pilot (issue #27): does a kind-matched worked example make plan *content*, not shape, decide?

    .venv/bin/python bench/pilot_nearest_example.py runs/nearest              # 12 held-out questions x 8 plans
    .venv/bin/python bench/content_headroom.py runs/nearest --label pilot-nearest-example-content-kinds

The orchestration bench's held-out settings (DAG plans under the schema, T = 0.9, limits 320 / 192, agent
context `final`) on `world_qa:kinds=bridge+fanout+arithmetic+compare`, with one change to the orchestrator's
prompt: after the usual system prompt, the user turn first shows the one worked example nearest to the
question (BM25 over the example questions the system prompt shows, plus three for the templates they lack). A
pilot, not a feature: it wraps the public `Orchestrator.messages` (the prompt for one question) for this process
only, so the traces record the prompt the model saw.
"""

from __future__ import annotations

import argparse
import asyncio
import re
from collections.abc import Callable
from pathlib import Path

import bm25s

from orchrm import RunConfig, arollout
from orchrm.llm import Message, open_llm
from orchrm.mas import Orchestrator
from orchrm.tasks import load_task

TASK = "world_qa:kinds=bridge+fanout+arithmetic+compare"
EXTRA = """\
Example question: In which city is the headquarters of the company Ilsa Marrow works for?
Example plan:
{"agents": [{"id": "a1", "type": "search", "input": "Which company does Ilsa Marrow work for?"}, \
{"id": "a2", "type": "search", "input": "In which city is ${a1} headquartered?"}]}

Example question: How many years after Arlen Mills was Dovet Labs founded?
Example plan:
{"agents": [{"id": "a1", "type": "search", "input": "In which year was Arlen Mills founded?"}, \
{"id": "a2", "type": "search", "input": "In which year was Dovet Labs founded?"}, \
{"id": "a3", "type": "python", "input": "Subtract ${a1} from ${a2}."}]}

Example question: In which country was Ilsa Marrow born?
Example plan:
{"agents": [{"id": "a1", "type": "search", "input": "In which city was Ilsa Marrow born?"}, \
{"id": "a2", "type": "search", "input": "In which country is ${a1}?"}]}
"""


def example_bank(system: str) -> list[str]:
    """The worked examples `system` (the orchestrator's prompt) shows, then `EXTRA`'s: for this task's agents
    the prompt files' search and arithmetic examples, the same bank as reading those files."""
    text = system + "\n\n" + EXTRA
    return [b.strip() for b in re.split(r"\n\s*\n", text) if b.strip().startswith("Example question")]


def bank_index(blocks: list[str]) -> bm25s.BM25:
    questions = [b.splitlines()[0].removeprefix("Example question: ") for b in blocks]
    index = bm25s.BM25()
    index.index(bm25s.tokenize(questions, show_progress=False), show_progress=False)
    return index


Messages = Callable[[Orchestrator, str], list[Message]]


def nearest_example_messages(plain: Messages) -> Messages:
    """`plain` (`Orchestrator.messages`) with the user turn led by the worked example nearest to the question."""
    banks: dict[str, tuple[list[str], bm25s.BM25]] = {}  # by system prompt: built once

    def messages(self: Orchestrator, question: str) -> list[Message]:
        if self.system not in banks:
            blocks = example_bank(self.system)
            banks[self.system] = (blocks, bank_index(blocks))
        blocks, index = banks[self.system]
        docs, _ = index.retrieve(bm25s.tokenize([question], show_progress=False), k=1, show_progress=False)
        shown = blocks[int(docs[0][0])]
        user = f"The worked example nearest to this question:\n{shown}\n\nQuestion: {question}\nPlan:"
        return [*plain(self, question)[:-1], Message(role="user", content=user)]

    return messages


async def main(out: Path, questions: int) -> None:
    Orchestrator.messages = nearest_example_messages(Orchestrator.messages)  # type: ignore[method-assign]
    config = RunConfig(
        task=TASK,
        split="test",
        n_questions=questions,
        n_plans=8,
        seed=0,
        degree="dag",
        constrained=True,
        temperature=0.9,
        plan_max_tokens=320,
        agent_max_tokens=192,
        agent_max_samples=3,
        agent_max_rounds=1,
        agent_context="final",
    )
    async with open_llm("local") as llm:
        await arollout(load_task(TASK), llm, out, config, parallel_questions=4)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--questions", type=int, default=12)
    args = ap.parse_args()
    asyncio.run(main(args.out, args.questions))
