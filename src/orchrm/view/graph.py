"""A plan as the page draws it: a layered DAG. Shared by rollout traces (`runs`) and GRPO samples (`training`)."""

from __future__ import annotations

from typing import Any

from ..mas.plans import Edge, Plan, topological_order


def plan_graph(plan: Plan | None) -> dict[str, Any]:
    """The plan as a layered DAG for drawing: nodes with a level (longest path from a source) and a row within
    it, edges from `${id}` references and explicit edges, and the sink."""
    if plan is None or not plan.agents:
        return {"nodes": [], "edges": [], "sink": None}
    ids = {a.id for a in plan.agents}
    edges = list(
        dict.fromkeys(
            (e.src, e.dst)
            for e in [*plan.edges, *plan.implied_edges()]
            if e.src in ids and e.dst in ids and e.src != e.dst
        )
    )
    graph = plan.model_copy(update={"edges": [Edge(src=s, dst=d) for s, d in edges]})
    order = list(dict.fromkeys(topological_order(graph, cycles="append")))
    level: dict[str, int] = {}
    for node in order:
        ups = [level[s] for s, d in edges if d == node and s in level]
        level[node] = 1 + max(ups) if ups else 0
    rows: dict[int, int] = {}
    types = {a.id: a.type for a in plan.agents}
    nodes = []
    for node in order:
        lv = level[node]
        nodes.append({"id": node, "type": types[node], "level": lv, "row": rows.get(lv, 0)})
        rows[lv] = rows.get(lv, 0) + 1
    sinks = graph.sinks()
    return {"nodes": nodes, "edges": [list(e) for e in edges], "sink": sinks[0] if len(sinks) == 1 else None}
