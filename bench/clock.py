"""Wall-clock times given as HH:MM on a bench's command line (`--until`, `--since`)."""

from __future__ import annotations

import time


def at(hhmm: str, *, ahead: bool = True) -> float:
    """The epoch time of HH:MM today, local time; with `ahead`, tomorrow's once today's has passed (a bench
    started at 23:00 with `--until 01:30` runs into the night instead of stopping at once)."""
    try:
        hh, mm = (int(x) for x in hhmm.split(":"))
    except ValueError:
        raise SystemExit(f"expected a time as HH:MM, got {hhmm!r}") from None
    now = time.localtime()
    when = time.mktime((now.tm_year, now.tm_mon, now.tm_mday, hh, mm, 0, 0, 0, -1))
    return when + (86400 if ahead and when < time.time() else 0)
