"""Scripted LLMs for the MAS unit tests: replies chosen by what the prompt asks for."""

from __future__ import annotations

from orchrm.llm import LLM
from orchrm.llm.scripted import ScriptedBackend


def by_prompt(rules: dict[str, str], default: str = "Answer: 0"):
    """A reply function: the first rule whose key appears in the last user message wins."""

    def reply(messages, config):
        text = messages[-1].content
        for key, value in rules.items():
            if key in text:
                return value
        return default

    return reply


def scripted_llm(*replies, delay_s: float = 0.0, concurrency: int = 4) -> LLM:
    return LLM(ScriptedBackend(list(replies), delay_s=delay_s, concurrency=concurrency))


class FakeCorpus:
    def __init__(self, docs: dict[str, str]):
        self.docs = docs
        self.queries: list[str] = []

    def search(self, query: str, k: int):
        self.queries.append(query)
        words = set(query.lower().split())
        scored = sorted(self.docs.items(), key=lambda kv: -len(words & set(kv[1].lower().split())))
        return [(i, t) for i, t in scored[:k] if words & set(t.lower().split())]
