"""How an OpenAI-compatible server takes a request for n completions of one prompt: its dialect (learned from
its /models page), the most completions one request may carry, and what follows when it refuses `n`.

llama-server lists its models as owned by `llamacpp`; its groups go through its own `/completion` route
(`llamacpp_routes.py`), because its OpenAI route given `n` reports only the first completion's usage. Every
other server (vLLM, SGLang, OpenAI) takes OpenAI's `n` (`grouped.py` holds both dialects' bodies and replies).
A server that answers a group with HTTP 400 or 422 while single requests go through does not take `n`: its
backend asks once per sample from then on, and says so once.
"""

from __future__ import annotations

import warnings
from typing import Any

from ..errors import BackendHTTPError, ConfigError
from .grouped import DIALECTS
from .llamacpp_routes import LlamaCppRoutes
from .types import Completion


def check_dialect(dialect: str | None) -> None:
    """A dialect the caller names must be one `grouped.py` speaks (None: learn it from the server)."""
    if dialect is not None and dialect not in DIALECTS:
        raise ConfigError(f"unknown server dialect {dialect!r}", hint=f"use one of {', '.join(DIALECTS)}")


async def learn_dialect(page: Any, native: LlamaCppRoutes) -> tuple[str, int | None]:
    """The dialect of the server whose /models page this is, with a llama-server's slot count (its /props)."""
    owners = {getattr(m, "owned_by", None) for m in getattr(page, "data", None) or []}
    if "llamacpp" not in owners:
        return "openai", None
    return "llama.cpp", await native.slots()


def group_limit(dialect: str | None, *, refused: bool, slots: int | None, concurrency: int, max_n: int) -> int:
    """The most completions one request may carry: 1 until the dialect is known and after a refusal."""
    if refused or dialect is None:
        return 1
    if dialect == "llama.cpp":
        # llama-server starts an n-completion request only when n slots are free at once.
        return min(concurrency, slots or concurrency)
    return max_n


def refuses_n(exc: BackendHTTPError) -> bool:
    """A group request answered 400/422: the request was fine but for `n` (told apart by asking per sample)."""
    return exc.status in (400, 422)


def after_refusal(singles: list[Completion], where: str, exc: BackendHTTPError) -> list[Completion]:
    """The completions asked once per sample after `where` refused them as one request, each a group of
    one; warns, since every later group costs the prompt once per sample."""
    # stacklevel 3: the warning names the caller of the backend's `complete_group`, as it did inline there
    warnings.warn(
        f"{where} refused a request for {len(singles)} completions ({exc}); asking once per sample from now on",
        stacklevel=3,
    )
    return [c.model_copy(update={"group": 1}) for c in singles]
