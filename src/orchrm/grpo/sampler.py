"""Where GRPO's plans come from: TRL's own `generate`, TRL's vLLM mode, or llama-server.

- `trl`: TRL samples with transformers `generate` on the model being trained (slow on a CPU).
- `vllm`: TRL's vLLM mode, colocated with training (GPUs with vllm installed); TRL syncs the weights.
- `server`: llama-server samples, through TRL's `rollout_func` hook. Before each generation that follows an
  optimiser step, the current LoRA adapter is saved (peft safetensors), turned into a GGUF adapter by
  llama.cpp's own `convert_lora_to_gguf.py` (from the sdist the server is built from) and the server is
  restarted with it, so every plan comes from the policy being trained. The server runs the policy's GGUF,
  and the trainable weights are that same GGUF dequantised (weights.py), so both sides hold one model.
  Prompts go in as token ids, rendered by the policy tokenizer's chat template as TRL renders them, and
  completions come back as token ids: what is trained on is exactly what was sampled. Sampling is plain
  temperature then top-p (no top-k, min-p or repetition penalty), as TRL's defaults sample.
- `auto`: on a GPU, vllm if installed, else trl (generate on the GPU; our llama-server build is CPU-only);
  on a CPU, server when the policy came from a GGUF and the run has one process, else trl.

Under several processes (`accelerate launch`) `trl` and `vllm` sample each process's shard; `server` is
refused: every process would start its own llama-server on the same cores, convert its adapter into the
one `sampler/` folder, and seed its plans as the others do.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import KW_ONLY, dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from ..errors import ConfigError, ServerError
from ..llm.weights import PolicyWeights
from .config import SamplerKind
from .data import chat_ids
from .diverse import DiverseDraws
from .timing import StepClock

SamplerChoice = Literal["auto", "trl", "server", "vllm"]
SAMPLER_DIR = "sampler"
MAX_SLOTS = 16  # llama-server slots for plan sampling: a whole batch decodes together, up to this many


def on_gpu() -> bool:
    import torch

    return bool(torch.cuda.is_available())


def vllm_available() -> bool:
    import importlib.util

    return on_gpu() and importlib.util.find_spec("vllm") is not None


def resolve_sampler(choice: SamplerChoice, weights: PolicyWeights, processes: int = 1) -> SamplerKind:
    """The sampler a run of `processes` processes uses: `choice`, or for `auto` the fastest this machine
    and policy allow."""
    if choice == "auto":
        if on_gpu():
            return "vllm" if vllm_available() else "trl"
        return "server" if weights.gguf is not None and processes == 1 else "trl"
    check_processes(choice, processes)
    if choice == "server" and weights.gguf is None:
        raise ConfigError(
            f"--sampler server needs a GGUF policy; {weights.path} is a transformers folder", hint="use --sampler trl"
        )
    if choice == "vllm" and not vllm_available():
        raise ConfigError(
            "--sampler vllm needs a CUDA GPU and the vllm package", hint="pip install vllm, or use --sampler server"
        )
    return choice


def check_processes(sampler: SamplerKind, processes: int, diverse_draws: int = 1) -> None:
    """Refuse a sampler that cannot serve the run: `server` under several processes; a diverse group (chosen
    from extra draws, diverse.py) under any sampler but `server`."""
    if sampler == "server" and processes > 1:
        raise ConfigError(
            f"--sampler server samples in one process; this run has {processes}",
            hint="use --sampler trl, or vllm on GPUs",
        )
    if diverse_draws > 1 and sampler != "server":
        raise ConfigError(
            f"--diverse-draws needs the server sampler (this run samples with {sampler})",
            hint="use --sampler server, or --diverse-draws 1",
        )


@dataclass(frozen=True)
class Sampling:
    max_tokens: int
    temperature: float
    top_p: float


class PlanEngine(Protocol):
    """Samples completions with a given LoRA adapter on top of the base policy."""

    backend: str

    def load_adapter(self, peft_dir: Path | None) -> None:
        """Sample from here on with the peft adapter in `peft_dir` (None: the bare base model)."""

    def complete(self, prompt_ids: list[list[int]], sampling: Sampling, seeds: list[int]) -> list[list[int]]:
        """One completion's token ids per prompt (ending with the end-of-turn token unless cut at max_tokens)."""

    def close(self) -> None: ...


@dataclass(eq=False, repr=False)  # TRL takes it as a function: equal only to itself, with a plain repr
class ServerRollout:
    """TRL's `rollout_func`: plans sampled by a `PlanEngine` that follows the trainer's current adapter."""

    engine: PlanEngine
    tokenizer: Any
    sampling: Sampling
    work: Path
    _: KW_ONLY
    seed: int = 0
    clock: StepClock | None = None
    diverse: DiverseDraws | None = None
    synced_step: int | None = field(default=None, init=False)  # the trainer step whose adapter the engine holds

    def __call__(self, prompts: list, trainer: Any) -> dict[str, Any]:
        step = int(trainer.state.global_step)
        if step != self.synced_step:
            start = time.perf_counter()
            # At step 0 of a fresh run the adapter is still the identity (LoRA B starts at zero).
            self.engine.load_adapter(self.export_adapter(trainer) if step > 0 else None)
            self.synced_step = step
            if self.clock is not None:
                self.clock.add_sync(time.perf_counter() - start)
        prompt_ids = [chat_ids(self.tokenizer, p) for p in prompts]
        # Distinct seeds from the run's seed, the step and the sample's index (a step generates once), so a
        # resumed run draws what the uninterrupted one would have.
        draws = self.diverse.draws if self.diverse is not None else 1
        base = (self.seed * 1_000_003 + step * 10_007) % (2**31 - len(prompts) * draws)
        seeds = [base + i * draws for i in range(len(prompts))]  # room for each plan's extra draws
        if self.diverse is None:
            return {
                "prompt_ids": prompt_ids,
                "completion_ids": self.engine.complete(prompt_ids, self.sampling, seeds),
                "logprobs": None,
            }
        complete = lambda ids, s: self.engine.complete(ids, self.sampling, s)  # noqa: E731
        completion_ids, unkept = self.diverse.sample(prompt_ids, seeds, complete, step)
        # TRL hands extra columns to the reward functions, where `Accounted` bills the plans drawn and not kept.
        return {"prompt_ids": prompt_ids, "completion_ids": completion_ids, "logprobs": None, "unkept_tokens": unkept}

    def export_adapter(self, trainer: Any) -> Path:
        """The trainer's current LoRA adapter as a peft folder (safetensors), replaced in place."""
        folder = self.work / "peft"
        model = trainer.accelerator.unwrap_model(trainer.model)
        model.save_pretrained(folder, safe_serialization=True)
        return folder


class LlamaServerEngine:
    """A managed llama-server on the policy's GGUF; adapters converted with llama.cpp's own script."""

    backend = "llama-server"

    def __init__(
        self, gguf: Path, base_config: Path, work: Path, *, parallel: int, ctx_per_slot: int, timeout_s: float = 1800.0
    ) -> None:
        import httpx

        from ..llm.models import ModelFile, sha256_file
        from ..llm.server import LlamaServer, ServerConfig
        from ..llm.server_build import ensure_llama_server

        self.base_config = base_config
        self.work = work
        model = ModelFile(name=gguf.stem, path=gguf, sha256=sha256_file(gguf))
        self.server = LlamaServer(
            ensure_llama_server(), model, ServerConfig(parallel=parallel, ctx_per_slot=ctx_per_slot)
        )
        self.parallel = parallel
        self._client = httpx.Client(timeout=timeout_s)

    def load_adapter(self, peft_dir: Path | None) -> None:
        if peft_dir is None:
            if self.server.lora is not None or not self.server.alive():
                self.server.restart(lora=None)
            return
        self.server.restart(lora=self.convert(peft_dir))

    def convert(self, peft_dir: Path) -> Path:
        """`peft_dir`'s adapter as a GGUF adapter at `work/adapter.gguf`."""
        from .adapter import convert_lora

        return convert_lora(peft_dir, self.base_config, self.work / "adapter.gguf")

    def complete(self, prompt_ids: list[list[int]], sampling: Sampling, seeds: list[int]) -> list[list[int]]:
        """Identical prompts (a GRPO group) go as one request for `n_cmpl` completions: the server reads the
        prompt once and copies its cache to the other slots, seeding them `seed`, `seed + 1`, ..."""
        url = self.server.ensure_running().removesuffix("/v1") + "/completion"
        # Explicit scales: a request with an empty `lora` list is served with whatever scale its slot last had.
        scale = [{"id": 0, "scale": 1.0}] if self.server.lora is not None else []
        groups: dict[tuple[int, ...], list[int]] = {}
        for i, ids in enumerate(prompt_ids):
            groups.setdefault(tuple(ids), []).append(i)
        if max(len(g) for g in groups.values()) > self.parallel:
            raise ConfigError(
                f"a group of {max(len(g) for g in groups.values())} plans needs as many server slots ({self.parallel})"
            )

        def one(ids: tuple[int, ...], where: list[int]) -> list[list[int]]:
            body = {
                "prompt": list(ids),
                "n_cmpl": len(where),
                "n_predict": sampling.max_tokens,
                "temperature": sampling.temperature,
                "top_p": sampling.top_p,
                "top_k": 0,
                "min_p": 0.0,
                "repeat_penalty": 1.0,
                "samplers": ["temperature", "top_p"],
                "seed": seeds[where[0]],
                "return_tokens": True,
                "cache_prompt": True,
                "lora": scale,
            }
            r = self._client.post(url, json=body)
            if r.status_code != 200:
                raise ServerError(f"llama-server answered {r.status_code} to a plan request", detail=r.text[:2000])
            data = r.json()
            results = sorted(data if isinstance(data, list) else [data], key=lambda x: int(x.get("index", 0)))
            # The end-of-generation token that stopped a plan is in `tokens`, as TRL keeps it in a completion.
            return [[int(t) for t in x["tokens"]] for x in results]

        out: list[list[int]] = [[] for _ in prompt_ids]
        with ThreadPoolExecutor(max_workers=len(groups)) as pool:
            for where, completions in zip(groups.values(), pool.map(one, groups.keys(), groups.values()), strict=True):
                if len(completions) != len(where):
                    raise ServerError(
                        f"llama-server returned {len(completions)} completions for {len(where)} requested"
                    )
                for i, c in zip(where, completions, strict=True):
                    out[i] = c
        return out

    def close(self) -> None:
        self._client.close()
        self.server.stop()


def server_rollout(
    weights: PolicyWeights,
    tokenizer: Any,
    sampling: Sampling,
    run_dir: Path,
    *,
    group: int,
    batch: int,
    ctx_per_slot: int,
    seed: int,
    clock: StepClock | None = None,
    diverse: DiverseDraws | None = None,
) -> ServerRollout:
    """The `server` sampler for a run: llama-server on the policy's GGUF, a slot for every plan of a batch
    (decoding a batch's plans together is faster than in smaller rounds: bench/results/llm_throughput.json)."""
    if weights.gguf is None:
        raise ConfigError("the server sampler needs a GGUF policy", hint="use --sampler trl")
    work = run_dir / SAMPLER_DIR
    work.mkdir(parents=True, exist_ok=True)
    draws = diverse.draws if diverse is not None else 1
    engine = LlamaServerEngine(
        weights.gguf,
        weights.path,
        work,
        parallel=max(group * draws, min(batch * draws, MAX_SLOTS)),
        ctx_per_slot=ctx_per_slot,
    )
    return ServerRollout(engine, tokenizer, sampling, work, seed=seed, clock=clock, diverse=diverse)
