"""`search`: iterative retrieval over the task's local corpus (BM25): read top-k, search again or answer.

The agent first writes its own keywords for its sub-task (falling back to the sub-task text when it writes
none). Each step the model reads what it has found and
replies either `SEARCH: <query>` or `Answer: <answer>`; after `steps` steps it must answer. A search returns
the best k documents not found yet, so a repeated query brings new evidence instead of the same page again.
"""

from __future__ import annotations

import re

from ...errors import OrchrmError
from .base import Agent, AgentResult, AgentRun, answer_of, context_block, prompt, render, system_prompt

_SEARCH = re.compile(r"^\s*\**SEARCH\**\s*:\s*(.+)$", re.IGNORECASE | re.MULTILINE)
_ANSWER = re.compile(r"^\s*\**(?:final\s+)?answer\**\s*:", re.IGNORECASE | re.MULTILINE)


QUERY_TOKENS = 32


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

        retrieve(await self._first_query(run))
        steps = int(self.options["steps"])
        text = ""
        for step in range(steps):
            last = step == steps - 1
            notes = "\n".join(f"[{doc_id}] {body}" for doc_id, body in found.items())
            template = prompt("search_final.txt" if last else "search_step.txt")
            user = render(template, context=context_block(run), task=run.task_input, notes=notes)
            [c] = await run.generate(user, system=system_prompt())
            text = c.text
            query, answer = _SEARCH.search(text), _ANSWER.search(text)
            # an answer written after a SEARCH line was guessed before the search ran: search instead
            if last or query is None or (answer is not None and answer.start() < query.start()):
                break
            retrieve(query.group(1).strip().strip('"'))
        return AgentResult(output=text, answer=answer_of(text))

    async def _first_query(self, run: AgentRun) -> str:
        """The agent's own keywords for its sub-task: the sub-task sentence verbatim ranks documents that
        share its function words ("works", "city") above the entity it names."""
        [c] = await run.generate(render(prompt("search_query.txt"), task=run.task_input), max_tokens=QUERY_TOKENS)
        m = _SEARCH.search(c.text)
        query = m.group(1).strip().strip('"') if m else ""
        if not query:
            run.steps.append({"query_fallback": "no SEARCH line; searching the sub-task text"})
            return run.task_input
        return query
