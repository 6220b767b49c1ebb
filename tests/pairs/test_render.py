"""The canonical plan text: unchanged by the linear rewrite, total on any input, linear in the plan."""

import json
import time
from collections import deque

from hypothesis import given, settings
from hypothesis import strategies as st

from orchrm.mas.plans import Plan, PlanError, parse_plan
from orchrm.pairs.render import _MAX_RAW, _squash, render_plan


def _old_render(plan):
    """main's render_plan (quadratic), the reference the rendering must keep byte for byte."""
    if isinstance(plan, str):
        try:
            plan = parse_plan(plan)
        except PlanError:
            return f"plan (unparsed): {_squash(plan)[:_MAX_RAW]}"
    if not plan.agents:
        return f"plan: direct answer: {_squash(plan.answer or '')}"
    ids = [a.id for a in plan.agents]
    indegree = {i: 0 for i in ids}
    children = {i: [] for i in ids}
    for e in plan.edges:
        if e.src in indegree and e.dst in indegree:
            indegree[e.dst] += 1
            children[e.src].append(e.dst)
    ready = deque(i for i in ids if indegree[i] == 0)
    order = []
    while ready:
        node = ready.popleft()
        order.append(node)
        for child in sorted(children[node], key=ids.index):
            indegree[child] -= 1
            if indegree[child] == 0:
                ready.append(child)
    lines = []
    for agent_id in order + [i for i in ids if i not in order]:
        agent = plan.agent(agent_id)
        opts = " ".join(
            f"{k}={json.dumps(v, sort_keys=True, separators=(',', ':'))}" for k, v in sorted(agent.options.items())
        )
        head = f"- {agent.id} [{agent.type}{' ' + opts if opts else ''}]"
        upstream = plan.upstream(agent.id)
        if upstream:
            head += " <- " + ", ".join(upstream)
        lines.append(f"{head}: {_squash(agent.input)}")
    sinks = [a.id for a in plan.agents if a.id not in {e.src for e in plan.edges}]
    return "\n".join([f"plan: {len(plan.agents)} agents, final: {','.join(sinks)}", *lines])


IDS = st.sampled_from(["a", "b", "c", "d", "zz"])
plans = st.builds(
    lambda agents, edges: {"agents": agents, "edges": edges},
    st.lists(
        st.fixed_dictionaries(
            {
                "id": IDS,
                "type": st.sampled_from(["cot", "debate", "search"]),
                "input": st.text(max_size=12),
                "options": st.dictionaries(
                    st.sampled_from(["rounds", "roles"]), st.integers(0, 3) | st.lists(st.text(max_size=3)), max_size=2
                ),
            }
        ),
        max_size=6,
    ),
    st.lists(st.fixed_dictionaries({"from": IDS, "to": IDS}), max_size=8),
)


@settings(max_examples=300)
@given(plans)
def test_rendering_is_unchanged_on_any_plan(value):
    """Duplicate ids, cycles, unknown edge ends: the text the RM was trained on stays the same."""
    plan = Plan.model_validate(value)
    assert render_plan(plan) == _old_render(plan)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.sampled_from(['{"agents": [', "{", "]", "}", '"', "\\ud800", "9" * 150, "NaN", ","]) | st.text(max_size=4)
    ).map("".join)
)
def test_any_text_renders(text):
    assert render_plan(text).startswith("plan")


def test_ten_thousand_agents_render_in_linear_time():
    n = 10_000
    agents = [{"id": f"a{i}", "type": "cot", "input": f"use ${{a{i - 1}}}" if i else "start"} for i in range(n)]
    edges = [{"from": f"a{i - 1}", "to": f"a{i}"} for i in range(1, n)]
    plan = Plan.model_validate({"agents": agents, "edges": edges})
    start = time.perf_counter()
    rendered = render_plan(plan)
    assert time.perf_counter() - start < 2.5  # a slower renderer once stalled the server on such a plan
    assert rendered.count("\n") == n
    # as text it is past MAX_PLAN_TEXT_CHARS: refused before parsing, rendered as unparsed text at once
    text = json.dumps({"agents": agents, "edges": edges})
    start = time.perf_counter()
    assert render_plan(text).startswith("plan (unparsed): ")
    assert time.perf_counter() - start < 0.5


def test_options_a_type_does_not_take_stay_out_of_the_text():
    # Parsing drops them (and notes it on the plan); the text the RM reads is what it was before the note.
    text = json.dumps({"agents": [{"id": "a", "type": "cot", "input": "x", "options": {"samples": 3}}]})
    assert render_plan(text) == "plan: 1 agents, final: a\n- a [cot]: x"
