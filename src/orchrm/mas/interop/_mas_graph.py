"""MAS-Orchestra's graph rules, as its `harmony_parser/medium.py` applies them: edges from the `<edge>` block,
references filled in run order, the checks in its order (see `_mas_orchestra`'s docstring)."""

from __future__ import annotations

from ..plans import REFERENCE, AgentSpec, PlanError


def _data_flow(agents: list[AgentSpec], edges: list[tuple[str, str]]) -> tuple[list[AgentSpec], list[tuple[str, str]]]:
    """MAS-Orchestra's graph checked as `validate_graph` checks it, and its data flow: a `${id}` it substitutes
    (`id` ran earlier in its execution order) is kept, and becomes an edge; an `<edge>` whose target quotes no
    `${source}` orders the two and carries nothing, so it is returned as order-only. A `${id}` it would leave as
    text is refused: orchrm would read it as an edge. Returns the agents and the order-only edges."""
    ids: list[str] = []
    for a in agents:
        if not REFERENCE.fullmatch(f"${{{a.id}}}"):
            raise PlanError("bad_id", f"agent id {a.id!r} must be letters, digits, '_' or '-'", agent=a.id)
        ids.append(a.id)
    if len(agents) > 1 and not edges:
        raise PlanError(
            "no_edges",
            f"{len(agents)} agents and no edge in an <edge> block; MAS-Orchestra takes the graph from that block "
            "alone (a ${id} in an input is no edge)",
            agent=agents[1].id,
        )
    order = _execution_order(ids, edges) if edges else ids
    position = {agent_id: i for i, agent_id in enumerate(order)}
    for a in agents:
        if edges or len(agents) > 1:
            _check_references(a, position)
        elif a.references() or a.malformed_references():  # one agent: MAS-Orchestra substitutes nothing
            _check_references(a, {})
    quoted = {(ref, a.id) for a in agents for ref in a.references()}
    order_only = [e for e in dict.fromkeys(edges) if e not in quoted]
    return agents, order_only


def _check_references(a: AgentSpec, position: dict[str, int]) -> None:
    for bad in a.malformed_references():
        raise PlanError(
            "bad_reference",
            f"agent {a.id!r} writes ${{{bad}}}, which MAS-Orchestra passes on as text and orchrm refuses",
            agent=a.id,
        )
    for ref in a.references():
        if ref == a.id:
            raise PlanError("self_reference", f"agent {a.id!r} references its own output", agent=a.id)
        if ref not in position:
            raise PlanError("unknown_reference", f"agent {a.id!r} references unknown agent ${{{ref}}}", agent=a.id)
        if position[ref] > position[a.id]:
            raise PlanError(
                "reference_order",
                f"agent {a.id!r} references ${{{ref}}}, which MAS-Orchestra runs after it (no edge path "
                f"{ref}->{a.id}): it would pass the text unsubstituted",
                agent=a.id,
            )


def _execution_order(ids: list[str], edges: list[tuple[str, str]]) -> list[str]:
    """MAS-Orchestra's graph rules, in `validate_graph`'s order, then its execution order (`topological_sort`:
    Kahn's, the queue seeded in agent order, each agent's children in edge order, repeated edges counted)."""
    known = set(ids)
    for src, dst in edges:
        for end, tag in ((src, "from"), (dst, "to")):
            if end not in known:
                raise PlanError("unknown_edge_end", f"<{tag}>{end}</{tag}> names no declared agent", agent=end or None)
    children: dict[str, list[str]] = {i: [] for i in ids}
    parents: dict[str, list[str]] = {i: [] for i in ids}
    for src, dst in edges:
        children[src].append(dst)
        parents[dst].append(src)
    starts = [i for i in ids if not parents[i]]
    if not starts:
        raise PlanError("cycle", "every agent has an incoming edge, so there is no start agent and the edges cycle")
    sinks = [i for i in ids if not children[i]]
    if len(sinks) != 1:
        raise PlanError(
            "sink_count",
            f"exactly one agent without an outgoing edge is needed, found {len(sinks)}"
            + (f": {', '.join(sinks)}" if sinks else ""),
            agent=sinks[-1] if sinks else None,
        )
    reached = _reach(starts, children) & _reach(sinks, parents)
    isolated = [i for i in ids if i not in reached]
    if isolated:
        raise PlanError(
            "isolated",
            f"agents {', '.join(isolated)} are not on a path from a start agent to the sink {sinks[0]!r}",
            agent=isolated[0],
        )
    indegree = {i: len(parents[i]) for i in ids}
    queue = list(starts)
    for node in queue:  # the list grows as agents become ready: a FIFO queue
        for child in children[node]:
            indegree[child] -= 1
            if indegree[child] == 0:
                queue.append(child)
    if len(queue) != len(ids):
        stuck = [i for i in ids if indegree[i] > 0]
        raise PlanError("cycle", f"the agents {', '.join(stuck)} form a cycle", agent=stuck[0])
    return queue


def _reach(roots: list[str], step: dict[str, list[str]]) -> set[str]:
    seen = set(roots)
    todo = list(roots)
    while todo:
        for nxt in step[todo.pop()]:
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen
