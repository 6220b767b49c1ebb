"""Several completions of one prompt from one request: the request bodies and the replies, per server dialect.

- `llama.cpp` (llama-server): the chat template is applied once by the server (`POST /apply-template`), then
  `POST /completion` with `n_cmpl` samples n completions; the server processes the prompt in one slot and
  copies its state to n - 1 more, seeding child k with `seed + k`. Every completion comes back with its own
  counts, so the ledger is exact per completion. (Its OpenAI route, given `n`, returns the first
  completion's usage only, which would leave the others off the ledger.)
- `openai` (vLLM, SGLang, OpenAI): chat completions with `n`; usage is the request's total, the prompt
  counted once. Per-completion completion tokens are the total split in proportion to each text's length
  (the sum stays exact; said in the README).

Either way the prompt's tokens are billed on the first completion returned and 0 on the others, so summing
completions counts the prompt once per request.
"""

from __future__ import annotations

from typing import Any

from ..errors import MalformedResponse
from .types import Completion, GenerateConfig, Usage

DIALECTS = ("openai", "llama.cpp")


def native_body(
    prompt: str, config: GenerateConfig, seed: int | None, n: int, extra: dict[str, Any] | None
) -> dict[str, Any]:
    """llama-server's `/completion` body for n samples of a templated prompt (sampler defaults as its chat route)."""
    body: dict[str, Any] = {
        "prompt": prompt,
        "n_cmpl": n,
        "n_predict": config.max_tokens,
        "temperature": config.temperature,
        "top_p": config.top_p,
        "cache_prompt": True,
        "return_tokens": False,
    }
    if seed is not None:
        body["seed"] = seed
    if config.stop:
        body["stop"] = list(config.stop)
    if config.json_schema is not None:
        body["json_schema"] = config.json_schema
    return {**body, **(extra or {})}


def parse_native(data: Any, n: int, where: str) -> list[Completion]:
    """llama-server's `/completion` reply (an object for one completion, a list for several) -> completions
    indexed by the server's `index`; an entry with an index outside 0..n-1 or seen twice is refused."""
    items = data if isinstance(data, list) else [data]
    out: dict[int, Completion] = {}
    for item in items:
        try:
            index = int(item.get("index", 0))
            text = item["content"]
            timings = item.get("timings") or {}
            prompt_tokens = int(item.get("tokens_evaluated", 0))
            completion_tokens = int(item.get("tokens_predicted", 0))
            cached = int(timings.get("cache_n", 0))
            stop = str(item.get("stop_type", ""))
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            raise MalformedResponse(
                f"{where}/completion returned an entry that is not a completion ({type(exc).__name__}: {exc})"
            ) from exc
        if not isinstance(text, str) or not 0 <= index < n or index in out:
            raise MalformedResponse(f"{where}/completion returned completion index {index!r} for {n} requested")
        usage = Usage(
            prompt_tokens=max(prompt_tokens, 0),
            completion_tokens=max(completion_tokens, 0),
            cached_prompt_tokens=min(max(cached, 0), max(prompt_tokens, 0)),
        )
        out[index] = Completion(
            text=text, finish_reason="length" if stop == "limit" else "stop", usage=usage, sample_index=index
        )
    return bill_prompt_once(out)


def parse_choices(resp: Any, n: int, where: str, parse_one: Any) -> list[Completion]:
    """An OpenAI chat reply with `n` choices -> completions indexed by each choice's `index`; the request's
    completion tokens split over them in proportion to their text (largest remainder: the sum is exact)."""
    try:
        choices = list(resp.choices)
        usage = resp.usage
        prompt_tokens, completion_tokens = int(usage.prompt_tokens), int(usage.completion_tokens)
        details = getattr(usage, "prompt_tokens_details", None)
        cached = int(getattr(details, "cached_tokens", 0) or 0)
    except (AttributeError, TypeError, ValueError) as exc:
        raise MalformedResponse(f"{where} returned choices without usage ({type(exc).__name__}: {exc})") from exc
    out: dict[int, Completion] = {}
    for position, choice in enumerate(choices):
        index = getattr(choice, "index", position)
        if not isinstance(index, int) or not 0 <= index < n or index in out:
            raise MalformedResponse(f"{where} returned choice index {index!r} for {n} requested")
        out[index] = parse_one(choice).model_copy(update={"sample_index": index})
    shares = split_tokens(completion_tokens, [len(c.text) for _, c in sorted(out.items())])
    for (index, c), share in zip(sorted(out.items()), shares, strict=True):
        out[index] = c.model_copy(
            update={
                "usage": Usage(
                    prompt_tokens=prompt_tokens,
                    completion_tokens=share,
                    cached_prompt_tokens=min(cached, prompt_tokens),
                )
            }
        )
    return bill_prompt_once(out)


def bill_prompt_once(by_index: dict[int, Completion]) -> list[Completion]:
    """Completions in index order, the prompt on the first one only, each knowing how many shared it."""
    ordered = [by_index[i] for i in sorted(by_index)]
    out = []
    for position, c in enumerate(ordered):
        usage = c.usage if position == 0 else c.usage.model_copy(update={"prompt_tokens": 0, "cached_prompt_tokens": 0})
        out.append(c.model_copy(update={"usage": usage, "group": len(ordered)}))
    return out


def split_tokens(total: int, weights: list[int]) -> list[int]:
    """`total` split over `weights` proportionally, as integers summing to `total` (equal shares when all 0)."""
    if not weights:
        return []
    w = [max(x, 0) for x in weights]
    if sum(w) == 0:
        w = [1] * len(w)
    raw = [total * x / sum(w) for x in w]
    shares = [int(r) for r in raw]
    by_remainder = sorted(range(len(w)), key=lambda i: raw[i] - shares[i], reverse=True)
    for i in by_remainder[: total - sum(shares)]:
        shares[i] += 1
    return shares


def consecutive(seeds: list[int | None]) -> bool:
    """Seeds llama-server's `n_cmpl` reproduces: `s, s + 1, ...` (it seeds child k with the parent's + k)."""
    if any(s is None for s in seeds):
        return all(s is None for s in seeds)
    return all(b == a + 1 for a, b in zip(seeds, seeds[1:]))  # type: ignore[operator]
