"""The flat-prompt judge: the same model with a skill's text pasted into one prompt, no tools.

Skill-RM's own ablation, and the baseline `bench/judge.py` compares the evaluator agent against. Judged in
both orders like the agent, so the two differ only in tools and progressive disclosure.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from ..errors import LLMError, SchemaViolation
from ..llm import LLM
from .aggregate import OrderedJudgment, combine_orders, swap, verdict_of
from .evaluator import Judgment
from .skills import Skill

_PROMPT = Path(__file__).with_name("prompts") / "flat_judge.txt"
_SCHEMA = {
    "type": "object",
    "properties": {
        "reason": {"type": "string", "maxLength": 400},
        "verdict": {"enum": ["A", "B", "tie"]},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
    },
    "required": ["reason", "verdict", "confidence"],
    "additionalProperties": False,
}


async def flat_pairwise(llm: LLM, skills: list[Skill], question: str, a: str, b: str, *, max_tokens: int = 200) -> Judgment:
    """One call per order; a reply that breaks the schema is a recorded flag, and with no usable order
    the judgment has status `error`."""
    skill_text = "\n\n".join(s.full_text() for s in skills)
    template = _PROMPT.read_text()

    async def one(x: str, y: str) -> tuple[dict | None, int, int, str | None]:
        prompt = template.format(skill_text=skill_text, question=question, responses=f"Response A:\n{x}\n\nResponse B:\n{y}")
        try:
            c = (await llm.agenerate(prompt, category="verify", json_schema=_SCHEMA, max_tokens=max_tokens))[0]
            return c.json_value(), c.usage.prompt_tokens, c.usage.completion_tokens, None
        except SchemaViolation as exc:
            u = exc.usage
            return None, getattr(u, "prompt_tokens", 0), getattr(u, "completion_tokens", 0), f"invalid_output: {exc.message[:100]}"
        except LLMError as exc:
            return None, 0, 0, f"llm_error: {exc}"

    (f1, p1, c1, e1), (f2, p2, c2, e2) = await asyncio.gather(one(a, b), one(b, a))
    flags = [e for e in (e1, e2) if e]
    tokens = {"prompt_tokens": p1 + p2, "completion_tokens": c1 + c2, "llm_calls": 2}
    if f1 is None and f2 is None:
        return Judgment(mode="pairwise", status="error", reason="no usable verdict in either order", flags=flags, **tokens)
    judged = []
    if f1 is not None:
        judged.append(OrderedJudgment(f1["verdict"], float(f1["confidence"])))
    if f2 is not None:
        judged.append(OrderedJudgment(swap(f2["verdict"]), float(f2["confidence"])))
    if len(judged) == 2:
        p, conf, bias = combine_orders(judged[0], judged[1])
        if bias:
            flags.append("position_bias: the two orders disagreed; counted as a tie")
    else:
        flags.append("one_order_only")
        p, conf = {"A": 1.0, "B": 0.0, "tie": 0.5}[judged[0].verdict], judged[0].confidence
    reason = " | ".join(str(f["reason"]) for f in (f1, f2) if f)
    return Judgment(mode="pairwise", verdict=verdict_of(p), confidence=conf, reason=reason, flags=flags, **tokens)
