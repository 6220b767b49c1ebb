"""OpenRLHF 0.11's own code calls orchrm: the README's commands parsed by `openrlhf.cli.train_ppo_ray`'s own
argparse (its `__main__` block, run up to `train(args)`: the trainer itself needs CUDA), the prompt and label
made by its dataset code, and its rollout's reward step (`SingleTurnAgentExecutor`, what each vLLM rollout actor
builds from `--reward.remote_url`) posting to a real `orchrm serve` or loading the file of
`orchrm.adapters.openrlhf`. Only vLLM's generation is stood in for. Needs OpenRLHF (ci/frameworks/openrlhf.txt)."""

import ast
import asyncio
import functools
import importlib.metadata
import importlib.util
import os
import re
import shlex
import subprocess
import sys
import time
from types import SimpleNamespace

import pytest
from framework_helpers import expected_reward, framework, readme_block

framework("openrlhf")

import httpx  # noqa: E402

from adapter_fakes import ITEMS  # noqa: E402
from live_server import free_port  # noqa: E402

TRAINER = "openrlhf.cli.train_ppo_ray"
SUBST = re.compile(r"\$\(python -c '([^']*)'\)")
VARIABLE = re.compile(r"\$(\w+)")


def test_openrlhf_is_the_pinned_release():
    assert importlib.metadata.version("openrlhf") == "0.11.2"


@functools.cache
def shell_commands():
    """The README block's commands, as a shell sees them: comments' commands too (the `# or in process:` and
    `# or on a Ray cluster:` forms),
    continuation lines joined, `$(python -c ...)` run, shell variables set by one line expanded in the next (and
    split into words, as an unquoted `$data` is). Each: (environment assignments, argv)."""
    lines = [
        re.sub(r"^#\s*(or (in process|on a Ray cluster):\s*)?", "", line) for line in readme_block(TRAINER).splitlines()
    ]
    commands, current = [], ""
    for line in lines:
        current += " " + line.rstrip()
        if not current.endswith("\\"):
            commands.append(current.strip().removesuffix("&").strip())
            current = ""
        current = current.removesuffix("\\")
    out, variables = [], {}
    for command in filter(None, commands):
        command = VARIABLE.sub(lambda m: variables[m.group(1)], command)
        command = SUBST.sub(
            lambda m: subprocess.run(
                [sys.executable, "-c", m.group(1)], check=True, capture_output=True, text=True
            ).stdout.strip(),
            command,
        )
        argv = shlex.split(command)
        env = {}
        while argv and re.fullmatch(r"[A-Za-z_]+=.*", argv[0]):
            key, value = argv.pop(0).split("=", 1)
            env[key] = value
        if argv:
            out.append((env, tuple(argv)))
        else:  # `name=value` alone: a shell variable for the lines below
            variables.update(env)
    return tuple(out)


def readme_prompts():
    """The README's `orchrm prompts` argv."""
    (prompts,) = [list(argv) for _, argv in shell_commands() if argv[:2] == ("orchrm", "prompts")]
    return prompts


def readme_runs():
    """The README's `orchrm serve` argv, and each trainer command: (environment, OpenRLHF's parsed args)."""
    commands = shell_commands()
    serve = [list(argv) for _, argv in commands if argv[:2] == ("orchrm", "serve")]
    trainers = [(env, argv) for env, argv in commands if argv[:3] == ("python", "-m", TRAINER)]
    assert len(serve) == 1 and len(trainers) == 2 and len(commands) == 5, commands
    runs = []
    for env, argv in trainers:
        argv = [a for a in argv[3:] if a != "..."]  # `...`: the rest of the user's command line
        runs.append((dict(env), openrlhf_args(argv)))
    return serve[0], runs


def openrlhf_args(argv):
    """`argv` parsed by OpenRLHF's own trainer CLI: the module's standard-library imports and its `__main__`
    block, run up to (not including) its final `train(args)` (parser, `hierarchize`, argument checks)."""
    path = importlib.util.find_spec(TRAINER).origin
    tree = ast.parse(open(path).read(), path)
    main = next(n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "__name__ == '__main__'")
    assert ast.unparse(main.body[-1]) == "train(args)"
    stdlib = [
        n
        for n in tree.body
        if isinstance(n, (ast.Import, ast.ImportFrom))
        and all((getattr(n, "module", None) or a.name).split(".")[0] in sys.stdlib_module_names for a in n.names)
    ]
    code = compile(ast.Module(body=[*stdlib, *main.body[:-1]], type_ignores=[]), path, "exec")
    namespace = {"__name__": "__main__"}
    saved = sys.argv
    sys.argv = [path, *argv]
    try:
        exec(code, namespace)
    finally:
        sys.argv = saved
    return namespace["args"]


def readme_ray_submit():
    """The README's `ray job submit` line: (its options before `--`, OpenRLHF's parsed args after it)."""
    (argv,) = [list(argv) for _, argv in shell_commands() if argv[:3] == ("ray", "job", "submit")]
    cut = argv.index("--")
    trainer = argv[cut + 1 :]
    assert trainer[:3] == ["python", "-m", TRAINER], trainer
    return argv[:cut], openrlhf_args([a for a in trainer[3:] if a != "..."])


def test_the_readme_commands_parse_with_openrlhfs_own_cli():
    serve, runs = readme_runs()
    (remote_env, remote), (file_env, file) = runs
    assert remote.data.label_key == file.data.label_key == "question"
    for args in (remote, file):  # the `orchrm prompts --format openrlhf` file, its chat prompt as the input
        assert args.data.prompt_dataset == "/abs/data/train.jsonl" and args.data.input_key == "prompt"
        assert args.data.apply_chat_template
    assert readme_prompts()[-2:] == ["--out", "/abs/data/train.jsonl"] and "openrlhf" in readme_prompts()
    assert remote.reward.remote_url == ["http://HOST:8765/openrlhf"] and remote_env == {}
    import orchrm.adapters.openrlhf as adapter

    assert file.reward.remote_url == [adapter.__file__] and file_env == {"ORCHRM_RM": "/abs/rm"}
    assert serve[:3] == ["orchrm", "serve", "--rm"] and "8765" in serve
    options, ray = readme_ray_submit()  # the in-process form again, its variables in the job's runtime env
    assert options[options.index("--runtime-env-json") + 1] == '{"env_vars": {"ORCHRM_RM": "/abs/rm"}}'
    assert ray.reward.remote_url == file.reward.remote_url and ray.data.label_key == "question"


@pytest.fixture(scope="module")
def orchrm_serve(rm_folder):
    """The README's `orchrm serve` line, run: the real CLI on a free port, the RM folder for /abs/rm."""
    serve, _ = readme_runs()
    port = free_port()
    argv = [a.replace("/abs/rm", str(rm_folder)).replace("8765", str(port)) for a in serve]
    exe = os.path.join(os.path.dirname(sys.executable), "orchrm")
    proc = subprocess.Popen([exe, *argv[1:]], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while True:
        try:
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                break
        except httpx.TransportError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"orchrm serve did not come up: {proc.communicate()[0][-2000:]}")
        time.sleep(0.2)
    yield url
    proc.terminate()
    proc.wait(10)


class Engine:
    """vLLM's AsyncLLMEngine, stood in for: it 'generates' each prompt's scripted responses, in the order asked."""

    def __init__(self, tokenizer, responses):
        self.tokenizer, self.responses = tokenizer, list(responses)

    async def generate(self, prompt_token_ids, sampling_params, multi_modal_data=None):
        prompt = self.tokenizer.decode(prompt_token_ids, skip_special_tokens=False)
        text = self.responses.pop(next(i for i, (p, _) in enumerate(self.responses) if p == prompt))[1]
        ids = self.tokenizer(text, add_special_tokens=False)["input_ids"] + [self.tokenizer.eos_token_id]
        return SimpleNamespace(outputs=[SimpleNamespace(token_ids=ids, finish_reason="stop", logprobs=None)])


@pytest.fixture(scope="module")
def prompts_folder(tmp_path_factory):
    """The README's `orchrm prompts` line, run as written with a folder for /abs/data."""
    folder = tmp_path_factory.mktemp("data")
    argv = [a.replace("/abs/data", str(folder)) for a in readme_prompts()]
    exe = os.path.join(os.path.dirname(sys.executable), "orchrm")
    subprocess.run([exe, *argv[1:]], check=True, capture_output=True, text=True)
    return folder


def openrlhf_prompts(args, tokenizer, folder):
    """OpenRLHF's training prompts from the README's file, read as its trainer's `prepare_datasets` reads them (its
    module imports Ray, which this venv leaves out: its two calls are made here with its arguments):
    `blending_datasets` loads the file, `PromptDataset` applies the chat template to `--data.input_key` and takes
    `--data.label_key` as the label; its `collate_fn` batches them. Each: (datasource, prompt, label)."""
    from openrlhf.datasets import PromptDataset
    from openrlhf.datasets.utils import blending_datasets
    from torch.utils.data import DataLoader

    args.data.prompt_dataset = args.data.prompt_dataset.replace("/abs/data", str(folder))
    strategy = SimpleNamespace(args=args, print=lambda *a: None, is_rank_0=lambda: True)  # DeepSpeed's, where it prints
    data = blending_datasets(
        args.data.prompt_dataset,
        args.data.prompt_probs,
        strategy,
        args.train.seed,
        max_count=args.data.max_samples,
        dataset_split=args.data.prompt_split,
    )
    dataset = PromptDataset(data, tokenizer, strategy, input_template=args.data.input_template)
    loader = DataLoader(dataset, 16, collate_fn=dataset.collate_fn)
    return [row for sources, prompts, labels, _ in loader for row in zip(sources, prompts, labels)]


def rollouts(args, tokenizer, pairs, texts):
    """OpenRLHF's rollout up to the rewards: for each (prompt, label) OpenRLHF's dataset made, its single-turn
    executor (built from `--reward.remote_url` as each vLLM rollout actor builds it) run concurrently, the response
    to the i-th prompt scripted as `texts[i]`."""
    from openrlhf.utils.agent import SingleTurnAgentExecutor

    engine = Engine(tokenizer, [(prompt, text) for (prompt, _), text in zip(pairs, texts)])
    executor = SingleTurnAgentExecutor(args.reward.remote_url)
    params = SimpleNamespace(max_tokens=1024, logprobs=None)

    async def run():
        return await asyncio.gather(
            *(executor.execute(prompt, label, params, 4096, tokenizer, engine) for prompt, label in pairs)
        )

    return executor, asyncio.run(run())


def test_openrlhfs_data_reader_loads_the_prompts_file(rm_folder, prompts_folder):
    from transformers import AutoTokenizer

    from orchrm.adapters.prompt_rows import prompt_rows
    from orchrm.tasks import load_task

    _, runs = readme_runs()
    _, args = runs[0]
    tokenizer = AutoTokenizer.from_pretrained(rm_folder)
    got = openrlhf_prompts(args, tokenizer, prompts_folder)
    made = prompt_rows(load_task("chain_sum"), "openrlhf")  # the verb's defaults: train-orchestrator's prompt set
    assert len(got) == len(made.rows) == 64
    for (source, prompt, label), row in zip(got, made.rows):
        messages = [m.model_dump() for m in row.prompt]
        assert prompt == tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        assert label == row.question and source == "orchrm/chain_sum"


@pytest.mark.parametrize("form", ["remote", "file"])
def test_openrlhfs_reward_step_pays_orchrms_reward(form, rm_folder, rm, orchrm_serve, prompts_folder, monkeypatch):
    from transformers import AutoTokenizer

    _, runs = readme_runs()
    env, args = runs[0] if form == "remote" else runs[1]
    if form == "remote":
        args.reward.remote_url = [u.replace("http://HOST:8765", orchrm_serve) for u in args.reward.remote_url]
    for key, value in env.items():
        monkeypatch.setenv(key, value.replace("/abs/rm", str(rm_folder)))
    tokenizer = AutoTokenizer.from_pretrained(rm_folder)
    pairs = [(prompt, label) for _, prompt, label in openrlhf_prompts(args, tokenizer, prompts_folder)[: len(ITEMS)]]
    texts = [text for _, text in ITEMS]  # a plan, a direct answer, prose, ... for the file's first questions
    executor, outputs = rollouts(args, tokenizer, pairs, texts)
    assert (executor.reward_func is not None) == (form == "file")  # the file, loaded by OpenRLHF itself

    want = [expected_reward(rm, question, text) for (_, question), text in zip(pairs, texts)]
    # OpenRLHF swallows a failed reward call (the reward stays None): every sample must have orchrm's reward
    assert [o["reward"] for o in outputs] == [pytest.approx([w], abs=1e-5) for w in want]
    assert [o["scores"] for o in outputs] == [pytest.approx([w], abs=1e-5) for w in want]  # dynamic filtering's value
    assert all(o["extra_logs"]["orchrm_unscored"] == [0.0] for o in outputs)
    assert [o["label"] for o in outputs] == [question for _, question in pairs]


def test_a_label_that_is_not_the_question_is_flagged(rm_folder, orchrm_serve, prompts_folder, monkeypatch):
    """Started without `--data.label_key`, OpenRLHF sends "" as every label: penalised and counted, not scored."""
    from transformers import AutoTokenizer

    _, runs = readme_runs()
    _, args = runs[0]
    args.reward.remote_url = [u.replace("http://HOST:8765", orchrm_serve) for u in args.reward.remote_url]
    args.data.label_key = None
    tokenizer = AutoTokenizer.from_pretrained(rm_folder)
    pairs = [(prompt, label) for _, prompt, label in openrlhf_prompts(args, tokenizer, prompts_folder)[:1]]
    _, outputs = rollouts(args, tokenizer, pairs, [ITEMS[0][1]])
    assert outputs[0]["label"] == "" and outputs[0]["extra_logs"]["orchrm_unscored"] == [1.0]
