"""Items and a garbage-answering server for the reward adapters' tests."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from synthetic_pairs import plan_json, question

#: A DAG plan the contract accepts, and prose around it.
GOOD = plan_json("good", 1)
DRAFT = json.dumps({"agents": [{"id": "draft", "type": "cot", "input": "Sketch it"}]})
MAS_ORCHESTRA = (
    "<agent><agent_id>solve</agent_id><agent_name>CoTAgent</agent_name><agent_description>Solve it"
    "</agent_description><required_arguments><agent_input>Solve the original question.</agent_input>"
    "</required_arguments></agent>"
)
#: (name, completion, whether it holds a valid plan): what a policy under training writes when it goes wrong,
#: and the plans hidden in such text. Every adapter pays each exactly as `train-orchestrator --reward rm` does.
BAD_COMPLETIONS = [
    ("plan", GOOD, True),
    ("prose", "I would search for the capital first, then answer.", False),
    ("broken json", '{"agents": [{"id": "a", "type": "cot", "input": "x"', False),
    ("empty", "", False),
    ("whitespace", "   \n ", False),
    ("direct answer under dag", json.dumps({"answer": "8"}), False),
    ("think then plan", "<think>" + json.dumps({"agents": []}) + "</think>\n" + GOOD, True),
    ("only a thought", "<think>" + GOOD + "</think>", False),
    ("a thought cut off", "<think>" + GOOD, False),
    ("closing tag only", DRAFT.replace("cot", "nope") + "</think>" + GOOD, True),
    ("draft then final", "Draft: " + DRAFT + "\nFinal plan:\n```json\n" + GOOD + "\n```", True),
    ("mas-orchestra xml", MAS_ORCHESTRA, True),
    ("chat template", "<|im_start|>assistant\n" + GOOD + "<|im_end|>", True),
    ("lone surrogate", GOOD[:-2] + "\ud800" + GOOD[-2:], False),
    ("unknown agent type", GOOD.replace("self_consistency", "telepathy"), False),
    ("1 MB of prose", "no plan here. " * 75_000, False),
    ("1 MB after a plan", GOOD + " trailing words" * 70_000, False),  # past MAX_PLAN_TEXT_CHARS: too_large
    ("a plan after a 1 MB thought", "<think>" + "hmm " * 250_000 + "</think>" + GOOD, True),
]

#: (question, plan text) items of every shape an orchestrator writes: plans, a direct answer, prose, junk.
ITEMS = [
    (question(1), plan_json("good", 1)),
    (question(1), plan_json("bad", 1)),
    (question(2), json.dumps({"answer": "8"})),
    (question(2), "I would first search, then answer: ```json\n" + plan_json("good", 2) + "\n```"),
    (question(3), "{ not a plan"),
]


class Garbage:
    """A server that answers every POST with whatever the test sets (status, body)."""

    def __init__(self):
        self.status, self.body, self.posts = 200, b"", 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers.get("content-length", 0)))
                outer.posts += 1
                self.send_response(outer.status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(outer.body)))
                self.end_headers()
                self.wfile.write(outer.body)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()


def train_orchestrator_rewards(rm, items):
    """What `train-orchestrator --reward rm` pays each (question, completion): its own `PlanReward` over
    `RMScorer`, the mark every adapter must hit."""
    import asyncio

    from orchrm.grpo.rewards import PlanReward, RMScorer
    from orchrm.mas.plans import AGENT_TYPES
    from orchrm.tasks.base import Question

    questions = {f"q{i}": Question(id=f"q{i}", question=q, answer="") for i, (q, _) in enumerate(items)}
    reward = PlanReward(RMScorer(rm), questions, degree="dag", agent_types=AGENT_TYPES)
    completions = [c for _, c in items]
    return asyncio.run(reward(prompts=[""] * len(items), completions=completions, question_id=list(questions)))
