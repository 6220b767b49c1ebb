"""The part of a model's completion a plan is read from (steps 1 and 2 of `mas.completion`'s contract), and the
parts dropped on the way, which a caller may need to inspect (MAS-Orchestra reads plan tags in them)."""

from __future__ import annotations

import re
from dataclasses import dataclass

#: End-of-turn and end-of-text tokens of the common chat templates; a completion decoded with its special
#: tokens (OpenRLHF's query, verl with `skip_special_tokens=False`) ends with one.
END_TOKENS = (
    "<|im_end|>",
    "<|endoftext|>",
    "<|eot_id|>",
    "<|end_of_text|>",
    "<|end|>",
    "<|return|>",
    "<end_of_turn>",
    "</s>",
    "<eos>",
)
#: The header that opens an assistant turn (ChatML, Llama 3, Gemma, gpt-oss's final channel): a completion that
#: still holds the chat template starts its plan after the last one.
ASSISTANT_HEADER = re.compile(
    r"<\|im_start\|>assistant[ \t]*\n?"
    r"|<\|start_header_id\|>assistant<\|end_header_id\|>\s*"
    r"|<start_of_turn>model[ \t]*\n?"
    r"|<\|channel\|>final<\|message\|>"
)
#: gpt-oss decoded without its special tokens: `analysis...assistantfinal<answer>`. What precedes the last
#: marker is the analysis channel (MAS-Orchestra's IGSM parser cuts there too).
FINAL_MARKER = re.compile(r"\bassistantfinal", re.IGNORECASE)
_OPEN = re.compile(r"<(think|thinking|reasoning)>", re.IGNORECASE)
_CLOSE = re.compile(r"</(?:think|thinking|reasoning)>", re.IGNORECASE)
_CLOSE_OF = {tag: re.compile(rf"</{tag}>", re.IGNORECASE) for tag in ("think", "thinking", "reasoning")}


@dataclass(frozen=True)
class Region:
    """`text`: what a plan is read from, stripped. `dropped`: the reasoning and gpt-oss analysis left out."""

    text: str
    dropped: str


def _turn(text: str) -> tuple[str, str]:
    dropped = ""
    headers = list(ASSISTANT_HEADER.finditer(text))
    if headers:
        text = text[headers[-1].end() :]
    markers = list(FINAL_MARKER.finditer(text))
    if markers and text[markers[-1].end() :].strip():  # nothing after the marker: the text is read whole
        dropped, text = text[: markers[-1].start()], text[markers[-1].end() :]
    cut = min((i for i in (text.find(t) for t in END_TOKENS) if i >= 0), default=len(text))
    return text[:cut], dropped


def _without_reasoning(text: str) -> tuple[str, str]:
    dropped: list[str] = []
    first_open, first_close = _OPEN.search(text), _CLOSE.search(text)
    if first_close is not None and (first_open is None or first_close.start() < first_open.start()):
        dropped.append(text[: first_close.end()])  # the thought was opened by the prompt's template
        text = text[first_close.end() :]
    kept: list[str] = []
    pos = 0
    while (m := _OPEN.search(text, pos)) is not None:
        kept.append(text[pos : m.start()])
        close = _CLOSE_OF[m.group(1).lower()].search(text, m.end())
        if close is None:
            dropped.append(text[m.start() :])  # a thought cut off: no final plan follows it
            return "".join(kept), "".join(dropped)
        dropped.append(text[m.start() : close.end()])
        pos = close.end()
    kept.append(text[pos:])
    return "".join(kept), "".join(dropped)


def split_region(completion: str) -> Region:
    """The plan's region of a completion: the assistant turn of a leaked chat template (after gpt-oss's final
    marker, if any), reasoning blocks dropped."""
    turn, analysis = _turn(completion)
    kept, reasoning = _without_reasoning(turn)
    return Region(kept.strip(), analysis + reasoning)
