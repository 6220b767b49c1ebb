import json
import socket
import subprocess
import sys

import pytest

from fake_openai import Reply


def orchrm(*args, stdin=None):
    return subprocess.run(
        [sys.executable, "-m", "orchrm", *args], capture_output=True, text=True, input=stdin, timeout=120
    )


def _one_line_error(result, needle):
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert lines[0].startswith("error:") and needle in lines[0], result.stderr


def test_help_lists_verbs():
    out = orchrm("--help")
    assert out.returncode == 0
    for verb in ("generate", "models", "demo"):
        assert verb in out.stdout


def test_generate_against_served_model(fake):
    fake.queue(Reply(text="served answer", usage={"prompt_tokens": 9, "completion_tokens": 2}))
    out = orchrm("generate", "hello", "--backend", "openai", "--base-url", fake.url, "--model", "m")
    assert out.returncode == 0, out.stderr
    assert "served answer" in out.stdout and "token usage" in out.stdout


def test_generate_json_output_and_cache(fake):
    args = ("generate", "-", "--backend", "openai", "--base-url", fake.url, "--json", "-n", "2", "--seed", "1")
    first = json.loads(orchrm(*args, stdin="from stdin").stdout)
    assert [c["cached"] for c in first["completions"]] == [False, False]
    assert fake.requests[0]["messages"][0]["content"] == "from stdin"
    assert first["usage"]["execute"]["spent_prompt_tokens"] == 11  # two samples, one request: the prompt once
    assert len(fake.requests) == 1 and fake.requests[0]["n"] == 2
    second = json.loads(orchrm(*args, stdin="from stdin").stdout)
    assert [c["cached"] for c in second["completions"]] == [True, True]
    assert second["usage"]["execute"]["spent_prompt_tokens"] == 0
    assert len(fake.requests) == 1


def test_unreachable_server_is_one_line():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = orchrm("generate", "x", "--backend", "openai", "--base-url", f"http://127.0.0.1:{port}/v1", "--retries", "0")
    _one_line_error(out, "cannot reach")


def test_malformed_server_reply_is_one_line(fake):
    fake.queue(Reply(body=b"<html>oops</html>"))
    out = orchrm("generate", "x", "--backend", "openai", "--base-url", fake.url, "--model", "m", "--no-cache")
    _one_line_error(out, fake.url)


@pytest.mark.parametrize(
    "args, needle",
    [
        (("--model", "no-such-model"), "unknown model 'no-such-model'"),
        (("--backend", "magic"), "unknown backend 'magic'"),
        (("--backend", "openai"), "needs a base URL"),
        (("--backend", "local", "--base-url", "http://x/v1"), "--base-url is for the openai backend"),
    ],
)
def test_bad_arguments_are_one_line(args, needle):
    _one_line_error(orchrm("generate", "x", *args), needle)


def test_bad_schema_file(tmp_path, fake):
    bad = tmp_path / "s.json"
    bad.write_text("{oops")
    out = orchrm("generate", "x", "--backend", "openai", "--base-url", fake.url, "--schema", str(bad))
    _one_line_error(out, "not valid JSON")


def test_models_list():
    out = orchrm("models", "list")
    assert out.returncode == 0
    assert "qwen2.5-coder-0.5b" in out.stdout and "smollm2-135m" in out.stdout


def test_verb_summaries_are_the_commands_own_help():
    from orchrm.cli.app import VERBS, load_verb

    for verb in VERBS:
        command = load_verb(verb)
        assert command.name == verb.name
        assert (command.help or "").strip().splitlines()[0] == verb.summary, verb.name


def test_importing_the_cli_loads_no_heavy_library():
    # `orchrm --help` must not wait for torch, transformers or the LLM clients; verbs import them when run
    code = (
        "import sys, orchrm.cli.app; "
        "print(sorted(m for m in ('torch', 'transformers', 'trl', 'openai', 'numpy') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
