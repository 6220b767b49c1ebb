"""Atomic files and folders: a process killed at any step leaves the old complete output or the new one."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from orchrm import atomic
from orchrm.atomic import clean_leftovers, open_atomic, recover, replacing_dir, write_text_atomic

# Runs in a child: replace FOLDER (holding a.txt/b.txt = "old") with a new one ("new"), dying with
# os._exit before the K-th filesystem step (rename, replace, exchange or removal).
_CHILD = textwrap.dedent(
    """
    import os, shutil, sys
    from pathlib import Path
    from orchrm import atomic

    folder, k, exchange = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "1"
    calls = [0]

    def dying(fn):
        def wrapper(*a, **kw):
            calls[0] += 1
            if calls[0] == k:
                os._exit(9)
            return fn(*a, **kw)
        return wrapper

    os.rename, os.replace, shutil.rmtree = dying(os.rename), dying(os.replace), dying(shutil.rmtree)
    atomic._exchange = dying(atomic._exchange) if exchange else dying(lambda a, b: False)
    with atomic.replacing_dir(folder) as tmp:
        for name in ("a.txt", "b.txt"):
            (tmp / name).write_text("new")
    print("steps", calls[0])
    """
)


def _state(folder: Path) -> str:
    files = sorted(p.name for p in folder.iterdir())
    assert files == ["a.txt", "b.txt"], files
    texts = {(folder / f).read_text() for f in files}
    assert len(texts) == 1, "a folder mixing old and new files"
    return texts.pop()


@pytest.mark.parametrize("exchange", [True, False], ids=["renameat2", "fallback"])
def test_folder_replacement_killed_at_every_step(tmp_path, exchange):
    seen = set()
    for k in range(1, 10):
        folder = tmp_path / f"k{k}" / "out"
        folder.mkdir(parents=True)
        for name in ("a.txt", "b.txt"):
            (folder / name).write_text("old")
        env = {**os.environ, "PYTHONPATH": str(Path(atomic.__file__).parents[1])}
        child = subprocess.run(
            [sys.executable, "-c", _CHILD, str(folder), str(k), "1" if exchange else "0"],
            env=env,
            capture_output=True,
            text=True,
        )
        recover(folder)  # what every loader does first
        seen.add(_state(folder))
        if child.returncode == 0:
            break
        assert child.returncode == 9, child.stderr
        # the next write cleans up after the killed one and succeeds
        with replacing_dir(folder) as tmp:
            for name in ("a.txt", "b.txt"):
                (tmp / name).write_text("newer")
        assert _state(folder) == "newer"
        assert [p.name for p in folder.parent.iterdir()] == ["out"]
    else:
        pytest.fail("the child never finished")
    assert seen == {"old", "new"}


def test_an_error_inside_the_block_keeps_the_old_folder(tmp_path):
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "a.txt").write_text("old")
    with pytest.raises(RuntimeError), replacing_dir(folder) as tmp:
        (tmp / "a.txt").write_text("half")
        raise RuntimeError("killed")
    assert (folder / "a.txt").read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


def test_first_write_of_a_folder(tmp_path):
    with replacing_dir(tmp_path / "deep" / "out") as tmp:
        (tmp / "x").write_text("1")
    assert (tmp_path / "deep" / "out" / "x").read_text() == "1"


def test_file_write_is_all_or_nothing(tmp_path):
    path = tmp_path / "run.json"
    write_text_atomic(path, "old")
    with pytest.raises(RuntimeError), open_atomic(path) as f:
        f.write("half")
        raise RuntimeError("killed")
    assert path.read_text() == "old"
    write_text_atomic(path, "new")
    assert path.read_text() == "new" and [p.name for p in tmp_path.iterdir()] == ["run.json"]


def test_leftovers_of_dead_processes_are_removed_and_live_ones_kept(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid = int(dead.stdout)
    (tmp_path / f".out.orchrm-tmp-{dead_pid}-abcd").mkdir()
    (tmp_path / f".run.json.orchrm-tmp-{dead_pid}-abcd").write_text("x")
    (tmp_path / f".out.orchrm-tmp-{os.getpid()}-live").mkdir()
    removed = clean_leftovers(tmp_path / "out")
    assert [p.name for p in removed] == [f".out.orchrm-tmp-{dead_pid}-abcd"]
    assert (tmp_path / f".out.orchrm-tmp-{os.getpid()}-live").exists()
    write_text_atomic(tmp_path / "run.json", "{}")
    assert not (tmp_path / f".run.json.orchrm-tmp-{dead_pid}-abcd").exists()
