"""`orchrm export`: a reward model as a plain transformers folder that any serving stack loads and scores alike."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from .say import say


def export(
    rm: Annotated[Path, typer.Argument(help="Model folder from `orchrm train-rm`.")],
    out: Annotated[Path, typer.Option(help="Folder to write (refused if it exists, unless --replace).")],
    replace: Annotated[bool, typer.Option(help="Replace an existing OUT whole.")] = False,
) -> None:
    """Export a reward model as a plain transformers sequence-classification folder, with its input template.

    `AutoTokenizer` and `AutoModelForSequenceClassification` on OUT score the texts written in OUT/README.md and
    OUT/orchrm_template.json as `orchrm score` does (checked on example plans before OUT is written); a decoder's
    LoRA adapter and value head are merged into one model."""
    from ..rm.export import TEMPLATE_FILE, export_reward_model
    from ..rm.model import RewardModel
    from ..safejson import read

    model = RewardModel.load(rm)
    export_reward_model(model, out, replace=replace)
    check = read(out / TEMPLATE_FILE)["check"]
    say(
        Console(highlight=False),
        f"exported {model.card.backbone_kind} reward model {rm} -> {out} (plain transformers scores "
        f"{check['examples']} example plans, max |Δ| {check['max_abs_diff']:.2g} from orchrm's)",
    )
