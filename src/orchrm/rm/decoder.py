"""A decoder reward model: a LoRA adapter and a scalar value head over verified base weights.

The folder holds `adapter_config.json` and `adapter_model.safetensors` (the LoRA matrices and, because the
adapter is peft's SEQ_CLS kind, the trained `score` head beside them), the tokenizer and the card; never a
copy of the base. Loading rebuilds the base from the backbone the card names (converted from its GGUF and
verified by sha256, see `backbone.verify_decoder`), then applies the adapter.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .. import safejson
from ..errors import ConfigError, ModelError
from .backbone import verify_decoder

ADAPTER_FILE = "adapter_model.safetensors"
ADAPTER_CONFIG = "adapter_config.json"
HEAD = "score.weight"  # Qwen2/Llama-style sequence classifiers name their value head `score`


def lora_config(r: int) -> Any:
    """TRL's `peft_config` for a decoder: LoRA on every linear layer, the value head trained in full."""
    try:
        from peft import LoraConfig, TaskType
    except ImportError:
        raise ConfigError("a decoder backbone needs peft", hint="pip install 'orchrm[lora]'") from None
    # SEQ_CLS puts the classifier head (`score`) in modules_to_save: trained, and saved with the adapter.
    return LoraConfig(task_type=TaskType.SEQ_CLS, r=r, lora_alpha=2 * r, target_modules="all-linear")


def base_classifier(path: Path, tokenizer: Any) -> Any:
    """The base weights as a one-output sequence classifier (its head new), padding marked by the
    tokenizer's pad token: the head reads each sequence's last token before the padding."""
    from transformers import AutoModelForSequenceClassification

    return AutoModelForSequenceClassification.from_pretrained(
        path, num_labels=1, pad_token_id=tokenizer.pad_token_id, use_safetensors=True, local_files_only=True
    )


def save_adapter(model: Any, folder: Path, backbone: str) -> None:
    """The adapter and the value head as safetensors; the adapter config names the backbone as the card does,
    not this machine's cache folder."""
    for config in model.peft_config.values():
        config.base_model_name_or_path = backbone
    model.save_pretrained(folder, safe_serialization=True, save_embedding_layers=False)
    (folder / "README.md").unlink(missing_ok=True)  # peft's template model card: orchrm.json is the card


def load_decoder(folder: Path, *, backbone: str, sha256: str, model_type: str, tokenizer: Any) -> Any:
    """The verified base with the folder's adapter applied (the folder's files were checked by the caller)."""
    from peft import PeftModel

    base = verify_decoder(backbone, sha256)
    config = safejson.read(base.path / "config.json")
    if config.get("model_type") != model_type:
        raise ModelError(
            f"backbone {backbone} is a {config.get('model_type')!r} model, the reward model's card a {model_type!r} one"
        )
    _check_adapter(folder)
    return PeftModel.from_pretrained(base_classifier(base.path, tokenizer), folder, is_trainable=False)


def _check_adapter(folder: Path) -> None:
    """A LoRA SEQ_CLS adapter whose weights hold the value head: without it the head would be random."""
    from safetensors import safe_open

    try:
        config = safejson.read(folder / ADAPTER_CONFIG)
    except (OSError, safejson.UnsafeJSONError) as exc:
        raise ModelError(f"{folder / ADAPTER_CONFIG} is unreadable: {exc}") from None
    if not isinstance(config, dict) or (config.get("peft_type"), config.get("task_type")) != ("LORA", "SEQ_CLS"):
        raise ModelError(f"{folder / ADAPTER_CONFIG} is not a LoRA sequence-classification adapter")
    with safe_open(str(folder / ADAPTER_FILE), "pt") as f:
        if not any(k.endswith(HEAD) for k in f.keys()):  # noqa: SIM118 (safe_open has no __iter__)
            raise ModelError(
                f"{folder / ADAPTER_FILE} holds no value head ({HEAD})", hint="retrain with `orchrm train-rm`"
            )
