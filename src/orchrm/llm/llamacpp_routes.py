"""llama-server's own routes beside its OpenAI API: `/apply-template`, `/completion` (n completions of one
prompt, each with its own counts) and `/props` (its slot count). `OpenAIBackend` uses them for groups on a
llama-server, where the OpenAI route with `n` would report only the first completion's usage."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx

from .. import safejson
from ..errors import BackendHTTPError, BackendTimeout, BackendUnreachable, ContextOverflow, MalformedResponse
from .grouped import native_body, parse_native
from .types import Completion, GenerateConfig, Message

#: Words in a 400 reply that mean the prompt overflowed the context (llama.cpp, vLLM, OpenAI).
OVERFLOW_MARKERS = ("context length", "context size", "context_length", "exceed_context", "maximum context", "too long")
_TEMPLATES_KEPT = 512


class LlamaCppRoutes:
    """The native routes of the llama-server at `base_url` (ending in /v1); an httpx client per event loop."""

    def __init__(self, base_url: str, api_key: str, timeout_s: float, extra_body: dict[str, Any] | None) -> None:
        self.root = base_url.rstrip("/").removesuffix("/v1")
        self.api_key = api_key
        self.timeout_s = timeout_s
        self.extra_body = extra_body  # sent with every completion (the local backend's LoRA scales)
        self._clients: dict[int, httpx.AsyncClient] = {}
        self._templates: dict[str, str] = {}

    async def slots(self) -> int:
        """The server's slot count; 1 when it does not say (then it is never asked for a group)."""
        try:
            props = safejson.loads((await self._client().get(self.root + "/props")).content)
        except (httpx.HTTPError, safejson.UnsafeJSONError):
            return 1
        n = props.get("total_slots") if isinstance(props, dict) else None
        return n if isinstance(n, int) and 1 <= n <= 4096 else 1

    async def group(self, messages: list[Message], config: GenerateConfig, seeds: list[int | None]) -> list[Completion]:
        """`len(seeds)` completions of one prompt from one `/completion` request (`n_cmpl`, child k seeded + k)."""
        body = native_body(await self._template(messages), config, seeds[0], len(seeds), self.extra_body)
        return parse_native(await self._post("/completion", body), len(seeds), self.root)

    async def _template(self, messages: list[Message]) -> str:
        """The server's chat template applied to `messages` (remembered: a group's retries ask again)."""
        key = json.dumps([m.model_dump() for m in messages], sort_keys=True)
        if key not in self._templates:
            data = await self._post("/apply-template", {"messages": [m.model_dump() for m in messages]})
            prompt = data.get("prompt") if isinstance(data, dict) else None
            if not isinstance(prompt, str):
                raise MalformedResponse(f"{self.root}/apply-template returned no prompt")
            if len(self._templates) >= _TEMPLATES_KEPT:
                self._templates.pop(next(iter(self._templates)))
            self._templates[key] = prompt
        return self._templates[key]

    def _client(self) -> httpx.AsyncClient:
        loop_id = id(asyncio.get_running_loop())
        client = self._clients.get(loop_id)
        if client is None:
            headers = {"Authorization": f"Bearer {self.api_key}"}
            client = self._clients[loop_id] = httpx.AsyncClient(timeout=self.timeout_s, headers=headers)
        return client

    async def _post(self, path: str, body: dict[str, Any]) -> Any:
        """POST to a native route; errors translated like the OpenAI route's."""
        url = self.root + path
        try:
            r = await self._client().post(url, json=body)
        except httpx.TimeoutException as exc:
            raise BackendTimeout(
                f"{url} did not answer within {self.timeout_s:g}s",
                hint="raise the timeout or lower the load on the server",
            ) from exc
        except httpx.HTTPError as exc:
            raise BackendUnreachable(f"cannot reach {url}: {exc}", hint="is the server running?") from exc
        if r.status_code != 200:
            detail = " ".join(r.text.split())[:300]
            if r.status_code == 400 and any(m in detail.lower() for m in OVERFLOW_MARKERS):
                raise ContextOverflow(f"the prompt does not fit the model's context window: {detail}")
            raise BackendHTTPError(f"{url} answered HTTP {r.status_code}: {detail}", status=r.status_code)
        try:
            return safejson.loads(r.content)  # a server's reply carries model text: untrusted
        except safejson.UnsafeJSONError as exc:
            raise MalformedResponse(f"{url} returned a body that is not acceptable JSON: {exc}") from None

    async def aclose(self) -> None:
        clients, self._clients = self._clients, {}
        for client in clients.values():
            try:
                await client.aclose()
            except RuntimeError:
                continue  # the loop that owned it is gone, and its connections with it
