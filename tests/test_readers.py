"""One rule for what comes from outside the process: JSON through `orchrm.safejson`, integers through
`safejson.bounded_int` (or a regex that bounds their digits first).

Python's `json.loads` raises RecursionError on deep input and ValueError on a 5,000-digit integer, and `int()`
raises ValueError past 4,300 digits: on a card, a run file or a query parameter each was a traceback or an
unanswered request. This test walks the package for every `json.loads`, `json.load`, `int(...)` and
`model_validate_json` call and fails on any that is not listed below with the reason it is safe. A new reader
of outside data belongs in safejson; a new internal use belongs here, with its reason.
"""

import ast
from pathlib import Path

import orchrm

PACKAGE = Path(orchrm.__file__).parent

PYDANTIC = "pydantic's own parser (jiter): a deep or huge-number text is a ValidationError, which the caller handles"
COUNT = "a count or flag orchrm computed itself (bool, len, round, a tally)"
SERVER_USAGE = "a token count in an LLM server's reply, already typed by the OpenAI client or the server's JSON"

ALLOWED: dict[str, str] = {
    "bon/prior.py|add|int|correct": COUNT,
    "bon/report.py|_plot_accuracy_vs_n|int|n": "a plan count from the run's own settings",
    "bon/router.py|fit|int|bool(t.score.correct)": COUNT,
    "bon/stats.py|across_runs|int|s": "training seeds the caller passes as numbers, never parsed text",
    "cli/judge.py|read_rows|model_validate_json|line": PYDANTIC,
    "cli/progress.py|_duration|int|round(seconds)": COUNT,
    "cli/trainer_progress.py|spent|int|tokens()": COUNT,
    "cli/trainer_progress.py|spent|int|getattr(state, 'num_input_tokens_seen', 0) or 0": "the trainer's own token counter",
    "sandbox/_runner.py|main|json.loads|sys.argv[1]": "the spec the parent process wrote for its own child",
    "sandbox/_runner.py|main|int|sys.argv[2]": "a file descriptor number the parent process passed",
    "evidence/skills/mas-trajectory/verifiers/trajectory_consistency.py|verify|json.loads|response": (
        "a skill verifier: runs inside the sandbox, where any exception is recorded as the verifier's error"
    ),
    "grpo/accounting.py|usage|int|prompt_tokens[i]": "a prompt-token count from the trainer's tensors",
    "grpo/checkpoints.py|checkpoint_step|int|m.group(1)": "digits of a folder name matched by a bounded regex",
    "grpo/checkpoints.py|checkpoints|int|m.group(1)": "digits of a folder name matched by a bounded regex",
    "grpo/data.py|chat_ids|int|i": "token ids from the tokenizer",
    "grpo/rewards.py|__call__|int|getattr(trainer_state, 'global_step', 0) or 0": "the trainer's step counter",
    "grpo/sampler.py|__call__|int|trainer.state.global_step": "the trainer's step counter",
    "grpo/sampler.py|one|int|t": "token ids in the reply of orchrm's own llama-server child",
    "grpo/sampler.py|one|int|x.get('index', 0)": "an index in the reply of orchrm's own llama-server child",
    "llm/accounting.py|count|int|cached": COUNT,
    "llm/cache.py|get|model_validate_json|row[0]": "orchrm's own cache entry, written by model_dump_json; " + PYDANTIC,
    "llm/cache.py|__len__|int|self._db.execute('SELECT COUNT(*) FROM responses').fetchone()[0]": "SQLite's COUNT(*)",
    "llm/grouped.py|parse_choices|int|getattr(details, 'cached_tokens', 0) or 0": SERVER_USAGE,
    "llm/grouped.py|split_tokens|int|r": SERVER_USAGE,
    "llm/grouped.py|parse_native|int|item.get('index', 0)": SERVER_USAGE,
    "llm/grouped.py|parse_native|int|item.get('tokens_evaluated', 0)": SERVER_USAGE,
    "llm/grouped.py|parse_native|int|item.get('tokens_predicted', 0)": SERVER_USAGE,
    "llm/grouped.py|parse_native|int|timings.get('cache_n', 0)": SERVER_USAGE,
    "llm/grouped.py|parse_choices|int|usage.prompt_tokens": SERVER_USAGE,
    "llm/grouped.py|parse_choices|int|usage.completion_tokens": SERVER_USAGE,
    "llm/openai_replies.py|parse_completion|int|usage.prompt_tokens": SERVER_USAGE,
    "llm/openai_replies.py|parse_completion|int|usage.completion_tokens": SERVER_USAGE,
    "llm/openai_replies.py|parse_completion|int|getattr(details, 'cached_tokens', 0) or 0": SERVER_USAGE,
    "llm/server.py|free_port|int|s.getsockname()[1]": "a port number from the OS",
    "loop.py|_reward_model|json.loads|pairs.stats.model_dump_json()": "orchrm's own model, serialised in the call",
    "mas/agents/base.py|count|int|self.options[name]": (
        "plan options, read by safejson (numbers of 100 characters at most)"
    ),
    "mas/agents/python.py|run|int|self.options['attempts']": "plan options, read by safejson and bounded by the schema",
    "mas/agents/search.py|run|int|self.options['top_k']": "plan options, read by safejson and bounded by the schema",
    "mas/agents/search.py|run|int|self.options['steps']": "plan options, read by safejson and bounded by the schema",
    "mas/agents/arithmetic.py|formatted|int|value": "an integral float calc computed, bounded by MAX_MAGNITUDE",
    "mas/interop/_mas_orchestra.py|_integer|int|value": "matched first by [+-]?[0-9]{1,9}",
    "mas/rollout.py|add|int|trace.valid": COUNT,
    "mas/rollout.py|add|int|bool(trace.score and trace.score.correct)": COUNT,
    "mas/rollout.py|_resumed|int|len(plans) == n_plans": COUNT,
    "pairs/builder.py|_balance|int|cfg.max_source_share * others / (1 - cfg.max_source_share)": COUNT,
    "tasks/corpus.py|search|int|i": "a numpy index from the retriever",
    "tasks/world_qa.py|answer_in_one_document|int|m.replace(',', '')": "numbers in the generated world_qa corpus",
    "tasks/world_qa.py|answer_in_one_document|int|answer": "the generated world_qa answer, all digits",
}


def _calls() -> set[str]:
    found = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel.startswith("safejson/"):  # the reader itself
            continue
        tree = ast.parse(path.read_text(), filename=str(path))
        owner = {}
        for fn in ast.walk(tree):
            if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                for node in ast.walk(fn):
                    owner[id(node)] = fn.name  # the innermost function wins: ast.walk visits outer ones first
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and (name := _reader(node.func)):
                arg = ast.unparse(node.args[0]) if node.args else ""
                found.add(f"{rel}|{owner.get(id(node), '<module>')}|{name}|{arg}")
    return found


def _reader(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name) and func.id == "int":
        return "int"
    if isinstance(func, ast.Attribute):
        if isinstance(func.value, ast.Name) and func.value.id == "json" and func.attr in ("loads", "load"):
            return f"json.{func.attr}"
        if func.attr == "model_validate_json":
            return "model_validate_json"
    return None


def test_every_reader_goes_through_safejson_or_is_listed_with_its_reason():
    unlisted = sorted(_calls() - set(ALLOWED))
    assert unlisted == [], (
        "read these through safejson.loads/read/bounded_int, or list them with the reason they are safe"
    )


def test_the_list_names_only_calls_that_exist():
    assert sorted(set(ALLOWED) - _calls()) == []


def test_the_walk_finds_what_it_looks_for():
    tree = ast.parse("import json\ndef f(x):\n    json.loads(x); json.load(x); int(x); M.model_validate_json(x)")
    names = [_reader(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)]
    assert names == ["json.loads", "json.load", "int", "model_validate_json"]
