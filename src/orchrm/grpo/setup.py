"""One orchestrator-training run set up from plain settings: the task, the policy's trainable weights, the
sampler, the reward's scorer (the RM, or sub-agents that execute each plan) and the run's token ledger.

`orchrm train-orchestrator` is this plus printing; from Python:

    settings = GRPORunConfig(task="chain_sum", policy="qwen2.5-0.5b", max_steps=20)
    with setup_run(settings, Path("runs/grpo"), rm=Path("runs/rm")) as run:
        outcome = run.train()
"""

from __future__ import annotations

import asyncio
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from ..llm import LLM, ensure_reachable, open_llm
from ..llm.weights import PolicyWeights, policy_weights
from ..mas.agents import AgentSettings
from ..mas.executor import ExecutorConfig
from ..mas.run_config import RolloutSettings
from ..tasks import load_task
from ..tasks.base import Task
from .accounting import LedgerLog
from .config import GRPORunConfig
from .processes import process_state
from .rewards import ExecuteScorer, PlanScorer, RMScorer, ValidScorer
from .sampler import SamplerChoice, resolve_sampler
from .train import TrainOutcome, open_run, plans_per_process, train_orchestrator

if TYPE_CHECKING:
    from ..rm.model import RewardModel


@dataclass(frozen=True)
class AgentOptions:
    """The sub-agents of the `execute` reward: the LLM that runs them and their token limit."""

    backend: str = "local"
    model: str | None = None
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    concurrency: int | None = None
    timeout_s: float = 600.0
    max_tokens: int = RolloutSettings.model_fields["agent_max_tokens"].default


@dataclass
class GRPOSetup:
    """A run ready to train: close it (or use it as a context manager) to close its ledger and agent LLM."""

    config: GRPORunConfig
    task: Task
    weights: PolicyWeights
    out: Path
    ledger: LedgerLog
    scorer: PlanScorer
    warnings: list[str] = field(default_factory=list)  # what makes the reward suspect on this task
    agent_llm: LLM | None = None
    main_process: bool = True  # False in the other processes under `accelerate launch`: the main one reports

    def train(self, *, progress: bool = False, callbacks: list[Any] | None = None) -> TrainOutcome:
        """`progress`: TRL's own bar; `callbacks`: more trainer callbacks (a progress reporter, a deadline)."""
        return train_orchestrator(
            self.config,
            self.task,
            self.weights,
            self.out,
            ledger=self.ledger,
            scorer=self.scorer,
            progress=progress,
            callbacks=callbacks,
        )

    def close(self) -> None:
        self.ledger.close()
        if self.agent_llm is not None:
            self.agent_llm.close()

    def __enter__(self) -> GRPOSetup:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


def setup_run(
    settings: GRPORunConfig,
    out: Path,
    *,
    rm: Path | None = None,
    rm_device: str = "auto",
    sampler: SamplerChoice = "auto",
    agents: AgentOptions | None = None,
) -> GRPOSetup:
    """The run in `out` (created, or checked against its run.json) for `settings`: task, policy, reward
    (`rm` scores with the model folder `rm`, loaded on `rm_device`: auto | cpu | cuda, `rm.device`; `execute`
    runs each plan on `agents`) and the training settings.

    What `settings` cannot know is filled in here: the policy's and the RM's sha256, the agents' model id
    and the sampler (`sampler` resolved for this machine, policy and number of processes). A reward that does
    not fit its options is refused before any model loads, a step that does not split over the processes
    before any is trained."""
    check_reward(settings, rm)
    from ..rm.model import RewardModel

    task = load_task(settings.task)
    reward_model = RewardModel.load(rm, device=rm_device) if rm is not None else None
    # Before the processes meet: once they have, transformers saves a converted GGUF on rank 0 only.
    weights = policy_weights(settings.policy, dtype="bfloat16" if settings.bf16 else "float32")
    processes = process_state()  # several under `accelerate launch`
    plans_per_process(settings, processes.num_processes)
    agents = agents or AgentOptions()
    with ExitStack() as cleanup:  # on any failure, what was opened is closed again
        agent_llm = None
        if settings.reward == "execute":
            agent_llm = open_llm(
                agents.backend,
                model=agents.model,
                base_url=agents.base_url,
                api_key_env=agents.api_key_env,
                concurrency=agents.concurrency,
                timeout_s=agents.timeout_s,
            )
            cleanup.callback(agent_llm.close)
        config = settings.model_copy(
            update={
                "policy_sha256": weights.sha256,
                "rm_sha256": reward_model.card.weights_sha256 if reward_model else "",
                "agent_model_id": agent_llm.backend.model_id if agent_llm else "",
                "sampler": resolve_sampler(sampler, weights, processes.num_processes),
            }
        )
        ledger = open_run(out, config)
        cleanup.callback(ledger.close)
        scorer, warnings = _scorer(task, config, ledger, reward_model, agent_llm, agents)
        cleanup.pop_all()
    return GRPOSetup(config, task, weights, out, ledger, scorer, warnings, agent_llm, processes.is_main_process)


def check_reward(settings: GRPORunConfig, rm: Path | None) -> None:
    """Refuse a reward that does not fit its options (a one-line `ConfigError`, before any model loads)."""
    if settings.reward == "rm" and rm is None:
        raise ConfigError(
            "--reward rm needs --rm DIR", hint="train one with `orchrm train-rm`, or use --reward execute"
        )
    if settings.reward in ("execute", "valid") and rm is not None:
        raise ConfigError(f"--rm is for --reward rm; --reward {settings.reward} reads no reward model")
    if settings.reward not in ("rm", "execute", "valid"):
        raise ConfigError(
            f"setup_run builds the rm, execute and valid rewards; pass a custom reward ({settings.reward}) to "
            "train_orchestrator",
            hint="bench/train_orchestrator.py builds the prior and router scorers from training traces",
        )


def _scorer(
    task: Task,
    config: GRPORunConfig,
    ledger: LedgerLog,
    reward_model: RewardModel | None,
    agent_llm: LLM | None,
    agents: AgentOptions,
) -> tuple[PlanScorer, list[str]]:
    """The RM's opinion of each plan (with what makes it suspect on this task), or the task's grade of the
    plan as the sub-agents execute it."""
    from ..rm.model import rm_warnings

    if reward_model is not None:
        return RMScorer(reward_model, ledger), rm_warnings(reward_model, task, config.task)
    if config.reward == "valid":
        return ValidScorer(), []
    assert agent_llm is not None
    agent_llm.ledger = ledger  # sub-agent tokens land in the run's ledger under `execute`
    asyncio.run(ensure_reachable(agent_llm, "agent"))
    settings = AgentSettings(RolloutSettings(agent_max_tokens=agents.max_tokens, seed=config.seed))
    return ExecuteScorer(task, agent_llm, ExecutorConfig(settings=settings)), []
