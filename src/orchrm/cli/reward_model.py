"""`orchrm train-rm`, `orchrm score`, `orchrm serve`: train, use and serve the orchestration reward model."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.table import Table

from .. import safejson
from ..atomic import write_text_atomic
from ..errors import ConfigError
from ..rm.config import DECODER_DEFAULTS, RMConfig
from ..rm.device import DEVICE_HELP, Device, resolve_device
from ..rm.inputs import ScoreRow, plan_text
from ..rm.reward import INVALID_PENALTY
from ..rm.trackers import tracker_list
from . import options as opt
from .say import say, text
from .trainer_progress import trainer_progress

if TYPE_CHECKING:
    from ..rm.train import TrainResult


def _margins(items: list[str] | None) -> dict[str, float]:
    out = {}
    for item in items or []:
        name, sep, value = item.partition("=")
        try:
            out[name] = float(value)
        except ValueError:
            sep = ""
        if not sep:
            raise ConfigError(f"--margin expects SOURCE=NUMBER, got {item!r}")
    return out


#: `train-rm`'s own defaults: training goes to an accelerator when there is one (the library's default is the CPU).
TRAIN_RM = RMConfig(device="auto")
#: The flags `train-rm` had before its options were made from `RMConfig` (users' scripts still run).
TRAIN_RM_FLAGS = {
    "learning_rate": ("--lr",),
    "center_rewards_coefficient": ("--center",),
    "early_stopping_patience": ("--patience",),
    "lora": ("--lora/--no-lora",),
}


@opt.options_from(
    RMConfig,
    into="config",
    defaults=TRAIN_RM,
    panel=lambda name: None,
    flags=TRAIN_RM_FLAGS,
    unset=tuple(DECODER_DEFAULTS),
    exclude=("margins",),
)
@opt.with_progress
def train_rm(
    pairs_dir: Annotated[Path, typer.Argument(help="Folder made by `orchrm pairs`.")],
    out: Annotated[Path, typer.Option(help="Model folder to write.")],
    *,
    config: RMConfig,
    profile: str = opt.profile_option(),  # its values reach `config` through the options; the card records those
    margin: list[str] | None = opt.field_option(
        RMConfig, "margins", "--margin", default=None, note="SOURCE=NUMBER (repeatable)."
    ),
    reporting: opt.ProgressOptions,
) -> None:
    """Train a Bradley–Terry reward model on plan pairs (TRL RewardTrainer).

    Under `accelerate launch --num_processes N -m orchrm train-rm ...` training is data-parallel
    (--batch-size is per process) and only the main process writes the model folder. Settings not given (the
    epochs, batch size, learning rate, length and LoRA) are the backbone kind's defaults."""
    from ..rm.train import train_from_folder

    if margin:
        config = config.model_copy(update={"margins": _margins(margin)})
    resolve_device(config.device)  # cuda without a GPU, a tracker not installed: one line before the pairs are read
    tracker_list(config.report_to)
    with reporting.reporter() as progress:
        # Made once the pairs are read: a folder that cannot be read is its one line, with no progress before it.
        steps = lambda: [trainer_progress(progress, "train-rm steps", _rm_info)]  # noqa: E731  tokens: non-padding
        result = train_from_folder(pairs_dir, out, config, progress=False, callbacks=steps)
    if result.main_process:  # under `accelerate launch` the main process reports
        _report(result, out, reporting.as_json)


def _rm_info(logged: dict[str, Any]) -> str:
    from ..rm.trl_setup import ACCURACY  # transformers: imported by training anyway, not by `--help`

    val = logged.get(f"eval_{ACCURACY}")
    parts = [
        f"loss {logged['loss']:.4f}" if "loss" in logged else "",
        f"held-out {val:.3f}" if isinstance(val, float) else "",
    ]
    return " · ".join(p for p in parts if p)


def _report(result: TrainResult, out: Path, as_json: bool = False) -> None:
    """Held-out accuracy per epoch, the epoch kept, throughput and where the model went."""
    m = result.model.card.metrics
    if as_json:
        epochs = [
            {"epoch": h.epoch, "train_loss": h.train_loss, "accuracy": h.accuracy, "per_source": h.per_source}
            for h in result.history
        ]
        print(
            json.dumps(
                {
                    "out": str(out),
                    "best_epoch": m["best_epoch"],
                    "epochs": epochs,
                    "pairs_per_second": result.pairs_per_second,
                    "train_pairs": m["train_pairs"],
                    "val_pairs": m["val_pairs"],
                }
            )
        )
        return
    table = Table(title="held-out pairwise accuracy per epoch", title_justify="left")
    table.add_column("epoch", justify="right")
    table.add_column("train loss", justify="right")
    table.add_column("accuracy", justify="right")
    table.add_column("per source")
    for h in result.history:
        table.add_row(
            str(h.epoch),
            f"{h.train_loss:.4f}" if h.train_loss is not None else "-",
            f"{h.accuracy:.3f}" if h.accuracy is not None else "-",
            text(", ".join(f"{k} {v:.3f}" for k, v in h.per_source.items())),
        )
    console = Console(highlight=False)
    console.print(table)
    say(
        console,
        f"{result.model.card.backbone_kind} backbone {result.model.card.backbone}: "
        f"kept epoch {m['best_epoch']}; {result.pairs_per_second:.1f} pairs/s; wrote {out} "
        f"({m['train_pairs']} train / {m['val_pairs']} val pairs)",
    )


def score(
    file: Annotated[
        Path, typer.Argument(help='JSONL, one {"question": str, "plans": [plan object | text, ...]} a line.')
    ],
    rm: Annotated[Path, typer.Option(help="Model folder from `orchrm train-rm`.")],
    out: Annotated[Path | None, typer.Option(help="Write JSONL here instead of stdout.")] = None,
    batch_size: Annotated[int, typer.Option()] = 64,
    degree: Annotated[
        str, typer.Option(help="Plan shape a plan must have to be scored: direct, single or dag.")
    ] = "dag",
    device: Annotated[Device, typer.Option(help=DEVICE_HELP)] = "auto",
) -> None:
    """Score plans with a reward model; each output line adds "scores" (one per plan, higher is better).

    A plan text that holds no valid plan (the reward contract, `orchrm.rm.reward`) scores null, never a model score,
    and "errors" says why at the same index."""
    from ..rm.model import RewardModel

    contract = _contract(degree)
    resolve_device(device)  # --device cuda without a GPU: one line before anything is read
    rows = read_score_requests(file)  # the whole input is checked before the model loads or --out is touched
    model = RewardModel.load(rm, device=device)
    scored = [{**r, **_scored(model, contract, r, batch_size)} for r in rows]
    text = "".join(json.dumps(r) + "\n" for r in scored)
    if out is None:
        sys.stdout.write(text)
    else:
        write_text_atomic(out, text)
        say(
            Console(stderr=True), f"scored {sum(len(r['plans']) for r in rows)} plans of {len(rows)} questions -> {out}"
        )


#: A request file is user-written: bounded like a plan (no size bound per line; the file is local).
SCORE_LINE_LIMITS = safejson.Limits(max_chars=None, max_depth=32, max_number_chars=100)


def read_score_requests(file: Path) -> list[dict[str, Any]]:
    """The rows of a `score` request file, or a one-line `ConfigError` naming the file and line."""
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read {file}: {exc.strerror}") from exc
    rows = []
    for lineno, line in enumerate(data.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = safejson.loads(line, SCORE_LINE_LIMITS)
        except safejson.UnsafeJSONError as exc:
            raise ConfigError(f"{file}:{lineno}: not acceptable JSON: {exc.reason} ({exc.rule})") from None
        try:
            ScoreRow.model_validate(row)  # the server's rule for a question and its plans
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(p) for p in err["loc"]) or "(line)"
            raise ConfigError(
                f'{file}:{lineno}: expected {{"question": str, "plans": [object | str, ...]}}: {where}: {err["msg"]}'
            ) from None
        rows.append(row)
    if not rows:
        raise ConfigError(f"{file} holds no requests", hint='one {"question": str, "plans": [...]} a line')
    return rows


def _contract(degree: str, **settings: Any) -> Any:
    from ..rm.reward import RewardContract

    try:
        return RewardContract.model_validate({"degree": degree, **settings})
    except ValidationError as exc:
        err = exc.errors()[0]
        raise ConfigError(f"--{str(err['loc'][0]).replace('_', '-')}: {err['msg']}") from None


def _scored(model: Any, contract: Any, row: dict[str, Any], batch_size: int) -> dict[str, list[Any]]:
    """A row's scores under the reward contract: the RM's raw score of each valid plan, null (and the reason in
    "errors") for a plan text with no valid plan."""
    from ..mas.plans import PlanError

    plans: list[Any] = []
    for p in row["plans"]:
        try:
            plans.append(contract.check(plan_text(p)))
        except PlanError as exc:
            plans.append(f"no valid plan ({exc.rule}): {exc.reason}"[:300])
    valid = [p for p in plans if not isinstance(p, str)]
    raw = iter(model.score(row["question"], valid, batch_size=batch_size) if valid else [])
    return {
        "scores": [None if isinstance(p, str) else next(raw) for p in plans],
        "errors": [p if isinstance(p, str) else None for p in plans],
    }


def _token(token_env: str | None) -> str | None:
    """The bearer token `--token-env` names, or None without one; an unset variable is a mistake."""
    if not token_env:
        return None
    token = os.environ.get(token_env)
    if not token:
        raise ConfigError(f"--token-env {token_env} names an unset or empty environment variable")
    return token


# `serve`'s options that need more than a line each
TokenEnv = Annotated[str | None, typer.Option(help="Environment variable holding a bearer token clients must send.")]
OpenrlhfPenalty = Annotated[
    float, typer.Option(help="Reward POST /openrlhf gives a sample with no valid plan or no question label.")
]
OpenrlhfScale = Annotated[
    str, typer.Option(help="POST /openrlhf's reward of a valid plan: unit (sigmoid of the score) or raw.")
]
Degree = Annotated[str, typer.Option(help="Plan shape a plan must have to be scored: direct, single or dag.")]
ReadTimeout = Annotated[
    float,
    typer.Option(help="Seconds a client has to send a request's headers, and again its body (else 408).", min=0.1),
]
TorchThreads = Annotated[
    int | None,
    typer.Option(help="Threads torch scores with (default: every core but one, left to the event loop).", min=1),
]
QueueRequests = Annotated[
    int,
    typer.Option(
        help="Requests queued for the model; past it a request is held until one leaves (503 only when stuck).", min=1
    ),
]
QueueItems = Annotated[
    int,
    typer.Option(
        help="Items queued for the model; past it a request is held until room frees (503 only when stuck).", min=1
    ),
]


def serve(
    rm: Annotated[Path, typer.Option(help="Model folder from `orchrm train-rm`.")],
    host: Annotated[str, typer.Option()] = "127.0.0.1",
    port: Annotated[int, typer.Option()] = 8765,
    token_env: TokenEnv = None,
    max_items: Annotated[int, typer.Option(help="Most (question, plan) items per request.")] = 256,
    max_body_bytes: Annotated[int, typer.Option(help="Largest request body.")] = 2_000_000,
    max_item_chars: Annotated[int, typer.Option(help="Largest question + plan of one item, in characters.")] = 100_000,
    openrlhf_penalty: OpenrlhfPenalty = INVALID_PENALTY,
    openrlhf_scale: OpenrlhfScale = "unit",
    degree: Degree = "dag",
    read_timeout: ReadTimeout = 10.0,
    torch_threads: TorchThreads = None,
    queue_requests: QueueRequests = 512,
    queue_items: QueueItems = 2048,
    device: Annotated[Device, typer.Option(help=DEVICE_HELP)] = "auto",
) -> None:
    """Serve a reward model over HTTP: POST /score, POST /openrlhf (OpenRLHF's protocol), GET /health, GET /info.

    /health reports the scoring queue's depth and the requests held; past --queue-requests / --queue-items a
    request is held until room frees, and gets 503 with Retry-After (which orchrm's clients wait out) only when
    the model makes no progress for 60 s, 4,096 are already held, or it alone is bigger than the queue."""
    from functools import partial

    from ..adapters import openrlhf
    from ..rm.model import RewardModel
    from ..rm.server import QueueLimits
    from ..rm.server import serve as run_server

    contract = _contract(degree, invalid_penalty=openrlhf_penalty, scale=openrlhf_scale)
    resolve_device(device)

    run_server(
        RewardModel.load(rm, device=device),
        host=host,
        port=port,
        token=_token(token_env),
        max_items=max_items,
        max_body_bytes=max_body_bytes,
        max_item_chars=max_item_chars,
        routes=[partial(openrlhf.router, contract=contract)],
        contract=contract,
        header_timeout_s=read_timeout,
        body_timeout_s=read_timeout,
        torch_threads=torch_threads,
        queue=QueueLimits(max_requests=queue_requests, max_items=queue_items),
    )
