"""The network and tokenizer files of an exported reward model, rewritten so that plain transformers score as
orchrm does (`export.py` says why each change is needed): a decoder's LoRA merged into its base, an encoder's
token-type rows made segment-blind, and a tokenizer whose post-processor and truncation match `encoding.encode`."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import safejson
from ..errors import ModelError

if TYPE_CHECKING:
    from .model import RewardModel

#: What the exported tokenizer hands the model: never `token_type_ids` (orchrm's scores fed none).
MODEL_INPUTS = ["input_ids", "attention_mask"]


def plain_classifier(rm: RewardModel, decoder: bool) -> Any:
    """A plain `*ForSequenceClassification` copy of the model (the one in `rm` is left as it is)."""
    net = copy.deepcopy(rm.model).cpu()
    if decoder:
        net = net.merge_and_unload()  # LoRA into the base; the trained `score` head replaces the wrapper
        if net.config.pad_token_id is None:  # pooling finds each sequence's last token by the padding after it
            net.config.pad_token_id = rm.tokenizer.pad_token_id
    else:
        import torch

        for name, module in net.named_modules():
            if name.endswith("token_type_embeddings") and isinstance(module, torch.nn.Embedding):
                with torch.no_grad():  # orchrm's scores used segment 0 throughout: any segment id now means the same
                    module.weight[1:] = module.weight[0]
    net.config.architectures = [type(net).__name__]
    return net.eval()


def plain_tokenizer(folder: Path, rm: RewardModel, decoder: bool) -> None:
    """Edit the saved tokenizer files so that the plain tokenizer encodes as `encoding.encode` does."""
    config_path, tok_path = folder / "tokenizer_config.json", folder / "tokenizer.json"
    config = safejson.read(config_path)
    config.update(model_input_names=MODEL_INPUTS, model_max_length=rm.card.max_length)
    config.pop("max_length", None)  # a truncation setting saved from orchrm's own calls, not the model's limit
    config_path.write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n")
    if not tok_path.is_file():
        raise ModelError(
            f"the reward model's tokenizer ({type(rm.tokenizer).__name__}) has no tokenizer.json to export"
        )
    tok = safejson.read(tok_path)
    if decoder:
        eos, eos_id = rm.tokenizer.eos_token, rm.tokenizer.eos_token_id
        tok["post_processor"] = {
            "type": "TemplateProcessing",
            "single": [{"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": eos, "type_id": 0}}],
            "pair": [
                {"Sequence": {"id": "A", "type_id": 0}},
                {"Sequence": {"id": "B", "type_id": 0}},
                {"SpecialToken": {"id": eos, "type_id": 0}},
            ],
            "special_tokens": {eos: {"id": eos, "ids": [eos_id], "tokens": [eos]}},
        }
    else:
        tok["post_processor"] = _segment_zero(tok.get("post_processor"))
    tok["padding"] = None
    tok["truncation"] = {
        "direction": "Right",
        "max_length": rm.card.max_length,
        "strategy": "LongestFirst",
        "stride": 0,
    }
    tok_path.write_text(json.dumps(tok, ensure_ascii=False))


def _segment_zero(processor: Any) -> Any:
    """The post-processor with every segment id 0 (what orchrm feeds an encoder); BERT's own processor as the
    equivalent template."""
    if not isinstance(processor, dict):
        return processor
    if processor.get("type") == "BertProcessing":
        (sep, sep_id), (cls, cls_id) = processor["sep"], processor["cls"]
        return {
            "type": "TemplateProcessing",
            "single": [
                {"SpecialToken": {"id": cls, "type_id": 0}},
                {"Sequence": {"id": "A", "type_id": 0}},
                {"SpecialToken": {"id": sep, "type_id": 0}},
            ],
            "pair": [
                {"SpecialToken": {"id": cls, "type_id": 0}},
                {"Sequence": {"id": "A", "type_id": 0}},
                {"SpecialToken": {"id": sep, "type_id": 0}},
                {"Sequence": {"id": "B", "type_id": 0}},
                {"SpecialToken": {"id": sep, "type_id": 0}},
            ],
            "special_tokens": {
                cls: {"id": cls, "ids": [cls_id], "tokens": [cls]},
                sep: {"id": sep, "ids": [sep_id], "tokens": [sep]},
            },
        }
    if processor.get("type") == "TemplateProcessing":
        for piece in processor.get("pair", []):
            for value in piece.values():
                value["type_id"] = 0
    if processor.get("type") == "Sequence":
        processor["processors"] = [_segment_zero(p) for p in processor.get("processors", [])]
    return processor
