"""What in a model's completion is the plan: the one reading that every entry point shares (the orchestrator
at rollout, GRPO's rewards, the TRL / verl / OpenRLHF adapters, `orchrm score` and `orchrm serve`).

A completion is read in this order, and nothing else decides:

1. A chat template that leaked in: the text after the last assistant header, up to the first end-of-turn
   token (`END_TOKENS`).
2. Reasoning is not the plan: every `<think>`, `<thinking>` and `<reasoning>` block is dropped; an opened
   block that never closes drops the rest of the text (a truncated thought holds no final plan); a closing
   tag with no opening one (templates that open the thought in the prompt) drops everything before it.
3. MAS-Orchestra's `<agent>`/`<edge>` format is read by its own converter (`mas.interop`); anything else as
   JSON, where the last complete plan object wins (a draft followed by the final plan scores the final).
4. Text holding a lone surrogate is not a plan: no tokenizer can encode it; nor is a text of more than
   `MAX_PLAN_TEXT_CHARS` (200,000) characters outside reasoning, refused before it is parsed.

Each step is linear in the text. Whatever cannot be read is a `PlanError` naming the rule, never another
exception, so a caller records it as an invalid plan rather than scoring prose.
"""

from __future__ import annotations

import re

from .interop import looks_like_mas_orchestra, parse_mas_orchestra
from .plans import MAX_PLAN_TEXT_CHARS, Plan, PlanError, parse_plan

__all__ = ["END_TOKENS", "plan_region", "read_plan"]

#: End-of-turn and end-of-text tokens of the common chat templates; a completion decoded with its special
#: tokens (OpenRLHF's query, verl with `skip_special_tokens=False`) ends with one.
END_TOKENS = (
    "<|im_end|>",
    "<|endoftext|>",
    "<|eot_id|>",
    "<|end_of_text|>",
    "<|end|>",
    "<end_of_turn>",
    "</s>",
    "<eos>",
)
#: The header that opens an assistant turn (ChatML, Llama 3, Gemma): a completion that still holds the chat
#: template starts its plan after the last one.
ASSISTANT_HEADER = re.compile(
    r"<\|im_start\|>assistant[ \t]*\n?"
    r"|<\|start_header_id\|>assistant<\|end_header_id\|>\s*"
    r"|<start_of_turn>model[ \t]*\n?"
)
_REASONING_TAGS = ("think", "thinking", "reasoning")
_OPEN = re.compile(r"<(think|thinking|reasoning)>", re.IGNORECASE)
_CLOSE = re.compile(r"</(?:think|thinking|reasoning)>", re.IGNORECASE)
_CLOSE_OF = {tag: re.compile(rf"</{tag}>", re.IGNORECASE) for tag in _REASONING_TAGS}


def _turn(text: str) -> str:
    headers = list(ASSISTANT_HEADER.finditer(text))
    if headers:
        text = text[headers[-1].end() :]
    cut = min((i for i in (text.find(t) for t in END_TOKENS) if i >= 0), default=len(text))
    return text[:cut]


def _without_reasoning(text: str) -> str:
    first_open, first_close = _OPEN.search(text), _CLOSE.search(text)
    if first_close is not None and (first_open is None or first_close.start() < first_open.start()):
        text = text[first_close.end() :]  # the thought was opened by the prompt's template
    kept: list[str] = []
    pos = 0
    while (m := _OPEN.search(text, pos)) is not None:
        kept.append(text[pos : m.start()])
        close = _CLOSE_OF[m.group(1).lower()].search(text, m.end())
        if close is None:
            return "".join(kept)  # a thought cut off: no final plan follows it
        pos = close.end()
    kept.append(text[pos:])
    return "".join(kept)


def plan_region(completion: str) -> str:
    """The part of a completion a plan is read from (steps 1 and 2 above), stripped. Empty when nothing is left."""
    return _without_reasoning(_turn(completion)).strip()


def read_plan(completion: str) -> Plan:
    """The plan in a completion, parsed but not yet validated (call `validate_plan`, or use the orchestrator's
    `check_plan`, which does both). Raises `PlanError`."""
    if not isinstance(completion, str):
        raise PlanError("parse", f"the completion is {type(completion).__name__}, not text")
    region = plan_region(completion)
    if not region:
        raise PlanError("parse", "the completion holds no text outside reasoning blocks")
    if len(region) > MAX_PLAN_TEXT_CHARS:  # refused before any parsing: the time stays bounded whatever it holds
        raise PlanError(
            "too_large", f"{len(region)} characters outside reasoning blocks, at most {MAX_PLAN_TEXT_CHARS}"
        )
    try:
        region.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise PlanError("encoding", f"the completion holds a lone surrogate at character {exc.start}") from None
    if looks_like_mas_orchestra(region):
        return parse_mas_orchestra(region)
    return parse_plan(region)
