"""What in a model's completion is the plan: the one reading that every entry point shares (the orchestrator
at rollout, GRPO's rewards, the TRL / verl / OpenRLHF adapters, `orchrm score` and `orchrm serve`).

A completion is read in this order, and nothing else decides:

1. A chat template that leaked in: the text after the last assistant header (gpt-oss's final channel too, and
   its decoded marker `assistantfinal`), up to the first end-of-turn token (`END_TOKENS`).
2. Reasoning is not the plan: every `<think>`, `<thinking>` and `<reasoning>` block is dropped; an opened
   block that never closes drops the rest of the text (a truncated thought holds no final plan); a closing
   tag with no opening one (templates that open the thought in the prompt) drops everything before it.
3. MAS-Orchestra's `<agent>`/`<edge>` format is read by its own converter (`mas.interop`), where the last
   plan wins (each ends with its `<edge>` block); anything else as JSON, where the last complete plan object
   wins (a draft followed by the final plan scores the final); with neither, a non-empty `<answer>` is the
   orchestrator's direct answer (MAS-Orchestra's form).
4. Text holding a lone surrogate is not a plan: no tokenizer can encode it; nor is a text of more than
   `MAX_PLAN_TEXT_CHARS` (200,000) characters outside reasoning, refused before it is parsed.

Each step is linear in the text. Whatever cannot be read is a `PlanError` naming the rule, never another
exception, so a caller records it as an invalid plan rather than scoring prose. `orchrm import` reads a row's
plan text with this same reader (`mas.interop.read_completion`).
"""

from __future__ import annotations

from .interop import plan_region, read_completion
from .plans import ASSISTANT_HEADER, END_TOKENS, Plan

__all__ = ["ASSISTANT_HEADER", "END_TOKENS", "plan_region", "read_plan"]


def read_plan(completion: str) -> Plan:
    """The plan in a completion, parsed but not yet validated (call `validate_plan`, or use the orchestrator's
    `check_plan`, which does both). Raises `PlanError`."""
    return read_completion(completion).plan
