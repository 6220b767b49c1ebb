import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path

import pytest

from orchrm.errors import ConfigError
from orchrm.mas.rollout import RunConfig, arollout, replay
from orchrm.mas.traces import RunFileError, read_traces
from orchrm.tasks.user import JsonlTask
from mas_fakes import by_prompt, make_task, replies, run_config, scripted_llm

def test_rollout_writes_one_trace_per_question_and_plan(tmp_path):
    task = make_task(tmp_path)
    llm = scripted_llm(replies())
    out = tmp_path / "run"
    seen = []
    progress = asyncio.run(arollout(task, llm, out, run_config(), on_progress=lambda p: seen.append(p.plans_done)))
    traces = read_traces(out / "traces.jsonl")
    assert Counter(t.key for t in traces) == Counter({(q.id, i): 1 for q in task.questions(3) for i in range(2)})
    assert progress.plans_done == 6 and progress.plans_valid == 3 and progress.questions_done == 3
    assert seen[-1] == 6
    good = [t for t in traces if t.valid]
    bad = [t for t in traces if not t.valid]
    assert all(t.plan_index == 0 for t in good) and all(t.plan_error.rule == "parse" for t in bad)
    for t in good:
        assert t.executed and t.final_agent == "b" and t.score.correct
        assert [e.type for e in t.agents] == ["cot", "self_consistency"]
        assert t.tokens["execute"].calls == 4 and t.tokens["plan"].calls == 1
        assert t.orchestrator.temperature == 0.5 and t.orchestrator.backend == "scripted"
    for t in bad:
        assert not t.executed and t.agents == [] and t.score is None and "execute" not in t.tokens
    run = json.loads((out / "run.json").read_text())
    assert run["n_plans"] == 2 and run["checkpoint"] == "base"


def test_execute_none_only_samples_plans(tmp_path):
    llm = scripted_llm(replies())
    asyncio.run(arollout(make_task(tmp_path), llm, tmp_path / "r", run_config(execute="none")))
    traces = read_traces(tmp_path / "r" / "traces.jsonl")
    assert len(traces) == 6 and not any(t.executed for t in traces)
    assert "execute" not in llm.ledger.totals()


def test_resume_skips_done_pairs_and_discards_a_torn_line(tmp_path):
    task = make_task(tmp_path)
    out = tmp_path / "run"
    asyncio.run(arollout(task, scripted_llm(replies()), out, run_config(n_questions=2)))
    path = out / "traces.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:2]) + lines[2][: len(lines[2]) // 2])  # killed mid-write
    llm = scripted_llm(replies())
    progress = asyncio.run(arollout(task, llm, out, run_config(n_questions=3)))  # and grow the run
    traces = read_traces(path)
    assert Counter(t.key for t in traces).most_common(1)[0][1] == 1
    assert len(traces) == 6 and progress.resumed == 2
    assert path.read_bytes().endswith(b"\n")


def test_resume_refuses_other_settings(tmp_path):
    task = make_task(tmp_path)
    asyncio.run(arollout(task, scripted_llm(replies()), tmp_path / "r", run_config(execute="none")))
    with pytest.raises(ConfigError, match="temperature"):
        asyncio.run(arollout(task, scripted_llm(replies()), tmp_path / "r", run_config(execute="none", temperature=1.0)))


def test_corrupt_line_names_file_and_line(tmp_path):
    out = tmp_path / "r"
    asyncio.run(arollout(make_task(tmp_path), scripted_llm(replies()), out, run_config(execute="none")))
    path = out / "traces.jsonl"
    lines = path.read_text().splitlines()
    lines[1] = '{"version": 1, "oops": true}'
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(RunFileError, match=r"traces.jsonl:2"):
        read_traces(path)
    lines[1] = "not json at all"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(RunFileError, match=r"traces.jsonl:2: not a JSON record"):
        asyncio.run(arollout(make_task(tmp_path), scripted_llm(replies()), out, run_config(execute="none")))


def test_scorer_failure_is_recorded_not_zeroed(tmp_path):
    from orchrm.tasks.scoring import ScoringTimeout

    task = make_task(tmp_path)

    def boom(prediction, question):
        raise ScoringTimeout("too slow")

    task.score = boom
    asyncio.run(arollout(task, scripted_llm(replies()), tmp_path / "r", run_config(n_questions=1)))
    [good] = [t for t in read_traces(tmp_path / "r" / "traces.jsonl") if t.valid]
    assert good.score.value is None and "too slow" in good.score.error


def test_replay_re_executes_a_traces_plan(tmp_path):
    task = make_task(tmp_path)
    asyncio.run(arollout(task, scripted_llm(replies()), tmp_path / "r", run_config(n_questions=1)))
    [good] = [t for t in read_traces(tmp_path / "r" / "traces.jsonl") if t.valid]
    llm = scripted_llm(by_prompt({}, default="Answer: 999"))
    again = asyncio.run(replay(good, task, llm))
    assert again.plan == good.plan and again.final_answer == "999" and again.score.correct is False
    assert len(llm.backend.calls) == 4


KILLABLE = textwrap.dedent(
    """
    import asyncio, json, sys
    from pathlib import Path
    from orchrm.mas.rollout import RunConfig, arollout
    from orchrm.tasks.user import JsonlTask
    from mas_fakes import scripted_llm
    from mas_fakes import replies
    delay = float(sys.argv[1])
    task = JsonlTask(Path({qs!r}))
    cfg = RunConfig(task="jsonl", n_questions=8, n_plans=3, temperature=0.5)
    asyncio.run(arollout(task, scripted_llm(replies(), delay_s=delay), Path({out!r}), cfg, parallel_questions=2))
    """
)


def test_kill_9_then_rerun_gives_exactly_one_record_per_pair(tmp_path):
    make_task(tmp_path)
    out = tmp_path / "killed"
    script = tmp_path / "run.py"
    script.write_text(KILLABLE.format(qs=str(tmp_path / "qs.jsonl"), out=str(out)))
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1] / "support")}
    proc = subprocess.Popen([sys.executable, str(script), "0.05"], env=env)
    path = out / "traces.jsonl"
    deadline = time.time() + 60
    while time.time() < deadline:
        if path.exists() and path.read_bytes().count(b"\n") >= 5:
            break
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    before = path.read_bytes().count(b"\n")
    assert 5 <= before < 24, "the kill should land mid-run"
    subprocess.run([sys.executable, str(script), "0"], env=env, check=True, timeout=120)
    traces = read_traces(path)
    counts = Counter(t.key for t in traces)
    assert len(counts) == 24 and set(counts.values()) == {1}
