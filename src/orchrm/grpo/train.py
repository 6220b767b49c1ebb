"""GRPO on the orchestrator through TRL's `GRPOTrainer`, with LoRA adapters through peft; a group's shared
prompt is read once in the update (shared_prompt.py) and plans are sampled as `config.sampler` says.

A run folder holds `run.json` (the settings; a resume must match them), `checkpoints/checkpoint-N/`
(sealed, see checkpoints.py), `tokens.jsonl` and `tokens.json` (every token, see accounting.py),
`samples.jsonl` (every sampled plan with its reward), `steps.jsonl` (each step's time: generation, reward,
update; see timing.py), `sampler/` (the server sampler's adapter in GGUF) and, once training ends,
`adapter/`: the LoRA adapter (safetensors), the tokenizer and a card naming the base weights, the reward and the
task. Running the same command again after a kill continues from the last sealed checkpoint.

Under `accelerate launch --num_processes N` a step's plans (`group_size` x `questions_per_step`, the same
optimisation whatever N) are split evenly over the processes, and the folder is written as processes.py
says: what belongs to the whole run by the main process alone, each process's tokens by itself.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..llm.accounting import ledger_path
from ..llm.weights import PolicyWeights, quiet_transformers
from ..mas.rollout import agent_types_for
from ..mas.run_folder import settle_run_file
from ..samples import SAMPLES_FILE
from ..tasks.base import Question, Task
from .accounting import POLICY_BACKEND, Accounted, LedgerLog, write_totals
from .adapter import ADAPTER_DIR, save_adapter
from .checkpoints import CHECKPOINTS_DIR, checkpoint_step, last_checkpoint, make_seal_callback
from .config import GRPORunConfig
from .data import prompt_dataset
from .diverse import DRAWS_FILE, DiverseDraws
from .processes import gathered, on_main, process_state
from .rewards import PlanReward, PlanScorer
from .sampler import SAMPLER_DIR, PlanEngine, Sampling, ServerRollout, check_processes, on_gpu, server_rollout
from .shared_prompt import shared_prompt_trainer
from .timing import STEPS_FILE, StepClock, StepTiming


@dataclass
class TrainOutcome:
    steps: int
    adapter: Path
    resumed_from: Path | None
    tokens: dict[str, Any]
    log_history: list[dict[str, Any]] = field(default_factory=list)
    timings: list[StepTiming] = field(default_factory=list)
    #: False in the other processes of a multi-process (`accelerate launch`) run: the main process reports.
    main_process: bool = True


def open_run(out: Path, config: GRPORunConfig) -> LedgerLog:
    """Create the run folder, or check that an existing one has the same settings (the main process does,
    before any process opens a file there); the ledger this process appends its tokens to."""
    processes = process_state()
    on_main(
        processes,
        lambda: settle_run_file(
            out, config, lambda new, old: new.differences(old), what="a training run", kind="train-orchestrator"
        ),
    )
    return LedgerLog(ledger_path(out, processes.process_index))


def plans_per_process(config: GRPORunConfig, processes: int) -> int:
    """A step's plans (`group_size` x `questions_per_step`) split evenly over the processes: more processes
    share a step's work, they do not change the step."""
    plans = config.group_size * config.questions_per_step
    if plans % processes:
        raise ConfigError(
            f"a step's {plans} plans (group size x questions per step) do not split evenly over {processes} processes",
            hint=f"make --group-size x --questions-per-step a multiple of {processes}",
        )
    return plans // processes


def grpo_args(config: GRPORunConfig, out: Path, *, progress: bool, processes: int = 1) -> Any:
    from trl import GRPOConfig

    from ..rm.trackers import tracker_list
    from ..rm.trl_setup import checkpointing

    return GRPOConfig(
        output_dir=str(out / CHECKPOINTS_DIR),
        per_device_train_batch_size=plans_per_process(config, processes),
        num_generations=config.group_size,
        max_completion_length=config.plan_max_tokens,
        temperature=config.temperature,
        top_p=config.top_p,
        beta=config.beta,
        entropy_coef=config.entropy_coef,
        num_iterations=config.num_iterations,
        learning_rate=config.learning_rate,
        max_steps=config.max_steps,
        save_strategy="steps",
        save_steps=config.save_steps,
        logging_steps=1,
        report_to=tracker_list(config.report_to),
        use_cpu=not on_gpu(),
        bf16=config.bf16,
        seed=config.seed,
        disable_tqdm=not progress,
        dataloader_num_workers=0,
        **checkpointing(GRPOConfig, False),  # the shared-prompt pass keeps a KV cache (shared_prompt.py)
        use_vllm=config.sampler == "vllm",
        vllm_mode="colocate",
    )


def lora_config(config: GRPORunConfig) -> Any:
    try:
        from peft import LoraConfig
    except ImportError:
        raise ConfigError("training the orchestrator needs peft", hint="pip install 'orchrm[lora]'") from None
    return LoraConfig(r=config.lora_r, lora_alpha=config.lora_alpha, target_modules="all-linear", task_type="CAUSAL_LM")


def load_policy(weights: PolicyWeights, bf16: bool) -> tuple[Any, Any]:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    with quiet_transformers():
        model = AutoModelForCausalLM.from_pretrained(
            weights.path, dtype=torch.bfloat16 if bf16 else torch.float32, use_safetensors=True, local_files_only=True
        )
        tokenizer = AutoTokenizer.from_pretrained(weights.path, local_files_only=True)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return model, tokenizer


def train_orchestrator(
    config: GRPORunConfig,
    task: Task,
    weights: PolicyWeights,
    out: Path,
    *,
    ledger: LedgerLog,
    scorer: PlanScorer | None = None,
    reward: Any = None,
    callbacks: list[Any] | None = None,
    progress: bool = False,
    engine: PlanEngine | None = None,
) -> TrainOutcome:
    """Train LoRA adapters on the orchestrator with GRPO; resumes from the last sealed checkpoint in `out`.

    The reward is `PlanReward` over `scorer` (penalty for invalid plans), or any TRL reward function
    given as `reward`. Either way each sample's tokens are counted in `ledger` (from `open_run`). Under
    `accelerate launch` every process calls this, with its own ledger; `main_process` on the outcome says
    which one reports. Plans are sampled by `config.sampler`; for `server`, `engine` replaces llama-server (tests)."""
    from transformers.trainer_callback import PrinterCallback

    if (scorer is None) == (reward is None):
        raise ConfigError("train_orchestrator needs exactly one of scorer and reward")
    processes = process_state()
    check_processes(config.sampler, processes.num_processes, config.diverse_draws)
    args = grpo_args(config, out, progress=progress, processes=processes.num_processes)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    model, tokenizer = load_policy(weights, config.bf16)
    dataset, questions = _prompts(config, task, tokenizer)
    main, gather = processes.is_main_process, gathered(processes)
    if reward is None:
        samples = out / SAMPLES_FILE if main else None
        reward = _plan_reward(config, task, scorer, questions, samples, gather)  # type: ignore[arg-type]
    clock = StepClock(out / STEPS_FILE if main else None, config.sampler, combine=gather)
    rollout = None
    if config.sampler == "server":
        os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # rollout_func is marked experimental
        rollout = _rollout(config, weights, tokenizer, dataset, out, clock, engine, agent_types_for(task))
    accounted = _accounted(reward, ledger, weights, config, clock, rollout)
    try:
        trainer = shared_prompt_trainer()(
            model=model,
            reward_funcs=accounted,
            args=args,
            train_dataset=dataset,
            processing_class=tokenizer,
            peft_config=lora_config(config),
            rollout_func=rollout,
            callbacks=[make_seal_callback(out, processes), clock.callback(), *(callbacks or [])],
        )
        if not progress:
            trainer.remove_callback(PrinterCallback)  # with tqdm off, it prints every log dict
        resume = _train_or_load(trainer, out, processes, config.max_steps)
    finally:
        if rollout is not None:
            rollout.engine.close()
    return _finish(trainer, tokenizer, weights, config, out, processes, resume, clock)


def _prompts(config: GRPORunConfig, task: Task, tokenizer: Any) -> tuple[Any, dict[str, Question]]:
    """The prompt set `config` asks for (its questions, degree, seed and worked examples) and its questions by id."""
    return prompt_dataset(
        task,
        tokenizer,
        n_questions=config.n_questions,
        degree=config.degree,
        seed=config.seed,
        examples=config.prompt_examples,
    )


def _plan_reward(
    config: GRPORunConfig,
    task: Task,
    scorer: PlanScorer,
    questions: dict[str, Question],
    samples_path: Path | None,
    gather: Any,
) -> PlanReward:
    """The reward when none is given: `scorer`'s grade of each plan, `config.invalid_penalty` for an invalid one;
    every sample is recorded at `samples_path` (the main process's) after `gather` collects them."""
    return PlanReward(
        scorer,
        questions,
        degree=config.degree,
        agent_types=agent_types_for(task),
        penalty=config.invalid_penalty,
        samples_path=samples_path,
        gather=gather,
    )


def _accounted(
    reward: Any,
    ledger: LedgerLog,
    weights: PolicyWeights,
    config: GRPORunConfig,
    clock: StepClock,
    rollout: ServerRollout | None,
) -> Accounted:
    """`reward` with each sample's tokens counted in `ledger`, under the backend that sampled them."""
    backend = rollout.engine.backend if rollout is not None else "vllm" if config.sampler == "vllm" else POLICY_BACKEND
    return Accounted(
        reward,
        ledger,
        weights.name,
        config.num_iterations,
        backend=backend,
        clock=clock,
        shared_sampling=config.sampler in ("server", "vllm"),
    )


def _train_or_load(trainer: Any, out: Path, processes: Any, max_steps: int) -> Path | None:
    """Train on from the last sealed checkpoint, or load it without training when it is already at `max_steps`;
    returns the checkpoint resumed from."""
    resume = on_main(processes, lambda: last_checkpoint(out / CHECKPOINTS_DIR))  # it removes unsealed checkpoints
    if resume is not None and checkpoint_step(resume) >= max_steps:
        load_finished(trainer, resume)
    else:
        trainer.train(resume_from_checkpoint=str(resume) if resume else None)
    return resume


def load_finished(trainer: Any, checkpoint: Path) -> None:
    """A run resumed at its last step: the checkpoint's adapter and trainer state, and no training. (The
    Trainer, resumed at `max_steps`, runs one more step before it checks the limit: a finished run started
    again would train past what its settings say.)"""
    from peft import set_peft_model_state_dict
    from safetensors.torch import load_file
    from transformers import TrainerState

    set_peft_model_state_dict(trainer.model, load_file(str(checkpoint / "adapter_model.safetensors")))
    trainer.state = TrainerState.load_from_json(str(checkpoint / "trainer_state.json"))


def _finish(
    trainer: Any,
    tokenizer: Any,
    weights: PolicyWeights,
    config: GRPORunConfig,
    out: Path,
    processes: Any,
    resume: Path | None,
    clock: StepClock,
) -> TrainOutcome:
    """The adapter and `tokens.json`, written by the main process once every process has finished training;
    every process returns once they are on disk."""
    steps = trainer.state.global_step
    processes.wait_for_everyone()  # no process still appending tokens or samples

    def write() -> dict[str, Any]:
        save_adapter(trainer.model, tokenizer, out / ADAPTER_DIR, weights, config, steps)
        return write_totals(out)

    tokens = on_main(processes, write)
    return TrainOutcome(
        steps=steps,
        adapter=out / ADAPTER_DIR,
        resumed_from=resume,
        tokens=tokens,
        log_history=list(trainer.state.log_history),
        timings=list(clock.history),
        main_process=processes.is_main_process,
    )


def _rollout(
    config: GRPORunConfig,
    weights: PolicyWeights,
    tokenizer: Any,
    dataset: Any,
    out: Path,
    clock: StepClock,
    engine: PlanEngine | None,
    agent_types: tuple[str, ...],
) -> ServerRollout:
    sampling = Sampling(max_tokens=config.plan_max_tokens, temperature=config.temperature, top_p=config.top_p)
    diverse = (
        DiverseDraws(
            config.diverse_draws, tokenizer, degree=config.degree, agent_types=agent_types, log=out / DRAWS_FILE
        )
        if config.diverse_draws > 1
        else None
    )
    if engine is not None:
        return ServerRollout(
            engine, tokenizer, sampling, out / SAMPLER_DIR, seed=config.seed, clock=clock, diverse=diverse
        )
    longest = max(dataset["prompt_tokens"]) + config.plan_max_tokens
    return server_rollout(
        weights,
        tokenizer,
        sampling,
        out,
        group=config.group_size,
        batch=config.group_size * config.questions_per_step,
        ctx_per_slot=256 * (longest // 256 + 1),
        seed=config.seed,
        clock=clock,
        diverse=diverse,
    )
