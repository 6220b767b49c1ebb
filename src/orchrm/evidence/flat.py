"""The flat-prompt judge: the same model with a skill's text pasted into one prompt, no tools.

Skill-RM's own ablation, and the baseline `bench/judge.py` compares the evaluator agent against. Judged in
both orders like the agent, so the two differ only in tools and progressive disclosure.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from ..errors import LLMError, SchemaViolation
from ..llm import LLM, TokenCount
from ._usage import count_completions, count_violation, judgment_fields
from .aggregate import OrderedJudgment, orders_preference, verdict_of
from .judgment import Judgment
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


async def flat_pairwise(
    llm: LLM, skills: list[Skill], question: str, a: str, b: str, *, max_tokens: int = 200
) -> Judgment:
    """One call per order; a reply that breaks the schema is a recorded flag, and with no usable order
    the judgment has status `error`."""
    skill_text = "\n\n".join(s.full_text() for s in skills)
    template = _PROMPT.read_text()
    tokens = TokenCount()

    async def one(x: str, y: str) -> tuple[dict[str, Any] | None, str | None]:
        prompt = template.format(
            skill_text=skill_text, question=question, responses=f"Response A:\n{x}\n\nResponse B:\n{y}"
        )
        try:
            completions = await llm.agenerate(prompt, category="verify", json_schema=_SCHEMA, max_tokens=max_tokens)
        except SchemaViolation as exc:
            count_violation(tokens, exc)
            return None, f"invalid_output: {exc.message[:100]}"
        except LLMError as exc:
            tokens.count(0, 0, False)  # a call all the same, its usage unknown
            return None, f"llm_error: {exc}"
        count_completions(tokens, completions[:1])
        return completions[0].json_value(), None

    (f1, e1), (f2, e2) = await asyncio.gather(one(a, b), one(b, a))
    flags = [e for e in (e1, e2) if e]
    if f1 is None and f2 is None:
        return Judgment(
            mode="pairwise",
            status="error",
            reason="no usable verdict in either order",
            flags=flags,
            **judgment_fields(tokens),
        )
    judged = [OrderedJudgment.of_final(f, swapped=i == 1) for i, f in enumerate((f1, f2)) if f is not None]
    p, conf, bias = orders_preference(judged)
    flags += bias if len(judged) == 2 else ["one_order_only"]
    reason = " | ".join(str(f["reason"]) for f in (f1, f2) if f)
    return Judgment(
        mode="pairwise", verdict=verdict_of(p), confidence=conf, reason=reason, flags=flags, **judgment_fields(tokens)
    )
