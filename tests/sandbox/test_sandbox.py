"""Containment tests: each hostile script really runs, is contained, and the caller goes on."""

import os
import subprocess
import time

import pytest

from orchrm.sandbox import LAYERS, SandboxLimits, run_python

FAST = SandboxLimits(cpu_s=1, wall_s=4, memory_bytes=256 * 2**20, output_bytes=8192, processes=8)


def _live_sandbox_processes() -> list[str]:
    """Processes still alive under a sandbox uid (zombies awaiting their reaper hold nothing and are skipped)."""
    out = subprocess.run(["ps", "-eo", "uid=,stat=,pid=,cmd="], capture_output=True, text=True).stdout
    rows = [ln.split() for ln in out.splitlines() if ln.split()]
    return [" ".join(r) for r in rows if 200_000 <= int(r[0]) < 260_000 and not r[1].startswith("Z")]


def test_plain_script_runs_in_scratch_with_clean_env(monkeypatch):
    monkeypatch.setenv("ORCHRM_TEST_SECRET", "hunter2")
    r = run_python(
        "import os, sys; print(sorted(os.environ)); print(open('data.txt').read())",
        limits=FAST,
        files={"data.txt": "hello"},
    )
    assert r.ok, r
    assert "hello" in r.stdout
    assert "ORCHRM_TEST_SECRET" not in r.stdout and "hunter2" not in r.stdout
    assert set(r.isolation) == set(LAYERS)


def test_nonzero_exit_is_error_with_stderr():
    r = run_python("raise SystemExit('bad input')", limits=FAST)
    assert r.outcome == "error" and r.exit_code == 1 and "bad input" in r.stderr


def test_infinite_loop_hits_cpu_limit():
    start = time.monotonic()
    r = run_python("while True: pass", limits=FAST)
    assert r.outcome in ("cpu_limit", "timeout")
    assert time.monotonic() - start < FAST.wall_s + 2


def test_sleeping_script_hits_wall_clock_limit():
    r = run_python("import time; time.sleep(60)", limits=SandboxLimits(cpu_s=1, wall_s=1.0))
    assert r.outcome == "timeout" and r.signal == "SIGKILL"


def test_fork_bomb_is_contained_and_leaves_nothing_behind():
    bomb = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"
    r = run_python(bomb, limits=SandboxLimits(cpu_s=1, wall_s=2, processes=8))
    assert r.outcome in ("timeout", "cpu_limit")
    deadline = time.monotonic() + 3
    while _live_sandbox_processes() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _live_sandbox_processes() == []
    # and the caller goes on: the next run works
    assert run_python("print('after')", limits=FAST).stdout.strip() == "after"


@pytest.mark.parametrize(
    "bomb",
    [
        "import os\nwhile True:\n    os.fork()\n",
        "import subprocess\nprocs = [subprocess.Popen(['sleep', '2']) for _ in range(50)]\n",
    ],
    ids=["fork", "spawn"],
)
def test_uncaught_process_limit_is_a_process_limit_outcome(bomb):
    r = run_python(bomb, limits=FAST)
    assert r.outcome == "process_limit", r.stderr[-300:]
    assert r.exit_code == 1


@pytest.mark.parametrize("path", ["big.bin", "/tmp/big.bin"])
def test_oversized_file_write_is_an_output_limit_outcome(path):
    r = run_python(f"with open({path!r}, 'wb') as f:\n    f.write(b'x' * {4 * FAST.output_bytes})\n", limits=FAST)
    assert r.outcome == "output_limit", r.stderr[-300:]
    assert not r.truncated  # stdout and stderr were small: it was the file that hit the limit


def test_a_caught_limit_and_a_look_alike_message_are_not_limits():
    caught = (
        "import os\n"
        "try:\n"
        "    open('big.bin', 'wb').write(b'x' * 100000)\n"
        "except OSError as e:\n"
        "    print('caught', e.errno)\n"
    )
    r = run_python(caught, limits=FAST)
    assert r.outcome == "ok" and "caught 27" in r.stdout
    r = run_python("raise ValueError('[Errno 27] File too large, says the user')", limits=FAST)
    assert r.outcome == "error"


def test_memory_bomb_hits_memory_limit():
    r = run_python("x = bytearray(4 * 2**30)", limits=FAST)
    assert r.outcome == "memory_limit"
    r = run_python("chunks = []\nwhile True:\n    chunks.append(b' ' * 2**20)", limits=FAST)
    assert r.outcome == "memory_limit"


def test_files_outside_scratch_are_unreachable(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET")
    code = (
        f"for p in [{str(secret)!r}, '/etc/passwd', {os.path.abspath(__file__)!r}]:\n"
        "    try:\n"
        "        print(open(p).read()[:20])\n"
        "    except OSError as e:\n"
        "        print('denied', type(e).__name__)\n"
    )
    r = run_python(code, limits=FAST)
    assert r.ok
    assert r.isolation["fs"], r.notes
    assert "TOP-SECRET" not in r.stdout and "root:" not in r.stdout
    assert r.stdout.count("denied") == 3


def test_network_is_unreachable():
    code = (
        "import socket\n"
        "try:\n"
        "    socket.create_connection(('1.1.1.1', 80), timeout=2)\n"
        "    print('CONNECTED')\n"
        "except OSError as e:\n"
        "    print('blocked', e.errno)\n"
    )
    r = run_python(code, limits=FAST)
    assert r.ok and "CONNECTED" not in r.stdout and "blocked" in r.stdout
    assert r.isolation["net"]


def test_output_flood_is_cut_at_the_limit():
    r = run_python("import sys\nwhile True:\n    sys.stdout.write('x' * 4096)", limits=FAST)
    assert r.outcome == "output_limit" and r.truncated
    assert len(r.stdout) <= FAST.output_bytes


def test_degraded_isolation_is_recorded_not_silent():
    r = run_python("print('hi')", limits=FAST, isolation=())
    assert r.ok
    assert not r.isolation["fs"] and not r.isolation["net"] and not r.fully_isolated
    assert any("fs: not requested" in n for n in r.notes)


def test_input_files_cannot_escape_scratch():
    with pytest.raises(ValueError):
        run_python("pass", files={"../escape.txt": "x"})
