"""`search`: iterative retrieval over the task's local corpus (BM25): read top-k, search again or answer.

The first search uses the agent's input as the query. Each step the model reads what it has found and
replies either `SEARCH: <query>` or `Answer: <answer>`; after `steps` steps it must answer. A search returns
the best k documents not found yet, so a repeated query brings new evidence instead of the same page again.
"""

from __future__ import annotations

import re

from ...errors import OrchrmError
from .base import Agent, AgentResult, AgentRun, answer_of, prompt, render, system_prompt

_SEARCH = re.compile(r"^\s*\**SEARCH\**\s*:\s*(.+)$", re.IGNORECASE | re.MULTILINE)
_ANSWER = re.compile(r"^\s*\**(?:final\s+)?answer\**\s*:", re.IGNORECASE | re.MULTILINE)


class NoCorpus(OrchrmError):
    """A search agent ran on a task that has no document collection."""


class Search(Agent):
    type = "search"
    defaults = {"steps": 3, "top_k": 2}

    async def run(self, run: AgentRun) -> AgentResult:
        if run.retriever is None:
            raise NoCorpus("the search agent needs a corpus, and this task has none")
        k = int(self.options["top_k"])
        found: dict[str, str] = {}

        def retrieve(query: str) -> None:
            ranked = run.retriever.search(query, k + len(found))  # type: ignore[union-attr]
            hits = [(doc_id, text) for doc_id, text in ranked if doc_id not in found][:k]
            run.steps.append({"query": query, "hits": [doc_id for doc_id, _ in hits]})
            found.update(hits)

        retrieve(run.task_input)
        steps = int(self.options["steps"])
        text = ""
        for step in range(steps):
            last = step == steps - 1
            notes = "\n".join(f"[{doc_id}] {body}" for doc_id, body in found.items())
            template = prompt("search_final.txt" if last else "search_step.txt")
            user = render(template, question=run.question, task=run.task_input, notes=notes)
            [c] = await run.generate(user, system=system_prompt())
            text = c.text
            query, answer = _SEARCH.search(text), _ANSWER.search(text)
            # an answer written after a SEARCH line was guessed before the search ran: search instead
            if last or query is None or (answer is not None and answer.start() < query.start()):
                break
            retrieve(query.group(1).strip().strip('"'))
        return AgentResult(output=text, answer=answer_of(text))
