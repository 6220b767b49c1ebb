"""A tiny random Qwen2-shaped policy (hidden 32, 2 layers, a byte-level tokenizer with a chat template),
the same model written as a GGUF, and a tiny RM on the same tokenizer: GRPO runs on them in seconds on CPU."""

from __future__ import annotations

from pathlib import Path

CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
MERGES = [("a", "b"), ("Ġ", "t")]


def tiny_tokenizer():
    from transformers import Qwen2Tokenizer
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    vocab = {c: i for i, c in enumerate(bytes_to_unicode().values())}
    for a, b in MERGES:
        vocab[a + b] = len(vocab)
    tok = Qwen2Tokenizer(
        vocab=vocab, merges=MERGES, unk_token=None, bos_token=None, eos_token="<|im_end|>", pad_token="<|endoftext|>"
    )
    tok.add_special_tokens({"additional_special_tokens": ["<|im_start|>", "<|im_end|>"]})
    tok.chat_template = CHAT_TEMPLATE
    return tok


def tiny_config(tok, **kw):
    from transformers import Qwen2Config

    base = dict(
        vocab_size=len(tok),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=4096,
        tie_word_embeddings=True,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
    )
    return Qwen2Config(**{**base, **kw})


def tiny_policy(folder: Path, seed: int = 0) -> Path:
    import torch
    from transformers import Qwen2ForCausalLM

    tok = tiny_tokenizer()
    torch.manual_seed(seed)
    Qwen2ForCausalLM(tiny_config(tok)).save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def write_gguf(policy: Path, path: Path) -> Path:
    """The policy folder as a qwen2 GGUF (F32 tensors named as llama.cpp names them, the tokenizer in its
    metadata), as llama.cpp's converter would write it."""
    import gguf
    from safetensors.torch import load_file
    from transformers import AutoConfig, AutoTokenizer

    cfg, tok = AutoConfig.from_pretrained(policy), AutoTokenizer.from_pretrained(policy)
    w = gguf.GGUFWriter(str(path), "qwen2")
    w.add_name("tiny")
    w.add_block_count(cfg.num_hidden_layers)
    w.add_context_length(cfg.max_position_embeddings)
    w.add_embedding_length(cfg.hidden_size)
    w.add_feed_forward_length(cfg.intermediate_size)
    w.add_head_count(cfg.num_attention_heads)
    w.add_head_count_kv(cfg.num_key_value_heads)
    w.add_rope_freq_base(cfg.rope_parameters["rope_theta"])
    w.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    tokens = [t for t, _ in sorted(tok.get_vocab().items(), key=lambda kv: kv[1])]
    special = set(tok.all_special_tokens)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("qwen2")
    w.add_token_list(tokens)
    w.add_token_types([gguf.TokenType.CONTROL if t in special else gguf.TokenType.NORMAL for t in tokens])
    w.add_token_merges([f"{a} {b}" for a, b in MERGES])
    w.add_eos_token_id(tok.eos_token_id)
    w.add_pad_token_id(tok.pad_token_id)
    w.add_chat_template(tok.chat_template)
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.QWEN2, cfg.num_hidden_layers)
    for key, value in load_file(policy / "model.safetensors").items():
        w.add_tensor(names.get_name(key, try_suffixes=(".weight", ".bias")), value.float().numpy())
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def tiny_rm(folder: Path, tasks: list[str], seed: int = 0) -> Path:
    """A random tiny reward model saved as `orchrm train-rm` saves one (card and all)."""
    import torch
    from transformers import Qwen2ForSequenceClassification

    from orchrm.rm import RewardModel, RMConfig
    from orchrm.rm.model import ModelCard

    tok = tiny_tokenizer()
    torch.manual_seed(seed)
    net = Qwen2ForSequenceClassification(tiny_config(tok, num_labels=1))
    card = ModelCard(
        backbone="tiny",
        backbone_sha256="0" * 64,
        model_type="qwen2",
        max_length=256,
        tasks=tasks,
        training_data_sha256="0" * 64,
        config=RMConfig(backbone="tiny"),
    )
    return RewardModel(net, tok, card).save(folder)
