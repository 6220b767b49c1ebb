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

from mas_fakes import by_prompt, make_task, replies, run_config, scripted_llm
from orchrm.errors import ConfigError
from orchrm.mas.orchestrator import OrchestratorConfig
from orchrm.mas.rollout import arollout, replay
from orchrm.mas.run_config import RolloutSettings
from orchrm.mas.traces import RunFileError, read_traces


def test_rollout_writes_one_trace_per_question_and_plan(tmp_path):
    task = make_task(tmp_path)
    llm = scripted_llm(replies())
    out = tmp_path / "run"
    seen = []
    progress = asyncio.run(
        arollout(task, llm, out, run_config(), on_progress=lambda p: seen.append((p.plans_done, p.questions_done)))
    ).progress
    traces = read_traces(out / "traces.jsonl")
    assert Counter(t.key for t in traces) == Counter({(q.id, i): 1 for q in task.questions(3) for i in range(2)})
    assert progress.plans_done == 6 and progress.plans_valid == 3 and progress.questions_done == 3
    assert seen[-1] == (6, 3) and [q for plans, q in seen if plans == 6] == [3]  # the last plan's report counts all
    assert [q for _, q in seen] == sorted(q for _, q in seen)  # each question counted once, with its last plan
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
    progress = asyncio.run(arollout(task, llm, out, run_config(n_questions=3))).progress  # and grow the run
    traces = read_traces(path)
    assert Counter(t.key for t in traces).most_common(1)[0][1] == 1
    assert len(traces) == 6 and progress.resumed == 2
    assert path.read_bytes().endswith(b"\n")


def test_a_finished_packed_run_resumes_as_done_and_one_that_grows_asks_to_unpack(tmp_path):
    import gzip

    task = make_task(tmp_path)
    out = tmp_path / "run"
    asyncio.run(arollout(task, scripted_llm(replies()), out, run_config(n_questions=2)))
    path = out / "traces.jsonl"
    (out / "traces.jsonl.gz").write_bytes(gzip.compress(path.read_bytes(), mtime=0))
    path.unlink()  # how committed results are stored
    llm = scripted_llm(replies())
    result = asyncio.run(arollout(task, llm, out, run_config(n_questions=2)))
    assert result.progress.resumed == 4 and len(result.traces()) == 4 and not path.exists()
    assert "plan" not in llm.ledger.totals()  # nothing sampled
    with pytest.raises(RunFileError, match="compressed"):
        asyncio.run(arollout(task, scripted_llm(replies()), out, run_config(n_questions=3)))
    assert not path.exists() and json.loads((out / "run.json").read_text())["n_questions"] == 2


def test_a_grown_resume_that_fails_leaves_run_json_byte_for_byte_and_one_that_succeeds_records_it(tmp_path):
    task = make_task(tmp_path)
    out = tmp_path / "run"
    asyncio.run(arollout(task, scripted_llm(replies()), out, run_config(n_questions=1)))
    before = (out / "run.json").read_bytes()
    third = task.questions(3)[2].question

    def failing(messages, config):
        if third in messages[-1].content:
            raise RuntimeError("the server went away")
        return replies()(messages, config)

    with pytest.raises(RuntimeError, match="went away"):
        asyncio.run(arollout(task, scripted_llm(failing), out, run_config(n_questions=3)))
    assert (out / "run.json").read_bytes() == before
    asyncio.run(arollout(task, scripted_llm(replies()), out, run_config(n_questions=3)))
    grown = json.loads((out / "run.json").read_text())
    assert grown["n_questions"] == 3 and grown["created"] == json.loads(before)["created"]


def test_rollout_returns_what_it_wrote_and_reads_back_only_its_own_questions(tmp_path):
    task = make_task(tmp_path)
    out = tmp_path / "run"
    asyncio.run(arollout(task, scripted_llm(replies()), out, run_config(execute="none", n_questions=3)))
    smaller = asyncio.run(arollout(task, scripted_llm(replies()), out, run_config(execute="none", n_questions=2)))
    assert smaller.traces_path == out / "traces.jsonl" and smaller.question_ids == [q.id for q in task.questions(2)]
    assert smaller.progress.resumed == 4 and len(read_traces(smaller.traces_path)) == 6
    assert {t.question_id for t in smaller.traces()} == set(smaller.question_ids) and len(smaller.traces()) == 4
    grouped = smaller.first_plans(1)
    assert list(grouped) == smaller.question_ids and all([t.plan_index for t in p] == [0] for p in grouped.values())


def test_resume_refuses_other_settings(tmp_path):
    task = make_task(tmp_path)
    asyncio.run(arollout(task, scripted_llm(replies()), tmp_path / "r", run_config(execute="none")))
    with pytest.raises(ConfigError, match="temperature"):
        asyncio.run(
            arollout(task, scripted_llm(replies()), tmp_path / "r", run_config(execute="none", temperature=1.0))
        )


def test_a_run_made_before_per_question_seeds_resumes_with_seed_plus_index(tmp_path):
    task = make_task(tmp_path)
    out = tmp_path / "r"
    asyncio.run(arollout(task, scripted_llm(replies()), out, run_config(execute="none", n_questions=1)))
    run = json.loads((out / "run.json").read_text())
    assert run["version"] == 3
    (out / "run.json").write_text(json.dumps({**run, "version": 1}))  # as a version-1 orchrm left it
    llm = scripted_llm(replies())
    asyncio.run(arollout(task, llm, out, run_config(execute="none", n_questions=3)))  # grown by two questions
    assert sorted(call[2] for call in llm.backend.calls) == [0, 0, 1, 1]  # seed 0 + plan index, as it began
    assert json.loads((out / "run.json").read_text())["version"] == 1
    fresh = scripted_llm(replies())
    asyncio.run(arollout(task, fresh, tmp_path / "new", run_config(execute="none", n_questions=2)))
    assert len({call[2] for call in fresh.backend.calls}) == 4  # a new run: every plan its own draw


def test_a_version_2_run_resumes_with_a_request_and_a_hashed_seed_per_plan(tmp_path):
    task = make_task(tmp_path)
    out = tmp_path / "r"
    asyncio.run(arollout(task, scripted_llm(replies()), out, run_config(execute="none", n_questions=1)))
    run = json.loads((out / "run.json").read_text())
    (out / "run.json").write_text(json.dumps({**run, "version": 2}))
    llm = scripted_llm(replies())
    asyncio.run(arollout(task, llm, out, run_config(execute="none", n_questions=2)))
    question = task.questions(2)[1].question
    old = OrchestratorConfig(RolloutSettings(seed=0), seeds="question")
    assert sorted(call[2] for call in llm.backend.calls) == sorted(old.plan_seed(question, i) for i in range(2))
    assert json.loads((out / "run.json").read_text())["version"] == 2


def test_a_questions_plans_are_drawn_with_consecutive_seeds_and_recorded(tmp_path):
    task = make_task(tmp_path)
    out = tmp_path / "r"
    asyncio.run(arollout(task, scripted_llm(replies()), out, run_config(execute="none", n_questions=2, n_plans=3)))
    by_q: dict[str, list[int]] = {}
    for t in read_traces(out / "traces.jsonl"):
        by_q.setdefault(t.question_id, []).append(t.orchestrator.plan_seed)
    seeds = [sorted(v) for v in by_q.values()]
    assert all(s == list(range(s[0], s[0] + 3)) for s in seeds) and seeds[0][0] != seeds[1][0]


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


# --- orchestrator and sub-agents on separate models -----------------------------------------------------


def _two_llms(cache=None, delay_s=0.0):
    """A "big" orchestrator that only writes plans and a "small" agent model that only answers sub-tasks,
    sharing one ledger (and cache) as `open_llms` makes them; each fails loudly when asked the other's job."""
    from orchrm.llm import LLM
    from orchrm.llm.scripted import ScriptedBackend

    plans, sums = replies(), replies()

    def plan_only(messages, config):
        assert "orchestrator" in messages[0].content, "a sub-agent call reached the orchestrator model"
        return plans(messages, config)

    def agent_only(messages, config):
        assert "orchestrator" not in messages[0].content, "a plan call reached the agent model"
        return sums(messages, config)

    big = LLM(ScriptedBackend([plan_only], name="big", delay_s=delay_s), cache=cache)
    small = LLM(ScriptedBackend([agent_only], name="small", delay_s=delay_s), cache=cache, ledger=big.ledger)
    return big, small


def test_plans_go_to_the_orchestrator_and_agents_to_the_agent_model(tmp_path):
    big, small = _two_llms()
    cfg = run_config(agent_backend="scripted", agent_model_id="small")
    asyncio.run(arollout(make_task(tmp_path), big, tmp_path / "r", cfg, agent_llm=small))
    assert len(big.backend.calls) == 6 and len(small.backend.calls) == 12  # 6 plans; 3 valid x 4 agent calls
    traces = read_traces(tmp_path / "r" / "traces.jsonl")
    assert {(t.orchestrator.model_id, t.agent_backend, t.agent_model_id) for t in traces} == {
        ("big", "scripted", "small")
    }
    assert all(t.score.correct for t in traces if t.valid)
    by_model = {(r.category, r.model_id) for r in big.ledger.records}
    assert by_model == {("plan", "big"), ("execute", "small")}
    run = json.loads((tmp_path / "r" / "run.json").read_text())
    assert (run["agent_backend"], run["agent_model_id"]) == ("scripted", "small")


def test_one_model_records_itself_as_the_agent_model(tmp_path):
    asyncio.run(arollout(make_task(tmp_path), scripted_llm(replies()), tmp_path / "r", run_config(n_questions=1)))
    [t, _] = read_traces(tmp_path / "r" / "traces.jsonl")
    assert t.agent_model_id == t.orchestrator.model_id == t.agent_model == "scripted-model"
    old = t.model_copy(update={"agent_backend": None, "agent_model_id": None})  # a trace from before the field
    assert old.agent_model == "scripted-model"


@pytest.mark.parametrize("role", ["orchestrator", "agent"])
def test_unreachable_model_is_one_error_and_nothing_written(role, tmp_path):
    import socket

    from orchrm.errors import BackendUnreachable
    from orchrm.llm import LLM, OpenAIBackend

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    dead = LLM(OpenAIBackend(url, "m", max_retries=0))
    alive = scripted_llm(replies())
    orch, agent = (dead, alive) if role == "orchestrator" else (alive, dead)
    with pytest.raises(BackendUnreachable, match=f"^{role} model at {url} is not reachable"):
        asyncio.run(arollout(make_task(tmp_path), orch, tmp_path / "r", run_config(), agent_llm=agent))
    assert not (tmp_path / "r").exists() and alive.backend.calls == []


def test_resume_refuses_another_agent_model(tmp_path):
    task = make_task(tmp_path)
    asyncio.run(arollout(task, scripted_llm(replies()), tmp_path / "r", run_config(execute="none")))
    with pytest.raises(ConfigError, match="agent_model_id: '' -> 'small'"):
        asyncio.run(
            arollout(task, *_two_llms()[:1], tmp_path / "r", run_config(execute="none", agent_model_id="small"))
        )


def test_rerun_with_two_models_replays_every_call_from_the_cache(tmp_path):
    from orchrm.llm import ResponseCache

    task, cfg = make_task(tmp_path), run_config(agent_backend="scripted", agent_model_id="small")
    big, small = _two_llms(ResponseCache(tmp_path / "c.sqlite"))
    asyncio.run(arollout(task, big, tmp_path / "a", cfg, agent_llm=small))
    again_big, again_small = _two_llms(ResponseCache(tmp_path / "c.sqlite"))
    asyncio.run(arollout(task, again_big, tmp_path / "b", cfg, agent_llm=again_small))
    assert again_big.backend.calls == [] and again_small.backend.calls == []
    first, second = (read_traces(tmp_path / d / "traces.jsonl") for d in "ab")
    assert sorted((t.key, t.final_answer) for t in first) == sorted((t.key, t.final_answer) for t in second)


def test_replay_runs_the_plan_on_the_agent_model(tmp_path):
    task = make_task(tmp_path)
    asyncio.run(arollout(task, scripted_llm(replies()), tmp_path / "r", run_config(n_questions=1)))
    [good] = [t for t in read_traces(tmp_path / "r" / "traces.jsonl") if t.valid]
    big, small = _two_llms()
    again = asyncio.run(replay(good, task, big, agent_llm=small))
    assert big.backend.calls == [] and len(small.backend.calls) == 4 and again.agent_model_id == "small"


KILLABLE_TWO = textwrap.dedent(
    """
    import asyncio, sys
    from pathlib import Path
    from orchrm.mas.rollout import RunConfig, arollout
    from orchrm.tasks.user import JsonlTask
    from test_run import _two_llms
    big, small = _two_llms(delay_s=float(sys.argv[1]))
    cfg = RunConfig(
        task="jsonl", n_questions=8, n_plans=3, temperature=0.5, agent_backend="scripted", agent_model_id="small"
    )
    asyncio.run(arollout(JsonlTask(Path({qs!r})), big, Path({out!r}), cfg, agent_llm=small, parallel_questions=2))
    """
)


def test_kill_9_with_two_models_then_rerun_gives_one_record_per_pair(tmp_path):
    make_task(tmp_path)
    out = tmp_path / "killed"
    script = tmp_path / "run.py"
    script.write_text(KILLABLE_TWO.format(qs=str(tmp_path / "qs.jsonl"), out=str(out)))
    here = Path(__file__).parents
    paths = [here[1] / "support", here[0], here[2] / "src"]  # this tree's orchrm, not an installed one
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(map(str, paths))}
    proc = subprocess.Popen([sys.executable, str(script), "0.05"], env=env)
    path = out / "traces.jsonl"
    deadline = time.time() + 60
    while time.time() < deadline and not (path.exists() and path.read_bytes().count(b"\n") >= 5):
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert 5 <= path.read_bytes().count(b"\n") < 24, "the kill should land mid-run"
    subprocess.run([sys.executable, str(script), "0"], env=env, check=True, timeout=120)
    traces = read_traces(path)
    assert Counter(t.key for t in traces) == Counter({k: 1 for k in {t.key for t in traces}}) and len(traces) == 24
    assert {(t.orchestrator.model_id, t.agent_model_id) for t in traces} == {("big", "small")}


def test_a_templated_question_records_kind_dot_template_and_others_none():
    from orchrm.mas.rollout import question_template
    from orchrm.tasks.base import Question

    def q(**meta):
        return Question(id="q", question="?", answer="1", metadata=meta)

    assert question_template(q(kind="bridge", template="employer_city")) == "bridge.employer_city"
    assert question_template(q(template="employer_city")) == "employer_city"
    assert question_template(q(kind="chain_sum")) is None and question_template(q()) is None


def test_a_sub_agent_server_that_dies_stops_the_rollout_and_leaves_no_failed_trace(tmp_path):
    from orchrm.errors import BackendUnreachable

    task = make_task(tmp_path)
    out = tmp_path / "run"
    asyncio.run(arollout(task, scripted_llm(replies()), out, run_config(n_questions=1)))
    third = task.questions(3)[2].question

    def dead_agents(messages, config):
        system = messages[0].content if messages[0].role == "system" else ""
        if "orchestrator" not in system and "What is " in messages[-1].content and third in messages[-1].content:
            raise BackendUnreachable("cannot reach http://agents/v1")
        return replies()(messages, config)

    with pytest.raises(BackendUnreachable, match="cannot reach"):
        asyncio.run(arollout(task, scripted_llm(dead_agents), out, run_config(n_questions=3)))
    written = list(read_traces(out / "traces.jsonl"))
    assert not any(t.question == third and t.executed for t in written)  # no trace says the plan failed
    asyncio.run(arollout(task, scripted_llm(replies()), out, run_config(n_questions=3)))  # resumes
    assert sum(t.question == third and t.executed for t in read_traces(out / "traces.jsonl")) == 1
