"""Crash-safe outputs: at every instant a path holds the old complete file or folder, or the new complete one.

A new file or folder is built beside its target under a hidden temporary name, flushed to disk, then
renamed over the target in one step. Folders are swapped with Linux's `renameat2(RENAME_EXCHANGE)`; where
that is missing the fallback renames the old folder aside first, and `recover` (called by every loader
and writer of the path) puts it back if a kill came between the two renames. Temporary siblings left by a
killed run carry its pid and are removed by the next write to the same path once that pid is gone.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from . import safejson

_TMP, _OLD = "orchrm-tmp", "orchrm-old"  # `.NAME.<mark>-<pid>-<random>` beside NAME
_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


def _sibling(path: Path, mark: str) -> Path:
    return path.with_name(f".{path.name}.{mark}-{os.getpid()}-{uuid.uuid4().hex[:8]}")


def _siblings(path: Path, mark: str) -> list[tuple[Path, int]]:
    """Existing `mark` siblings of `path` with the pid that made each."""
    prefix = f".{path.name}.{mark}-"
    out = []
    if path.parent.is_dir():
        for entry in path.parent.iterdir():
            if entry.name.startswith(prefix):
                pid = safejson.bounded_int(entry.name[len(prefix) :].split("-", 1)[0], high=2**31)
                if pid is not None:
                    out.append((entry, pid))
    return out


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def fsync_dir(folder: Path) -> None:
    """Make a rename inside `folder` durable (the rename itself lives in the directory's own blocks)."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def recover(path: Path) -> None:
    """Undo a fallback swap killed between its two renames: the old folder aside and nothing at `path`."""
    if path.exists() or path.is_symlink():
        return
    aside = [entry for entry, pid in _siblings(path, _OLD) if not _alive(pid)]
    if aside:
        os.rename(max(aside, key=lambda p: p.stat().st_mtime), path)
        fsync_dir(path.parent)


def clean_leftovers(path: Path) -> list[Path]:
    """Remove the temporary siblings of `path` left by killed runs (after restoring an old folder set aside)."""
    recover(path)
    removed = []
    for mark in (_TMP, _OLD):
        for entry, pid in _siblings(path, mark):
            if not _alive(pid):
                _remove(entry)
                removed.append(entry)
    return removed


@contextlib.contextmanager
def open_atomic(path: Path, mode: str = "w", **kwargs: Any) -> Iterator[IO[Any]]:
    """A file to write that replaces `path` only once it is complete and on disk; an error leaves `path` as it was."""
    path.parent.mkdir(parents=True, exist_ok=True)
    clean_leftovers(path)
    tmp = _sibling(path, _TMP)
    try:
        with open(tmp, mode, **kwargs) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        fsync_dir(path.parent)
    finally:
        tmp.unlink(missing_ok=True)


def write_text_atomic(path: Path, text: str) -> None:
    with open_atomic(path, "w", encoding="utf-8") as f:
        f.write(text)


def write_bytes_atomic(path: Path, data: bytes) -> None:
    with open_atomic(path, "wb") as f:
        f.write(data)


def copy_file_atomic(src: Path, dest: Path, mode: int | None = None) -> None:
    """Copy `src` to `dest` so that `dest` is never a half-copied file."""
    with open_atomic(dest, "wb") as out, open(src, "rb") as f:
        shutil.copyfileobj(f, out, 1 << 22)
        if mode is not None:
            os.fchmod(out.fileno(), mode)


def _fsync_tree(folder: Path) -> None:
    for root, _dirs, files in os.walk(folder):
        for name in files:
            fd = os.open(os.path.join(root, name), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        fsync_dir(Path(root))


def _exchange(a: Path, b: Path) -> bool:
    """Swap two existing paths in one step; False where the kernel, libc or filesystem cannot."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False
    raise OSError(err, f"renameat2({a}, {b}, RENAME_EXCHANGE): {os.strerror(err)}")


def swap_in(new: Path, target: Path) -> None:
    """Put the complete folder `new` at `target`, replacing what is there; `new` no longer exists afterwards."""
    if not (target.exists() or target.is_symlink()):
        os.rename(new, target)
    elif _exchange(new, target):
        _remove(new)  # now the old folder
    else:
        aside = _sibling(target, _OLD)
        os.rename(target, aside)  # a kill here leaves nothing at target: `recover` renames it back
        os.rename(new, target)
        _remove(aside)
    fsync_dir(target.parent)


@contextlib.contextmanager
def replacing_dir(target: Path) -> Iterator[Path]:
    """An empty folder beside `target` to fill; when the block ends without error it replaces `target`."""
    target.parent.mkdir(parents=True, exist_ok=True)
    clean_leftovers(target)
    tmp = _sibling(target, _TMP)
    tmp.mkdir()
    try:
        yield tmp
        _fsync_tree(tmp)
        swap_in(tmp, target)
    finally:
        if tmp.exists():
            _remove(tmp)
