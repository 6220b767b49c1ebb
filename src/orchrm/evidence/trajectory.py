"""An executed multi-agent trajectory (an `orchrm.mas` Trace) as the response the mas-trajectory skill judges."""

from __future__ import annotations

import json
from typing import Any


def trajectory_response(trace: Any, *, max_output_chars: int = 600) -> str:
    """Compact JSON: the plan, each agent's id, type, status, task and (truncated) output, and the final
    answer — the shape the skill's `trajectory-consistency` verifier reads. Accepts a Trace or its dict."""
    data = trace.model_dump() if hasattr(trace, "model_dump") else dict(trace)
    agents = [
        {
            "id": a.get("id"),
            "type": a.get("type"),
            "status": a.get("status"),
            "task": (a.get("input") or "")[:300],
            "output": (a.get("output") or a.get("error") or "")[:max_output_chars],
        }
        for a in data.get("agents") or []
    ]
    return json.dumps(
        {
            "plan": (data.get("plan_text") or "")[:1500],
            "agents": agents,
            "final_answer": data.get("final_answer") or "",
        },
        ensure_ascii=False,
    )
