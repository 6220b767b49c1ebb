"""The `orchrm` command."""

from .app import app, main

__all__ = ["app", "main"]
