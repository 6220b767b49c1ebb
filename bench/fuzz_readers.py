"""bench/fuzz.py's second half: hostile files and parameters at every reader of what comes from outside.

Each hostile JSON value is written as a whole file and as one field of an otherwise valid file, at:

- an RM card (`orchrm.json`), through `orchrm score --rm` (an exception escaping `main` is a traceback);
- a rollout's `run.json`, through `read_run_config` (its one reader, which a resumed rollout's check goes
  through) and `orchrm view`'s loader; anything but orchrm's own one-line errors is a crash;
- a pairs folder's `manifest.json`, through `orchrm train-rm` (refused before any training);
- a checkpoint seal and an adapter card, through `served_adapter`, what `--orchestrator-adapter` runs: it
  checks the card or seal first, and the model it is asked for is a GGUF that is not there, so nothing is
  ever converted or fetched;

and hostile run ids, plan indices and question ids are sent to `orchrm view` over HTTP: every request must be
answered (no connection closed without a status) and none with a 500.
"""

from __future__ import annotations

import contextlib
import http.client
import io
import json
import shutil
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

from orchrm import OrchrmError
from orchrm.cli import main

VALUES: list[tuple[str, bytes]] = [
    *[(f"deep_array_{d}", b"[" * d + b"]" * d) for d in (33, 65, 1_000, 100_000)],
    *[(f"deep_object_{d}", b'{"a": ' * d + b"1" + b"}" * d) for d in (65, 1_000, 100_000)],
    ("deep_unclosed", b"[" * 100_000),
    *[(f"int_{n}_digits", b"9" * n) for n in (101, 4_301, 5_000, 50_000)],
    ("negative_5000_digits", b"-" + b"9" * 5_000),
    ("zeros_5000", b"0" * 5_000 + b"1"),
    ("float_5000_digits", b"1." + b"0" * 5_000),
    ("exponent", b"1e99999"),
    ("overflow", b"1e999"),
    ("nan", b"NaN"),
    ("infinity", b"-Infinity"),
    ("escaped_surrogate", b'"\\ud800"'),
    ("not_utf8", b'"\xff\xfe"'),
    ("truncated", b'{"a": '),
    ("empty", b""),
    ("null", b"null"),
    ("list", b"[]"),
    ("string", b'"x"'),
    ("bool", b"true"),
    ("bom", b"\xef\xbb\xbf{}"),
]


def _field(doc: dict, key: str, value: bytes) -> bytes:
    """`doc` as JSON with `key`'s value replaced by the raw bytes `value`."""
    marker = "\u0000MARK\u0000"
    text = json.dumps({**doc, key: marker}).encode()
    return text.replace(json.dumps(marker).encode(), value)


def _placements(doc: dict, keys: list[str]) -> list[tuple[str, Callable[[bytes], bytes]]]:
    return [("whole", lambda v: v)] + [(key, lambda v, key=key: _field(doc, key, v)) for key in keys]


def _cli(argv: list[str]) -> str:
    """'exit N' or the name of the exception that escaped main (a traceback for the user)."""
    try:
        with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
            main(argv)
        return "exit 0"
    except SystemExit as exc:
        return f"exit {exc.code or 0}"
    except Exception as exc:  # noqa: BLE001 (counting what escapes is the point)
        return f"crash {type(exc).__name__}"


def _call(fn: Callable[[], object]) -> str:
    """'ok', 'refused' (orchrm's own one-line errors) or the crash."""
    try:
        fn()
        return "ok"
    except OrchrmError as exc:
        return "refused" if "\n" not in str(exc) else "crash multi-line error"
    except Exception as exc:  # noqa: BLE001
        return f"crash {type(exc).__name__}"


def fuzz_files(folder: Path) -> dict:
    from orchrm import RunConfig
    from orchrm.grpo import ADAPTER_CARD, SEAL_FILE, served_adapter
    from orchrm.mas import RUN_FILE, TRACES_FILE, read_run_config
    from orchrm.pairs import MANIFEST_FILE
    from orchrm.rm import CARD_FILE, ModelCard
    from orchrm.view import load_runs

    sys.path.insert(0, str(Path(__file__).parent.parent / "tests" / "support"))
    from synthetic_traces import trace

    request = folder / "request.jsonl"
    request.write_text('{"question": "q", "plans": ["p"]}\n')
    good_trace = trace("q0", 0, '{"agents": [{"id": "a", "type": "cot", "input": "x"}]}', correct=True, answer="4")
    fields = ModelCard.model_fields  # the format and version this orchrm reads: the hostile value goes deeper
    card = {
        "format": fields["format"].default,
        "card_version": fields["card_version"].default,
        "backbone": "all-minilm-l6-v2",
        "files": {},
    }
    run = RunConfig(task="chain_sum").model_dump(mode="json")
    seal = {"step": 1, "files": {}, "tokens": {}}
    adapter = {
        "format": "orchrm-orchestrator-adapter",
        "card_version": 1,
        "files": {},
        "base_sha256": "0" * 64,
        "steps": 1,
    }

    def rm_card(d: Path) -> str:
        return _cli(["score", str(request), "--rm", str(d)])

    def run_file(d: Path) -> str:
        read = _call(lambda: read_run_config(d))
        (d / TRACES_FILE).write_bytes(good_trace.model_dump_json().encode() + b"\n")
        viewed = _call(lambda: load_runs([d]))
        return read if read.startswith("crash") else viewed if viewed.startswith("crash") else f"{read}+viewed"

    def manifest(d: Path) -> str:
        return _cli(["train-rm", str(d), "--out", str(d.parent / (d.name + "-rm"))])

    absent = folder / "absent.gguf"  # the card lists no adapter weights, so the check refuses before the model

    def adapter_check(d: Path) -> str:
        return _call(lambda: served_adapter(d, str(absent)))

    def sealed(d: Path) -> str:
        (d.parent.parent / RUN_FILE).write_text(json.dumps({"policy_sha256": "0" * 64}))
        return adapter_check(d)

    targets = [
        ("rm_card", CARD_FILE, _placements(card, ["card_version", "files", "metrics"]), rm_card),
        ("run_json", RUN_FILE, _placements(run, ["seed", "n_plans", "version"]), run_file),
        ("pairs_manifest", MANIFEST_FILE, _placements({"files": {}}, ["files"]), manifest),
        ("checkpoint_seal", SEAL_FILE, _placements(seal, ["step"]), sealed),
        ("adapter_card", ADAPTER_CARD, _placements(adapter, ["files"]), adapter_check),
    ]
    outcomes: dict[str, Counter] = {}
    crashes: list[str] = []
    n = 0
    for target, filename, placements, read in targets:
        counts = outcomes.setdefault(target, Counter())
        for where, make in placements:
            for name, value in VALUES:
                d = folder / f"{target}-{n}" / "checkpoints" / "checkpoint-1"  # the shape a seal is read in
                d.mkdir(parents=True)
                (d / filename).write_bytes(make(value))
                got = read(d)
                counts["crash" if got.startswith("crash") else got] += 1
                if got.startswith("crash"):
                    crashes.append(f"{target} {where}={name}: {got}")
                shutil.rmtree(folder / f"{target}-{n}")
                n += 1
    return {
        "tried": n,
        "crashes": len(crashes),
        "crash_examples": crashes[:10],
        "outcomes": {t: dict(c) for t, c in outcomes.items()},
    }


VIEW_PARAMS = [
    "9" * 5_000,
    "0" * 5_000 + "1",
    "-" + "9" * 5_000,
    "99999999999999999999",
    "-1",
    "+1",
    "1e3",
    "0x1",
    " 1",
    "1 ",
    "\u00b2",
    "\u0661",
    "\uff11",
    "%00",
    "%ff",
    "%ed%a0%80",
    "",
    "nan",
    "1.0",
    "0" * 10,
]


def fuzz_view(folder: Path) -> dict:
    sys.path.insert(0, str(Path(__file__).parent.parent / "tests" / "support"))
    from orchrm.view import load_runs
    from view_runs import Running, write_bon

    running = Running(load_runs([write_bon(folder / "bon")]))
    port = running.server.server_address[1]
    statuses, unanswered = Counter(), []
    paths = []
    for p in VIEW_PARAMS:
        q = quote(p, safe="%")
        paths += [
            f"/api/runs/{q}/questions",
            f"/api/runs/{q}/trace?q=q0&plan=0",
            f"/api/runs/0/trace?q=q0&plan={q}",
            f"/api/runs/0/trace?q={q}&plan=0",
        ]
    paths += ["/api/runs/0/trace?q=" + "x" * 60_000 + "&plan=0", "/api/runs/0/trace?" + "&".join(["plan=1"] * 5_000)]
    try:
        for path in paths:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            try:
                conn.putrequest("GET", path, skip_host=True, skip_accept_encoding=True)
                conn.putheader("Host", f"127.0.0.1:{port}")
                conn.endheaders()
                res = conn.getresponse()
                res.read()
                statuses[res.status] += 1
            except (http.client.HTTPException, OSError) as exc:
                unanswered.append(f"{path[:60]}: {type(exc).__name__}")
            finally:
                conn.close()
    finally:
        running.stop()
    return {
        "tried": len(paths),
        "unanswered": len(unanswered),
        "unanswered_examples": unanswered[:10],
        "http_500": sum(n for s, n in statuses.items() if s >= 500),
        "statuses": {str(k): v for k, v in sorted(statuses.items())},
    }
