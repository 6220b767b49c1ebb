"""`orchrm view`: a local, read-only web viewer for rollout, best-of-N and loop runs.

`load_runs` reads the run folders once; `ViewServer` serves a static page and JSON endpoints over them on
127.0.0.1. The page (`static/`) draws each plan as an SVG DAG and puts run text into the DOM as text only.
"""

from .runs import Run, load_runs, plan_graph, run_index, run_questions, trace_detail
from .server import CSP, HOST, ViewServer, serve

__all__ = [
    "CSP",
    "HOST",
    "Run",
    "ViewServer",
    "load_runs",
    "plan_graph",
    "run_index",
    "run_questions",
    "serve",
    "trace_detail",
]
