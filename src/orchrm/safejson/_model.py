"""A JSON file read as a pydantic model, with the reason it was refused in one line.

The typed files a user may edit, copy or damage (a best-of-N `results.json`, a pairs folder's `stats.json`)
are read the same way: `read`, then the model's validation. Each caller names its own file and error around
`InvalidFile`'s reason.
"""

from __future__ import annotations

from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from ..errors import OrchrmError
from ._document import UnsafeJSONError, read

M = TypeVar("M", bound=BaseModel)


class InvalidFile(OrchrmError):
    """A JSON file that is missing, unreadable, refused by a rule, or not the model's shape; the message is the
    one-line reason: the OS's or safejson's error, or the first invalid field as `field.path: message`."""


def read_model(path: Path, model: type[M], whole: str) -> M:
    """`model` validated from the JSON file at `path`; any failure is an `InvalidFile`. `whole` names the
    document in the reason when pydantic refuses it as a whole (its error has no field)."""
    try:
        return model.model_validate(read(path))
    except (OSError, UnsafeJSONError) as exc:
        raise InvalidFile(str(exc)) from None
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or whole
        raise InvalidFile(f"{where}: {err['msg']}") from None
