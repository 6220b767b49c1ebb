"""`orchrm train-orchestrator`: GRPO on the orchestrator with LoRA, rewarded by the RM or by execution."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer
from rich.console import Console
from rich.table import Table

from ..grpo.config import GRPORunConfig
from ..grpo.timing import STEPS_FILE
from ..llm.accounting import TOKENS_FILE
from ..llm.models import DEFAULT_MODEL
from ..mas.run_config import PlanSampling, RolloutSettings
from ..rm.device import DEVICE_HELP, Device, resolve_device
from ..rm.trackers import ReportTo, tracker_list
from ..samples import SAMPLES_FILE
from . import options as opt
from .progress import Reporter
from .say import say, text, warn
from .trainer_progress import trainer_progress

if TYPE_CHECKING:
    from ..grpo import AgentOptions, TrainOutcome
    from ..grpo.sampler import SamplerChoice

SAMPLER_HELP = (
    "Who samples the plans: llama-server with the current adapter, TRL's generate, or TRL's vLLM mode; auto: on a "
    "GPU vllm if installed, else trl; on a CPU server for a GGUF policy, else trl."
)


@opt.with_progress
@opt.options_from(PlanSampling, into="sampling")
def train_orchestrator(
    task: opt.TaskName,
    out: Annotated[Path, typer.Option(help="Run folder (created, or resumed from its last checkpoint).")],
    *,
    reward: Literal["rm", "execute", "valid"] = opt.field_option(GRPORunConfig, "reward"),
    rm: Annotated[Path | None, typer.Option(help="Reward-model folder from `orchrm train-rm` (--reward rm).")] = None,
    device: Annotated[Device, typer.Option(help=DEVICE_HELP, rich_help_panel=opt.MODELS)] = "auto",
    policy: str = opt.field_option(GRPORunConfig, "policy", default=DEFAULT_MODEL),
    invalid_penalty: float = opt.field_option(GRPORunConfig, "invalid_penalty", "--penalty"),
    group_size: int = opt.field_option(GRPORunConfig, "group_size"),
    questions_per_step: int = opt.field_option(GRPORunConfig, "questions_per_step"),
    n_questions: int = opt.field_option(GRPORunConfig, "n_questions"),
    max_steps: int = opt.field_option(GRPORunConfig, "max_steps", "--steps"),
    save_steps: int = opt.field_option(GRPORunConfig, "save_steps"),
    learning_rate: float = opt.field_option(GRPORunConfig, "learning_rate", "--lr"),
    lora_r: int = opt.field_option(GRPORunConfig, "lora_r", note="Alpha is twice it."),
    beta: float = opt.field_option(GRPORunConfig, "beta"),
    entropy_coef: float = opt.field_option(GRPORunConfig, "entropy_coef"),
    diverse_draws: int = opt.field_option(GRPORunConfig, "diverse_draws"),
    profile: str = opt.profile_option(),  # its values reach the options; run.json records them and its name
    sampling: PlanSampling,
    bf16: bool = opt.field_option(GRPORunConfig, "bf16"),
    report_to: ReportTo = opt.field_option(GRPORunConfig, "report_to"),
    sampler: Annotated[Literal["auto", "server", "trl", "vllm"], typer.Option(help=SAMPLER_HELP)] = "auto",
    agent_backend: str | None = opt.field_option(opt.ModelOptions, "agent_backend", panel=opt.MODELS),
    agent_model: str | None = opt.field_option(opt.ModelOptions, "agent_model", panel=opt.MODELS),
    agent_base_url: str | None = opt.field_option(opt.ModelOptions, "agent_base_url", panel=opt.MODELS),
    agent_max_tokens: int = opt.field_option(RolloutSettings, "agent_max_tokens", panel=opt.MODELS),
    api_key_env: opt.ApiKeyEnv = "OPENAI_API_KEY",
    concurrency: opt.Concurrency = None,
    timeout: Annotated[
        float, typer.Option(help="Per-request timeout of the sub-agents, seconds.", rich_help_panel=opt.MODELS)
    ] = 600.0,
    reporting: opt.ProgressOptions,
) -> None:
    """Train LoRA adapters on the plan-writing model with GRPO (TRL); the adapter lands in OUT/adapter.
    Runs under `accelerate launch --num_processes N` too: a step's plans are split over the processes."""
    fields = {name: value for name, value in locals().items() if name in RUN_FIELDS}  # before any other local
    from ..grpo import AgentOptions

    settings = _settings(sampling, fields, rm=rm, device=device)
    agents = AgentOptions(
        backend=agent_backend or "local",
        model=agent_model,
        base_url=agent_base_url,
        api_key_env=api_key_env,
        concurrency=concurrency,
        timeout_s=timeout,
        max_tokens=agent_max_tokens,
    )
    with reporting.reporter() as progress:
        _train(progress, settings, out, rm=rm, device=device, sampler=sampler, agents=agents, as_json=reporting.as_json)


#: `train_orchestrator`'s options that are `GRPORunConfig` fields of the same name (`lora_alpha` follows
#: `lora_r`; the sampler is `setup_run`'s to resolve, and the plan sampling options come as one model).
RUN_FIELDS = (
    "task",
    "profile",
    "policy",
    "reward",
    "invalid_penalty",
    "group_size",
    "questions_per_step",
    "n_questions",
    "max_steps",
    "save_steps",
    "learning_rate",
    "lora_r",
    "beta",
    "entropy_coef",
    "diverse_draws",
    "bf16",
    "report_to",
)
#: The flags of the options whose names are not their fields' (a validation error names what the user typed).
RUN_FLAGS = {"invalid_penalty": "--penalty", "max_steps": "--steps", "learning_rate": "--lr", "lora_alpha": "--lora-r"}


def _settings(sampling: PlanSampling, fields: dict[str, Any], *, rm: Path | None, device: Device) -> GRPORunConfig:
    """The run's settings, checked with what would fail later (a missing tracker, --reward rm without --rm, a
    device that is not there) each one line before the policy loads or the progress output starts."""
    from ..grpo.setup import check_reward

    settings = opt.checked(
        GRPORunConfig, dict(sampling.model_dump(), **fields, lora_alpha=2 * fields["lora_r"]), RUN_FLAGS
    )
    tracker_list(settings.report_to)
    check_reward(settings, rm)
    if rm is not None:
        resolve_device(device)
    return settings


def _train(
    progress: Reporter,
    settings: GRPORunConfig,
    out: Path,
    *,
    rm: Path | None,
    device: Device,
    sampler: SamplerChoice,
    agents: AgentOptions,
    as_json: bool,
) -> None:
    """Load the policy (and the RM), train with the steps on `progress`, and report the outcome once."""
    from ..grpo import setup_run

    console = Console(highlight=False, stderr=as_json)
    progress.note(f"loading the policy {settings.policy}" + (" and the reward model" if rm is not None else ""))
    with setup_run(settings, out, rm=rm, rm_device=device, sampler=sampler, agents=agents) as run:
        for w in run.warnings if run.main_process else []:
            warn(console, w)
        steps = trainer_progress(progress, "GRPO steps", _grpo_info, tokens=lambda: run.ledger.total().total_tokens)
        result = run.train(callbacks=[steps])
    if result.main_process:  # under `accelerate launch`, one report
        _print_outcome(console, result, run.config.sampler, out, as_json)


def _grpo_info(logged: dict) -> str:
    """TRL's mean reward and its spread within groups, from the step's log."""
    parts = [
        f"reward {logged['reward']:.3f}" if isinstance(logged.get("reward"), float) else "",
        f"group std {logged['reward_std']:.3f}" if isinstance(logged.get("reward_std"), float) else "",
    ]
    return " · ".join(p for p in parts if p)


def _print_outcome(console: Console, result: TrainOutcome, sampler: str, out: Path, as_json: bool = False) -> None:
    """Tokens by category, the mean step's timings and where the adapter, tokens and samples went."""
    if as_json:
        print(
            json.dumps(
                {
                    "out": str(out),
                    "steps": result.steps,
                    "resumed_from": str(result.resumed_from) if result.resumed_from else None,
                    "adapter": str(result.adapter),
                    "tokens": result.tokens,
                    "timings": [t.model_dump() for t in result.timings],
                }
            )
        )
        return
    table = Table(
        title=text(
            f"orchestrator training: {result.steps} steps"
            + (f" (resumed from {result.resumed_from.name})" if result.resumed_from else "")
        ),
        title_justify="left",
    )
    for col in ("category", "calls", "prompt tokens", "completion tokens"):
        table.add_column(col, justify="left" if col == "category" else "right")
    for name, t in result.tokens["categories"].items():
        table.add_row(text(name), f"{t['calls']:,}", f"{t['prompt_tokens']:,}", f"{t['completion_tokens']:,}")
    console.print(table)
    if result.timings:
        sampled = [t for t in result.timings if t.plans]
        mean = lambda f: sum(f(t) for t in sampled) / max(1, len(sampled))  # noqa: E731
        say(
            console,
            f"per step ({sampler} sampler, {len(sampled)} steps): generation {mean(lambda t: t.generation_s):.1f}s "
            f"({mean(lambda t: t.tokens_per_s):.1f} tok/s), reward {mean(lambda t: t.reward_s):.1f}s, "
            f"update {mean(lambda t: t.update_s):.1f}s · {out / STEPS_FILE}",
        )
    say(console, f"adapter: {result.adapter} · tokens: {out / TOKENS_FILE} · samples: {out / SAMPLES_FILE}")
