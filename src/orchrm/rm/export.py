"""A reward model as a plain transformers sequence-classification folder that transformers scores as orchrm does.

An orchrm model folder loads only through orchrm: its scores depend on orchrm's rendering of (question, plan),
on `token_type_ids` being left out (an encoder reads the plan as segment 0), and a decoder's on a LoRA adapter
over a base the card names and on the end-of-text token orchrm appends. `export_reward_model` writes a folder
that `AutoTokenizer.from_pretrained(DIR)` and `AutoModelForSequenceClassification.from_pretrained(DIR)` alone
score with orchrm's scores, given the texts written in its `orchrm_template.json` and `README.md`:

- encoder: the network as trained; every row of its token-type embeddings set to row 0 (the one orchrm's
  scores used), the tokenizer's pair template marking both segments 0 and `model_input_names` without
  `token_type_ids`, so a stack that passes segment ids (text-embeddings-inference, vLLM) scores the same;
- decoder: the LoRA adapter merged into the base and the value head as the `score` layer of a
  `*ForSequenceClassification` (pooling the last token before the padding, as orchrm scores), the tokenizer's
  post-processor appending the end-of-text token after truncation, as `encoding.encode` does.

Both: `model_max_length` is the card's `max_length`, so `truncation=True` truncates as orchrm does (the
`tokenizers` library reads it from tokenizer.json's truncation). Only plain transformers is tested: a serving
stack that ignores these files' truncation, applies a sigmoid, or is fed chat-formatted text (a framework's
model-RM path) gives another number than orchrm's reward function (the README says which). Before the
folder is swapped in, it is loaded back the plain way and must reproduce `RewardModel` on example plans (also
through the `tokenizers` library alone); the examples and their scores are written in the template.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..atomic import replacing_dir
from ..errors import ConfigError, ModelError
from ..folders import STAMP_FILE, folder_kind
from ..llm.weights import quiet_transformers
from ..pairs.render import render_question
from ..version import __version__
from .model import CARD_FILE, RewardModel, normal_modes
from .plain_model import plain_classifier, plain_tokenizer

TEMPLATE_FILE = "orchrm_template.json"
EXPORT_FORMAT = "orchrm-reward-model-export"
EXPORT_VERSION = 1
#: Inputs orchrm's scoring feeds the network: never `token_type_ids`.

#: The example plans the export is checked on and its template shows: a DAG, a single agent, raw text, and one
#: long enough to be truncated at any usual `max_length`.
_EXAMPLE_QUESTION = "What is 17 + 25?  Give   the number only."


def _agents_plan(n: int, words: int) -> str:
    agents = [
        {
            "id": f"a{i}",
            "type": "cot" if i % 2 else "self_consistency",
            "input": f"Step {i}: " + "add the parts " * words,
        }
        for i in range(n)
    ]
    edges = [{"from": f"a{i}", "to": f"a{i + 1}"} for i in range(n - 1)]
    return json.dumps({"agents": agents, "edges": edges})


EXAMPLE_PLANS = (
    _agents_plan(2, 3),
    _agents_plan(1, 1),
    "The answer is 42.",
    _agents_plan(8, 60),
)


def _text(question: str, decoder: bool) -> str:
    """The first text of the pair: the rendered question (a decoder's ends in a newline, `encoding.encode`)."""
    return render_question(question) + ("\n" if decoder else "")


def export_reward_model(rm: RewardModel, out: Path, *, replace: bool = False) -> Path:
    """Write `rm` to `out` as a plain transformers folder (see the module's docstring); returns `out`.

    `out` must not exist (an empty folder passes) unless `replace`: then it is replaced whole, built beside
    and swapped in. The model's own folder, a folder holding it and orchrm's other folders are never replaced."""
    _check_target(out, replace=replace, source=rm.path)
    decoder = rm.card.backbone_kind == "decoder"
    with replacing_dir(out) as tmp:
        with quiet_transformers():
            net = plain_classifier(rm, decoder)
            net.save_pretrained(tmp, safe_serialization=True)
            rm.tokenizer.save_pretrained(tmp)
        plain_tokenizer(tmp, rm, decoder)
        examples, delta = _check_plain(rm, tmp, decoder)
        template = _template(rm, decoder, examples, delta)
        (tmp / TEMPLATE_FILE).write_text(json.dumps(template, indent=2, ensure_ascii=False) + "\n")
        (tmp / "README.md").write_text(_readme(template))
        normal_modes(tmp)
    return out


def _check_target(out: Path, *, replace: bool, source: Path | None) -> None:
    if source is not None:
        src, dest = source.resolve(), out.resolve()
        if dest == src or dest in src.parents or src in dest.parents:
            raise ConfigError(f"--out {out} is the reward model's folder, inside it or above it; export elsewhere")
    if not (out.exists() or out.is_symlink()):
        return
    if not out.is_dir() or out.is_symlink():
        raise ConfigError(f"{out} exists and is not a folder; refusing to export there")
    if not any(out.iterdir()):
        return
    if not replace:
        raise ConfigError(
            f"{out} already exists; refusing to export into it", hint="pass --replace to replace it whole"
        )
    kind = folder_kind(out) if (out / STAMP_FILE).is_file() else None
    if kind is not None or (out / CARD_FILE).is_file():
        raise ConfigError(
            f"{out} is an orchrm {kind or 'reward-model'} folder, not an export; refusing to replace it",
            hint="export to a new folder",
        )


def plain_score(model: Any, tokenizer: Any, pairs: list[tuple[str, str]]) -> list[float]:
    """Scores the documented way: `tokenizer(text, text_pair, truncation=True)`, logits[:, 0], one at a time."""
    import torch

    out = []
    with torch.inference_mode():
        for text, text_pair in pairs:
            inputs = tokenizer(text, text_pair, truncation=True, return_tensors="pt")
            out.append(float(model(**inputs).logits[0, 0]))
    return out


def _check_plain(rm: RewardModel, folder: Path, decoder: bool) -> tuple[list[dict[str, Any]], float]:
    """Load `folder` the plain way and refuse the export unless it encodes and scores the examples as `rm` does."""
    from tokenizers import Tokenizer
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from .encoding import encode

    with quiet_transformers():
        tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
        model = AutoModelForSequenceClassification.from_pretrained(folder, local_files_only=True).eval()
    raw = Tokenizer.from_file(str(folder / "tokenizer.json"))
    pairs = [(_text(_EXAMPLE_QUESTION, decoder), rm.render(p)) for p in EXAMPLE_PLANS]
    for text, text_pair in pairs:
        want = encode(
            rm.tokenizer, text.removesuffix("\n") if decoder else text, text_pair, rm.card.max_length, decoder=decoder
        )
        got = tokenizer(text, text_pair, truncation=True)
        if list(got["input_ids"]) != want or raw.encode(text, text_pair).ids != want or "token_type_ids" in got:
            raise ModelError(
                f"the exported tokenizer ({type(tokenizer).__name__}) does not encode as orchrm does; not exported"
            )
    theirs = plain_score(model, tokenizer, pairs)
    ours = rm.score_rendered([(t.removesuffix("\n") if decoder else t, p) for t, p in pairs], batch_size=1)
    delta = max(abs(a - b) for a, b in zip(theirs, ours, strict=True))
    fp32 = next(model.parameters()).dtype.is_floating_point and next(model.parameters()).element_size() == 4
    if delta > (1e-3 if fp32 else 5e-2) * (1 + max(abs(s) for s in ours)):
        raise ModelError(f"the exported model scores up to {delta:.2g} away from the reward model's; not exported")
    examples = [
        {"question": _EXAMPLE_QUESTION, "plan": plan, "text": text, "text_pair": text_pair, "score": score}
        for plan, (text, text_pair), score in zip(EXAMPLE_PLANS, pairs, ours, strict=True)
    ]
    return examples, delta


PLAN_RENDERING = (
    "orchrm.pairs.render.render_plan (rendering v{v}): a parsed plan is a header line 'plan: N agents, final: "
    "SINKS' (comma-joined ids of the agents nothing reads) then one line per agent in topological order "
    "'- ID [TYPE k=v ...] <- UPSTREAM, ...: INPUT' (options sorted by key, values as compact JSON; the arrow only "
    "for an agent with upstream agents), lines joined by '\\n'; a plan with no agents is 'plan: direct answer: "
    "ANSWER'; text holding no plan is 'plan (unparsed): ' + its first 800 characters. Whitespace runs in inputs "
    "and answers collapse to one space."
)
#: What rendering v2 adds to v1's description.
INLINED = (
    " In an agent's INPUT each '${ID}' naming an agent of the plan is written '${ID=THAT AGENT'S INPUT}' (its "
    "whitespace collapsed, its first 80 characters then '...' when longer; its own references left as they are)."
)


def _template(rm: RewardModel, decoder: bool, examples: list[dict[str, Any]], delta: float) -> dict[str, Any]:
    card = rm.card
    return {
        "format": EXPORT_FORMAT,
        "version": EXPORT_VERSION,
        "kind": card.backbone_kind,
        "text": "question: {question}" + ("\n" if decoder else ""),
        "text_pair": "{plan}",
        "question": "the question with every whitespace run collapsed to one space "
        "(orchrm.pairs.render.render_question)",
        "plan": PLAN_RENDERING.format(v=card.render_version) + (INLINED if card.render_version >= 2 else ""),
        "tokenize": {"truncation": "longest_first", "max_length": card.max_length, "add_special_tokens": True},
        "score": "logits[:, 0], higher is a better plan (a Bradley-Terry reward: differences are log-odds)",
        "render_version": card.render_version,
        **({"pooling": _pooling(rm)} if decoder else {}),
        "source": {
            "orchrm_version": __version__,
            "exported_by": f"orchrm {__version__}",
            "backbone": card.backbone,
            "backbone_sha256": card.backbone_sha256,
            "weights_sha256": card.weights_sha256,
            "training_data_sha256": card.training_data_sha256,
            "tasks": card.tasks,
            "metrics": {k: card.metrics[k] for k in ("val_accuracy", "best_epoch") if k in card.metrics},
        },
        "check": {"examples": len(examples), "max_abs_diff": delta},
        "examples": examples,
    }


def _pooling(rm: RewardModel) -> str:
    """How a decoder's value head finds the token it reads, and where a server may differ."""
    tok = rm.tokenizer
    said = (
        f"the value head reads the last token that is not padding (pad_token_id {tok.pad_token_id}): the "
        f"{tok.eos_token} that the tokenizer appends after truncation"
    )
    if tok.pad_token_id == tok.eos_token_id:
        said += (
            f"; but padding is {tok.eos_token} too, so transformers (and orchrm) read the token before it, and a "
            "server that pools the very last token (vLLM's LAST pooling) scores differently"
        )
    return said


def _readme(template: dict[str, Any]) -> str:
    decoder = template["kind"] == "decoder"
    text = 'f"question: {question}\\n"' if decoder else 'f"question: {question}"'
    example = template["examples"][0]
    tasks = ", ".join(template["source"]["tasks"]) or "unrecorded tasks"
    return f"""---
library_name: transformers
pipeline_tag: text-classification
tags: [reward-model, orchrm]
---

# orchrm reward model (exported)

A Bradley-Terry reward model that scores a multi-agent orchestration plan for a question, trained on
{tasks} with orchrm {template["source"]["orchrm_version"]} ({template["kind"]} backbone
`{template["source"]["backbone"]}`). Higher is a better plan. Plain transformers reproduces orchrm's score:

```python
from transformers import AutoModelForSequenceClassification, AutoTokenizer

tok = AutoTokenizer.from_pretrained(DIR)
model = AutoModelForSequenceClassification.from_pretrained(DIR)
score = model(**tok(text, text_pair, truncation=True, return_tensors="pt")).logits[0, 0].item()
```

The score is the raw logit; orchrm's reward is its sigmoid by default. A stack that applies a sigmoid, drops the
truncation below, or is fed chat-formatted prompt+response text instead of this pair gives another number.

with `text = {text}` (the question's whitespace runs collapsed to one space) and `text_pair` the plan as
orchrm renders it (`orchrm.pairs.render.render_plan`, rendering v{template["render_version"]}; described in
`{TEMPLATE_FILE}`). For example:

```python
text = {json.dumps(example["text"], ensure_ascii=False)}
text_pair = {json.dumps(example["text_pair"], ensure_ascii=False)}
# score == {example["score"]:.6g}
```

The tokenizer truncates to {template["tokenize"]["max_length"]} tokens (longest side first) and feeds no
`token_type_ids`{"; it appends the end-of-text token the value head reads" if decoder else ""}. `{TEMPLATE_FILE}`
holds the format, the source model's hashes and every checked example with its score.
"""
