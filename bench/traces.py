"""Committed traces stored gzipped: pack them (`traces.jsonl` -> `traces.jsonl.gz`) or unpack them back.

    .venv/bin/python bench/traces.py pack               # every traces file under bench/results
    .venv/bin/python bench/traces.py unpack bench/results/orchestration/mix_world_qa+chain_sum   # before resuming

Readers take either form (`orchrm.jsonl.read`, `orchrm.mas.traces.locate_traces`); writers refuse a folder
that holds only the `.gz` (nothing is appended to a compressed file), so a bench that resumes or appends into a
committed run folder is run after `unpack`. Packing is deterministic (no name, mtime 0, level 9): the same
`traces.jsonl` always packs to the same bytes, so re-packing an unchanged run leaves git with nothing to
commit. Each output is written atomically and only then is the input removed; a file already in the wanted
form is skipped, so both commands are idempotent.
"""

from __future__ import annotations

import argparse
import gzip
import sys
from pathlib import Path

from files import write_bytes_atomic
from orchrm.mas import TRACES_FILE

RESULTS = Path(__file__).parent / "results"
PACKED = TRACES_FILE + ".gz"


def pack_bytes(data: bytes) -> bytes:
    """gzip with no file name and mtime 0: the same input always gives the same bytes."""
    return gzip.compress(data, compresslevel=9, mtime=0)


def traces_files(paths: list[Path]) -> list[Path]:
    """Every traces file (either form) at or under `paths`; default bench/results."""
    found: list[Path] = []
    for path in paths or [RESULTS]:
        if path.is_dir():
            found += [p for p in sorted(path.rglob(f"{TRACES_FILE}*")) if p.name in (TRACES_FILE, PACKED)]
        elif path.name in (TRACES_FILE, PACKED) and path.is_file():
            found.append(path)
        else:
            raise SystemExit(f"error: {path}: not a traces file or a folder")
    return found


def pack(path: Path) -> tuple[int, int] | None:
    """`traces.jsonl` -> `traces.jsonl.gz`; None when there is nothing to pack."""
    if path.name != TRACES_FILE:
        return None
    data = path.read_bytes()
    packed = pack_bytes(data)
    write_bytes_atomic(path.with_name(PACKED), packed)
    path.unlink()
    return len(data), len(packed)


def unpack(path: Path) -> tuple[int, int] | None:
    """`traces.jsonl.gz` -> `traces.jsonl`; None when there is nothing to unpack."""
    if path.name != PACKED:
        return None
    target = path.with_name(TRACES_FILE)
    if target.exists():
        raise SystemExit(f"error: {target} and {path} both exist; keep one (the .jsonl may hold appended records)")
    packed = path.read_bytes()
    try:
        data = gzip.decompress(packed)
    except (OSError, EOFError) as exc:
        raise SystemExit(f"error: {path}: not a readable gzip file ({exc})") from None
    write_bytes_atomic(target, data)
    path.unlink()
    return len(packed), len(data)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["pack", "unpack"])
    parser.add_argument("paths", nargs="*", type=Path, help="traces files or folders (default: bench/results)")
    args = parser.parse_args(argv)
    step = pack if args.command == "pack" else unpack
    before = after = done = 0
    for path in traces_files(args.paths):
        sizes = step(path)
        if sizes is None:
            continue
        done += 1
        before, after = before + sizes[0], after + sizes[1]
        print(f"{args.command}ed {path}: {sizes[0] / 1e6:.2f} MB -> {sizes[1] / 1e6:.2f} MB")
    print(f"{args.command}ed {done} file(s): {before / 1e6:.2f} MB -> {after / 1e6:.2f} MB", file=sys.stderr)


if __name__ == "__main__":
    main()
