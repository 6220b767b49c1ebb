"""OpenRLHF's in-process reward on a Ray cluster (issue 48): a local cluster started with `ray start`, a job sent
with the README's `ray job submit` line. The job runs OpenRLHF's own `ray.init` (the first statement of its
`train()`, which forwards only a few variables of its own), then a Ray actor standing for a vLLM rollout actor
builds OpenRLHF's `SingleTurnAgentExecutor` from `--reward.remote_url` (the adapter's file) and asks it for a
reward. With the README's runtime env the reward is orchrm's; with `ORCHRM_RM` only in the submitting shell,
the worker's first call fails naming the variables. Needs ray[default] (ci/frameworks/openrlhf.txt)."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import pytest
from framework_helpers import expected_reward, framework

framework("openrlhf")

from test_openrlhf_framework import readme_ray_submit  # noqa: E402

from adapter_fakes import GOOD  # noqa: E402
from live_server import free_port  # noqa: E402

RAY = os.path.join(os.path.dirname(sys.executable), "ray")
QUESTION = "What is 2 + 3?"
PROMPT = "<|im_start|>user\nplan it<|im_end|>\n<|im_start|>assistant\n"

#: The job: OpenRLHF's own ray.init (the first statement of train_ppo_ray.train), then a rollout actor's reward call.
DRIVER = """
import ast, asyncio, importlib.util, json, sys
path = importlib.util.find_spec("openrlhf.cli.train_ppo_ray").origin
train = next(n for n in ast.parse(open(path).read()).body if getattr(n, "name", None) == "train")
exec(compile(ast.Module(body=[*ast.parse("import os, ray").body, train.body[0]], type_ignores=[]), path, "exec"))
import ray

@ray.remote(num_cpus=0)
class Rollout:  # where OpenRLHF's LLMRayActor builds its executor from --reward.remote_url
    def reward(self, url, query, prompt, label):
        from openrlhf.utils.agent import SingleTurnAgentExecutor
        executor = SingleTurnAgentExecutor(url)
        try:
            return asyncio.run(executor._fetch_rewards_via_func([query], [prompt], [label]))[0]
        except Exception as exc:
            return {"error": f"{type(exc).__name__}: {exc}"}

url, query, prompt, label = json.loads(open(sys.argv[1]).read())
print("RESULT " + json.dumps(ray.get(Rollout.remote().reward.remote(url, query, prompt, label))), flush=True)
"""


def _clean_env():
    return {k: v for k, v in os.environ.items() if not k.startswith(("ORCHRM_", "RAY_"))}


@pytest.fixture(scope="module")
def cluster():
    """`ray start --head` in a short temp dir (socket paths are limited), stopped by its own pid's group."""
    temp = tempfile.mkdtemp(prefix="ray", dir="/tmp")
    port, dashboard = free_port(), free_port()
    argv = [RAY, "start", "--head", "--block", f"--temp-dir={temp}", f"--port={port}", "--num-cpus=2"]
    argv += ["--include-dashboard=true", f"--dashboard-port={dashboard}", "--disable-usage-stats"]
    head = subprocess.Popen(
        argv, env=_clean_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
    )
    address = f"http://127.0.0.1:{dashboard}"
    deadline = time.monotonic() + 180
    while subprocess.run([RAY, "job", "list", "--address", address], capture_output=True).returncode != 0:
        if head.poll() is not None or time.monotonic() > deadline:
            os.killpg(head.pid, 15)
            pytest.fail(f"ray start did not come up: {head.communicate(timeout=30)[0][-3000:]}")
        time.sleep(2)
    yield address
    os.killpg(head.pid, 15)  # ray start --block stops the cluster it started on SIGTERM
    try:
        head.wait(60)
    except subprocess.TimeoutExpired:
        os.killpg(head.pid, 9)
    shutil.rmtree(temp, ignore_errors=True)


def _submit(cluster, options, args, tmp_path, env=None):
    """The job: `ray job submit <options> -- python driver.py`, the driver given the trainer's reward file."""
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER)
    (url,) = args.reward.remote_url
    payload = tmp_path / "sample.json"  # a file: the entrypoint is one shell string
    payload.write_text(json.dumps([url, PROMPT + GOOD + "<|im_end|>", PROMPT, QUESTION]))
    argv = [RAY, *options[1:], "--", sys.executable, str(driver), str(payload)]  # options: the README's, from `job`
    argv = [a.replace("http://HEAD:8265", cluster) for a in argv]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, env={**_clean_env(), **(env or {})})
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert done.returncode == 0 and lines, done.stdout[-3000:] + done.stderr[-3000:]
    return json.loads(lines[-1].removeprefix("RESULT "))


def test_the_readmes_runtime_env_brings_the_rm_to_the_rollout_workers(cluster, rm_folder, rm, tmp_path):
    options, args = readme_ray_submit()
    import orchrm.adapters.openrlhf as adapter

    assert args.reward.remote_url == [adapter.__file__] and args.data.label_key == "question"
    options = [a.replace("/abs/rm", str(rm_folder)) for a in options]
    got = _submit(cluster, options, args, tmp_path)
    assert got["rewards"] == pytest.approx([expected_reward(rm, QUESTION, GOOD)], abs=1e-5)
    assert got["extra_logs"]["orchrm_unscored"] == [0.0]


def test_without_the_runtime_env_the_first_call_names_what_is_missing(cluster, rm_folder, tmp_path):
    options, args = readme_ray_submit()
    i = options.index("--runtime-env-json")
    options = options[:i] + options[i + 2 :]  # ORCHRM_RM only in the submitting shell, as a user would try first
    got = _submit(cluster, options, args, tmp_path, env={"ORCHRM_RM": str(rm_folder)})
    assert got["error"].startswith("ConfigError: orchrm's OpenRLHF reward: neither ORCHRM_RM")
    assert "--runtime-env-json" in got["error"]
