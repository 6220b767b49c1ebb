"""Messages that hold outside text (paths, names, reasons, model text) print as that text, never as Rich markup.

A string handed to `Console.print` is read as markup (and as `:emoji:` codes): `[/x]` in a path raises
`MarkupError`, `[x]` or `[object | str, ...]` in a path, a JSON fragment or a model's output disappears. Every
printed line whose text comes from outside goes through `text` (a `Text` whose content is taken literally) or one
of the printers below; only the label's style is ours.
"""

from __future__ import annotations

from rich.console import Console
from rich.text import Text


def text(message: object, style: str = "") -> Text:
    """`message` as literal text (no markup, no emoji codes), in `style`."""
    return Text(str(message), style=style)


def styled(*parts: object | tuple[object, str]) -> Text:
    """Parts joined literally; a `(value, style)` part is styled: `styled((out, "bold"), ": 12 traces")`."""
    return Text.assemble(*((str(p[0]), p[1]) if isinstance(p, tuple) else str(p) for p in parts))


def labelled(label: str, message: object, style: str) -> Text:
    """`label` in `style`, a space, then `message` literally: `error: cannot read nope[/x].jsonl`."""
    return Text.assemble((label, style), " ", str(message))


def say(console: Console, message: object, style: str = "", **kw: object) -> None:
    """Print `message` literally, in `style`."""
    console.print(text(message, style), **kw)  # type: ignore[arg-type]


def warn(console: Console, message: object) -> None:
    """A yellow `warning:` and the message, literally."""
    console.print(labelled("warning:", message, "yellow"))


def error(console: Console, message: object, detail: str | None = None) -> None:
    """A bold red `error:` and the message, then the detail dimmed; both literally, never wrapped."""
    console.print(labelled("error:", message, "bold red"), soft_wrap=True)
    if detail:
        console.print(text(detail, "dim"), soft_wrap=True)
