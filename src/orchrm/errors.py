"""Errors orchrm raises for expected failures.

Every error carries a one-line message that says what happened and what to do about it; the CLI prints
that line and exits non-zero without a traceback. Anything that is not an `OrchrmError` is a bug.
"""

from __future__ import annotations


class OrchrmError(Exception):
    """An expected failure with a message fit to show a user as it is."""

    def __init__(self, message: str, *, hint: str | None = None, detail: str | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint
        # Multi-line context (e.g. the tail of a build log) shown below the one-line message.
        self.detail = detail

    def __str__(self) -> str:
        return f"{self.message} ({self.hint})" if self.hint else self.message


class ConfigError(OrchrmError):
    """A setting or argument that cannot work (unknown model name, bad option)."""


class ModelError(OrchrmError):
    """An embedded model cannot be found, assembled or verified."""


class ChecksumMismatch(ModelError):
    """A model file's sha256 differs from the one pinned in the registry."""


class OutdatedModel(ModelError):
    """A model folder made by an older orchrm (card format or plan rendering) that must be retrained."""


class ServerError(OrchrmError):
    """llama-server could not be built or started."""


class LLMError(OrchrmError):
    """A generation request failed."""


class BackendUnreachable(LLMError):
    """No connection to the server, even after retries."""


class BackendTimeout(LLMError):
    """The server did not answer within the timeout, even after retries."""


class BackendHTTPError(LLMError):
    """The server answered with an error status that retrying cannot fix."""

    def __init__(self, message: str, *, status: int, hint: str | None = None):
        super().__init__(message, hint=hint)
        self.status = status


class MalformedResponse(LLMError):
    """The server answered with something that is not an OpenAI-style completion."""


class ContextOverflow(LLMError):
    """The prompt plus max_tokens does not fit the model's context window."""


class SchemaViolation(LLMError):
    """Structured output that does not satisfy the requested JSON schema."""

    def __init__(self, message: str, *, text: str, hint: str | None = None, usage: object | None = None):
        super().__init__(message, hint=hint)
        self.text = text
        # The violating call's `Usage` (already in the ledger), so callers can count what a bad reply cost.
        self.usage = usage


class RunFileError(OrchrmError):
    """A run folder whose files cannot be read back."""
