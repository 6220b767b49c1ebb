import json
import time

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from orchrm.mas.interop import (
    AGENT_NAMES,
    ORIGINAL_QUESTION_INPUT,
    MasOrchestraPlan,
    looks_like_mas_orchestra,
    parse_mas_orchestra,
    read_mas_orchestra,
    to_mas_orchestra,
)
from orchrm.mas.interop._mas_orchestra import _TAGS, MAX_TEXT_CHARS
from orchrm.mas.interop._mas_read import closes_inside
from orchrm.mas.options import IntOption, RolesOption
from orchrm.mas.plans import AgentSpec, Plan, PlanError, option_bounds, parse_plan, validate_plan

# The multi-agent example of MAS-Orchestra's medium-level prompt, abridged (three agents, one edge block).
EXAMPLE = """
<thinking>
  We need up-to-date numbers with sources, so we will run two WebSearch agents in parallel.
  The final sink is FINAL.
</thinking>

<agent>
  <agent_id>WS_NYC</agent_id>
  <agent_name>WebSearchAgent</agent_name>
  <agent_description>Find the latest NYC housing vacancy rate with source text.</agent_description>
  <required_arguments>
    <agent_input>Search for the housing vacancy rate for New York City.</agent_input>
  </required_arguments>
</agent>

<agent>
  <agent_id>WS_LA</agent_id>
  <agent_name>WebSearchAgent</agent_name>
  <agent_description>Find the latest LA vacancy rate with source text.</agent_description>
  <required_arguments>
    <agent_input>Search for the housing vacancy rate for Los Angeles.</agent_input>
  </required_arguments>
</agent>

<agent>
  <agent_id>FINAL</agent_id>
  <agent_name>DebateAgent</agent_name>
  <agent_description>Write the short, cited summary.</agent_description>
  <required_arguments>
    <agent_input>Compare the rates.

NYC:
${WS_NYC}

LA:
${WS_LA}</agent_input>
    <debate_roles>["Urban Economist", "Statistician"]</debate_roles>
  </required_arguments>
</agent>

<edge>
<from>WS_NYC</from><to>FINAL</to>
<from>WS_LA</from><to>FINAL</to>
</edge>
"""

SINGLE = """<thinking>One CoT call.</thinking>
  <agent>
    <agent_id>calc_agent</agent_id>
    <agent_name>CoTAgent</agent_name>
    <agent_description>Definite integrals with one Chain-of-Thought call.</agent_description>
      <required_arguments>
        <agent_input></agent_input>
      </required_arguments>
  </agent>"""


def agent_block(agent_id="a", name="CoTAgent", args="<agent_input>solve</agent_input>", description="d"):
    return (
        f"<agent><agent_id>{agent_id}</agent_id><agent_name>{name}</agent_name>"
        f"<agent_description>{description}</agent_description><required_arguments>{args}</required_arguments></agent>"
    )


def rule_of(text):
    with pytest.raises(PlanError) as info:
        validate_plan(read_mas_orchestra(text).plan)
    return info.value.rule


def test_reads_the_prompt_example_into_a_valid_plan():
    read = read_mas_orchestra(EXAMPLE)
    plan = validate_plan(read.plan)
    assert [(a.id, a.type) for a in plan.agents] == [("WS_NYC", "search"), ("WS_LA", "search"), ("FINAL", "debate")]
    assert plan.agent("FINAL").options == {"roles": ["Urban Economist", "Statistician"]}
    assert plan.sink() == "FINAL" and {(e.src, e.dst) for e in plan.edges} == {("WS_NYC", "FINAL"), ("WS_LA", "FINAL")}
    assert read.descriptions["WS_LA"] == "Find the latest LA vacancy rate with source text."
    assert read.thinking.startswith("We need up-to-date numbers") and read.thinking.endswith("The final sink is FINAL.")


def test_empty_input_is_the_original_question_and_is_written_back_empty():
    read = read_mas_orchestra(SINGLE)
    assert validate_plan(read.plan).agents == [AgentSpec(id="calc_agent", type="cot", input=ORIGINAL_QUESTION_INPUT)]
    assert "<agent_input></agent_input>" in to_mas_orchestra(read)
    quoted = read_mas_orchestra(agent_block(args='<agent_input>""</agent_input>'))
    assert quoted.plan.agents[0].input == ORIGINAL_QUESTION_INPUT
    missing = read_mas_orchestra(agent_block(args=""))  # MAS-Orchestra reads a missing input as empty too
    assert missing.plan.agents[0].input == ORIGINAL_QUESTION_INPUT


def test_every_agent_name_maps_case_insensitively_and_back():
    for name, agent_type in AGENT_NAMES.items():
        args = (
            '<agent_input>go</agent_input><debate_roles>["xx", "yy"]</debate_roles>'
            if agent_type == "debate"
            else "<agent_input>go</agent_input>"
        )
        plan = read_mas_orchestra(agent_block(name=name.upper(), args=args)).plan
        assert plan.agents[0].type == agent_type
        assert f"<agent_name>{name}</agent_name>" in to_mas_orchestra(plan)


def test_orchrm_options_travel_as_extra_arguments_and_unknown_ones_are_noted():
    text = agent_block(
        name="SCAgent",
        args='<agent_input>go</agent_input><samples> 5 </samples><temperature>0.3</temperature><debate_roles>["a","b"]</debate_roles>',
    )
    plan = read_mas_orchestra(text).plan
    assert plan.agents[0].options == {"samples": 5}
    assert plan.dropped_options == {"a": ["temperature", "debate_roles"]}
    assert "<samples>5</samples>" in to_mas_orchestra(plan)
    assert rule_of(agent_block(name="SCAgent", args="<agent_input>go</agent_input><samples>50</samples>")) == "options"


def test_python_style_role_lists_are_read_without_evaluating_them():
    plan = read_mas_orchestra(
        agent_block(
            name="DebateAgent",
            args="<agent_input>go</agent_input><debate_roles>['Mathematician', \"Skeptic\",]</debate_roles>",
        )
    ).plan
    assert plan.agents[0].options["roles"] == ["Mathematician", "Skeptic"]
    for bad in ("__import__('os').system('true')", "['a', 1]", "[" * 5000 + "]" * 5000, "['a' 'b']x", "'a', 'b'"):
        assert (
            rule_of(
                agent_block(name="DebateAgent", args=f"<agent_input>go</agent_input><debate_roles>{bad}</debate_roles>")
            )
            == "options"
        )


def test_a_direct_answer_without_agents():
    read = read_mas_orchestra("<thinking>easy</thinking>\n<answer> 42 </answer>")
    assert read.plan == Plan(answer="42") and read.thinking == "easy"
    assert validate_plan(read.plan, degree="direct").answer == "42"
    assert read_mas_orchestra(to_mas_orchestra(read)).plan == read.plan


def test_thinking_that_mentions_tags_is_not_read_as_a_plan():
    text = (
        "<thinking>I could write <agent> blocks or an <edge>, or <answer>.</thinking>"
        + SINGLE.split("</thinking>", 1)[1]
    )
    assert [a.id for a in read_mas_orchestra(text).plan.agents] == ["calc_agent"]


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("", "parse"),
        ("I think the answer is 4.", "parse"),
        ("<agent><agent_id>a</agent_id>", "parse"),  # no closed <agent> block: MAS-Orchestra finds none
        (agent_block(name="TreeOfThoughtAgent"), "unknown_type"),
        (agent_block(name=""), "unknown_type"),
        (agent_block(agent_id=""), "parse"),
        (agent_block(agent_id="x" * 41), "schema"),
        (agent_block(agent_id="a b"), "bad_id"),
        (agent_block(name="ReflexionAgent", args="<agent_input>x</agent_input><rounds>two</rounds>"), "options"),
        (agent_block(name="ReflexionAgent", args="<agent_input>x</agent_input><rounds>1e9</rounds>"), "options"),
        (
            agent_block("a") + agent_block("b", args="<agent_input>${a}</agent_input>") + "<edge><to>b</to></edge>",
            "edge_pairs",
        ),
        (
            agent_block("a")
            + agent_block("b", args="<agent_input>${a}</agent_input>")
            + "<edge><from>a</from><from>a</from></edge>",
            "edge_pairs",
        ),
        (
            agent_block("a")
            + agent_block("b", args="<agent_input>${a}</agent_input>")
            + "<edge><from>a</from><to>c</to></edge>",
            "unknown_edge_end",
        ),
        (agent_block("a") + agent_block("b"), "no_edges"),
        (
            agent_block("a", args="<agent_input>${b}</agent_input>")
            + agent_block("b", args="<agent_input>${a}</agent_input>"),
            "no_edges",
        ),
        (
            agent_block("a") + agent_block("b") + "<edge><from>a</from><to>b</to><from>b</from><to>a</to></edge>",
            "cycle",
        ),
        ("".join(agent_block(f"a{i}") for i in range(70)), "too_many_blocks"),
        (agent_block(args="".join(f"<x{i}>1</x{i}>" for i in range(20))), "too_many_blocks"),
    ],
)
def test_malformed_plans_are_plan_errors_with_a_rule(text, rule):
    assert rule_of(text) == rule


def test_messages_quote_at_most_a_short_piece_of_a_huge_text():
    huge = "x" * 500_000
    texts = [
        agent_block(agent_id=huge),
        agent_block(name=huge),
        agent_block() + f"<edge><from>{huge}</from><to>a</to></edge>",
        agent_block(name="DebateAgent", args=f"<agent_input>go</agent_input><debate_roles>{huge}</debate_roles>"),
        agent_block(name="SCAgent", args=f"<agent_input>go</agent_input><samples>{huge}</samples>"),
    ]
    for text in texts:
        with pytest.raises(PlanError) as info:
            validate_plan(read_mas_orchestra(text).plan)
        assert len(str(info.value)) < 300 and (info.value.agent is None or len(info.value.agent) <= 40)


def test_entities_are_never_expanded():
    laughs = '<!DOCTYPE l [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;"><!ENTITY c "&b;&b;&b;&b;&b;&b;">]>'
    text = laughs + agent_block(args="<agent_input>&c; &amp; &#60; &lt;agent&gt;</agent_input>")
    plan = validate_plan(read_mas_orchestra(text).plan)
    assert plan.agents[0].input == "&c; &amp; &#60; &lt;agent&gt;"


@pytest.mark.parametrize(
    "text",
    [
        "<agent>" * 200_000,  # every opening unclosed: one failed search, not one per opening
        "<agent>" + "<agent_id>" * 150_000 + "</agent>",
        agent_block(args="<x>" * 150_000),
        agent_block() + "<edge>" + "<from>a</from>" * 100_000 + "</edge>",
        "<" * 900_000,
        agent_block(args="<agent_input>" + "${a}" * 200_000 + "</agent_input>"),
        "x" * (MAX_TEXT_CHARS + 1),
    ],
)
def test_hostile_texts_end_quickly(text):
    start = time.perf_counter()
    try:
        validate_plan(read_mas_orchestra(text).plan)
    except PlanError:
        pass
    assert time.perf_counter() - start < 2.0


def test_export_refuses_what_the_format_cannot_hold():
    plan = Plan(agents=[AgentSpec(id="a", type="cot", input="write </agent_input> here")])
    with pytest.raises(PlanError) as info:
        to_mas_orchestra(plan)
    assert info.value.rule == "unrepresentable" and info.value.agent == "a"
    with pytest.raises(PlanError):
        to_mas_orchestra(Plan(agents=[AgentSpec(id="a", type="cot", input="x")]), descriptions={"a": "</AGENT>"})
    with pytest.raises(PlanError) as info:
        to_mas_orchestra(Plan(agents=[AgentSpec(id="a", type="wizard", input="x")]))
    assert info.value.rule == "unrepresentable"


def test_an_orchrm_json_plan_converts_both_ways():
    orchrm = parse_plan(
        '{"agents": [{"id": "s", "type": "search", "input": "find X", "options": {"top_k": 3}},'
        ' {"id": "p", "type": "cot", "input": "compute from ${s}"}]}'
    )
    text = to_mas_orchestra(orchrm)
    assert "<from>s</from><to>p</to>" in text and "<top_k>3</top_k>" in text
    assert validate_plan(read_mas_orchestra(text).plan) == validate_plan(orchrm)


@pytest.mark.parametrize("agent_type", ["python", "lookup", "calc"])
def test_the_writer_refuses_agents_mas_orchestra_cannot_run(agent_type):
    # MAS-Orchestra's medium.py dispatches five agent names and raises "Unknown agent name" for any other.
    with pytest.raises(PlanError) as info:
        to_mas_orchestra(Plan(agents=[AgentSpec(id="p", type=agent_type, input="compute")]))
    assert info.value.rule == "unrepresentable" and "has no agent for" in info.value.reason
    assert rule_of(agent_block(name="PythonAgent")) == "unknown_type"


# ---- round trip (property) ----

_ALPHABET = st.characters(blacklist_categories=("Cs",), blacklist_characters="${}")
_text = (
    st.text(_ALPHABET, min_size=1, max_size=40)
    .map(str.strip)
    .filter(lambda s: bool(s) and closes_inside(s, _TAGS) is None and s not in ('""', "''", ORIGINAL_QUESTION_INPUT))
)
_ids = st.from_regex(r"[A-Za-z_][A-Za-z0-9_\-]{0,11}", fullmatch=True)


def _option(bound):
    if isinstance(bound, IntOption):
        return st.integers(bound.lo, bound.hi)
    assert isinstance(bound, RolesOption)
    return st.lists(_text.filter(lambda r: len(r) >= 2 and '"""' not in r), min_size=2, max_size=4)


@st.composite
def plans(draw):
    n = draw(st.integers(1, 5))
    ids = draw(st.lists(_ids, min_size=n, max_size=n, unique=True))
    # Each agent but the last feeds one later agent: then none is isolated and the last is the one sink.
    consumers = [draw(st.integers(j + 1, n - 1)) for j in range(n - 1)]
    agents = []
    for k, agent_id in enumerate(ids):
        agent_type = draw(st.sampled_from(sorted(AGENT_NAMES.values())))
        refs = [ids[j] for j in range(k) if consumers[j] == k or draw(st.booleans())]
        pieces = [draw(_text)] + [f"${{{r}}} {draw(_text)}" for r in refs]
        if draw(st.booleans()):
            pieces = [ORIGINAL_QUESTION_INPUT] if not refs else pieces
        bounds = option_bounds(agent_type)
        keys = draw(st.lists(st.sampled_from(sorted(bounds)), unique=True)) if bounds else []
        options = {key: draw(_option(bounds[key])) for key in keys}
        agents.append(AgentSpec(id=agent_id, type=agent_type, input=" ".join(pieces), options=options))
    plan = Plan(agents=agents)
    try:
        return validate_plan(plan)
    except PlanError:
        assume(False)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(plans())
def test_orchrm_plans_round_trip_through_mas_orchestra(plan):
    back = read_mas_orchestra(to_mas_orchestra(plan)).plan
    assert back.dropped_options == {}
    assert validate_plan(back) == plan


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(plans(), st.dictionaries(_ids, _text, max_size=3), st.one_of(st.none(), _text))
def test_mas_orchestra_text_is_a_fixed_point(plan, extra, thinking):
    descriptions = {a.id: extra.get(a.id, f"agent {a.id}") for a in plan.agents}
    text = to_mas_orchestra(MasOrchestraPlan(plan, descriptions, thinking))
    read = read_mas_orchestra(text)
    assert read.descriptions == descriptions and read.thinking == thinking
    assert to_mas_orchestra(read) == text
    assert json.loads(validate_plan(read.plan).to_json()) == json.loads(plan.to_json())


# ---- the graph as MAS-Orchestra's own parser reads it (harmony_parser/medium.py) ----


def edge_block(*pairs):
    return "<edge>" + "".join(f"<from>{s}</from><to>{d}</to>" for s, d in pairs) + "</edge>"


def edge_set(plan):
    return {(e.src, e.dst) for e in plan.edges}


def test_an_edge_without_a_reference_orders_but_carries_no_data():
    # MAS-Orchestra runs `checker` after `solver` and substitutes nothing (no ${solver} in its input): the
    # import keeps that edge as order-only, so agents, edges and data flow are the ones MAS-Orchestra ran.
    text = (
        agent_block("solver", args="<agent_input></agent_input>")
        + agent_block("checker", name="ReflexionAgent", args="<agent_input>Check the solution.</agent_input>")
        + edge_block(("solver", "checker"))
    )
    read = read_mas_orchestra(text)
    plan = validate_plan(read.plan)
    assert edge_set(plan) == {("solver", "checker")} and plan.sink() == "checker"
    assert plan.agent("checker").input == "Check the solution."
    assert [(e.src, e.dst) for e in plan.order_edges] == [("solver", "checker")]
    assert plan.agent("solver").input == ORIGINAL_QUESTION_INPUT
    assert read_mas_orchestra(to_mas_orchestra(read)).plan == read.plan


def test_references_alone_are_no_graph_without_an_edge_block():
    text = agent_block("a") + agent_block("b", args="<agent_input>Check ${a}</agent_input>")
    with pytest.raises(PlanError) as info:
        parse_mas_orchestra(text)
    assert info.value.rule == "no_edges" and "<edge>" in info.value.reason
    empty = text + "<edge>\n</edge>"
    with pytest.raises(PlanError) as info:
        parse_mas_orchestra(empty)
    assert info.value.rule == "no_edges"


def test_parse_returns_a_plan_from_a_whole_completion_with_prose():
    completion = "Sure! Here is the system I propose.\n" + EXAMPLE + "\nThis should work well. Good luck!"
    plan = parse_mas_orchestra(completion)
    assert isinstance(plan, Plan) and validate_plan(plan) == plan
    assert edge_set(plan) == {("WS_NYC", "FINAL"), ("WS_LA", "FINAL")}


@pytest.mark.parametrize(
    "text",
    [
        EXAMPLE,
        SINGLE,
        # from/to grouped rather than interleaved: MAS-Orchestra pairs the n-th <from> with the n-th <to>
        agent_block("a")
        + agent_block("b")
        + agent_block("c", args="<agent_input>${a} and ${b}</agent_input>")
        + "<edge><from>a</from><from>b</from><to>c</to><to>c</to></edge>",
        # a repeated edge, and a chain whose middle agent ignores its input
        agent_block("a") + agent_block("b") + agent_block("c") + edge_block(("a", "b"), ("a", "b"), ("b", "c")),
        # a diamond where only some targets reference their sources
        agent_block("s")
        + agent_block("x", args="<agent_input>Expand on ${s}</agent_input>")
        + agent_block("y")
        + agent_block("z", args="<agent_input>Merge ${x}</agent_input>")
        + edge_block(("s", "x"), ("s", "y"), ("x", "z"), ("y", "z")),
        # the edges written before the agents, in any order, tags in other case
        "<Edge><FROM>b</FROM><To>c</To>\n<from>a</from><to>b</to></Edge>"
        + agent_block("c")
        + agent_block("a")
        + agent_block("b"),
    ],
)
def test_plans_mas_orchestra_accepts_are_accepted_and_round_trip(text):
    read = read_mas_orchestra(text)
    plan = validate_plan(read.plan)
    assert plan == read.plan  # already consistent: edges and references match one to one
    written = to_mas_orchestra(read)
    again = read_mas_orchestra(written)
    assert again.plan == read.plan
    assert again.descriptions == read.descriptions and again.thinking == read.thinking
    assert to_mas_orchestra(again) == written


def test_the_edge_block_is_the_graph():
    text = agent_block("a") + agent_block("b") + agent_block("c") + edge_block(("a", "b"), ("a", "b"), ("b", "c"))
    plan = parse_mas_orchestra(text)
    assert edge_set(plan) == {("a", "b"), ("b", "c")} and plan.sink() == "c"
    assert plan.agent("b").input == "solve" and plan.agent("c").input == "solve"  # order-only: no data


def test_a_reference_mas_orchestra_substitutes_becomes_an_edge():
    # a and b are both start agents; MAS-Orchestra runs a before b (queue seeded in agent order) and so
    # substitutes ${a} in b's input: data flows a -> b although no edge says so.
    text = (
        agent_block("a")
        + agent_block("b", args="<agent_input>Use ${a}</agent_input>")
        + agent_block("c", args="<agent_input>${a} ${b}</agent_input>")
        + edge_block(("a", "c"), ("b", "c"))
    )
    plan = validate_plan(parse_mas_orchestra(text))
    assert edge_set(plan) == {("a", "b"), ("a", "c"), ("b", "c")} and plan.sink() == "c"


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        # two agents without an outgoing edge (MAS-Orchestra rule 9)
        (agent_block("a") + agent_block("b") + agent_block("c") + edge_block(("a", "b"), ("a", "c")), "sink_count"),
        # every agent has an incoming edge: no start agent (rule 4)
        (agent_block("a") + agent_block("b") + edge_block(("a", "b"), ("b", "a")), "cycle"),
        # a cycle off the path from the start to the sink (rule 3 before rule 7)
        (
            agent_block("s")
            + agent_block("t")
            + agent_block("x")
            + agent_block("y")
            + edge_block(("s", "t"), ("x", "y"), ("y", "x"), ("x", "t")),
            "isolated",
        ),
        # a cycle on that path (rule 7)
        (
            agent_block("s")
            + agent_block("x")
            + agent_block("y")
            + agent_block("t")
            + edge_block(("s", "x"), ("x", "y"), ("y", "x"), ("y", "t")),
            "cycle",
        ),
        (agent_block("a") + edge_block(("a", "a")), "cycle"),
        (agent_block("a") + agent_block("b") + edge_block(("a", "ghost")), "unknown_edge_end"),
        (agent_block("a") + agent_block("b") + edge_block(("", "b")), "unknown_edge_end"),
        (agent_block("a") + agent_block("b") + "<edge><from>a</from><from>b</from><to>b</to></edge>", "edge_pairs"),
        # a repeated id is one agent there (its first block): the self-loop leaves no start agent
        (agent_block("a") + agent_block("a") + edge_block(("a", "a")), "cycle"),
        (agent_block("a b") + agent_block("c") + edge_block(("a b", "c")), "bad_id"),
        # texts MAS-Orchestra would pass unsubstituted, which orchrm would read as edges
        (agent_block("a", args="<agent_input>${a}</agent_input>"), "self_reference"),
        (
            agent_block("a") + agent_block("b", args="<agent_input>${zz}</agent_input>") + edge_block(("a", "b")),
            "unknown_reference",
        ),
        (
            agent_block("a", args="<agent_input>${b}</agent_input>") + agent_block("b") + edge_block(("a", "b")),
            "reference_order",
        ),
    ],
)
def test_plans_mas_orchestra_rejects_are_rejected(text, rule):
    with pytest.raises(PlanError) as info:
        parse_mas_orchestra(text)
    assert info.value.rule == rule


def _mas_orchestra_accepts(n, edges):
    """An independent statement of MAS-Orchestra's graph rules: one agent and no edge, or edges between
    declared agents forming a DAG with exactly one agent without an outgoing edge (a start agent, and every
    agent on a path from one to that sink, follow in a DAG)."""
    if not edges:
        return n == 1
    nodes = set(range(n))
    if any(s not in nodes or d not in nodes for s, d in edges):
        return False
    left, remaining = set(nodes), set(edges)
    while True:
        free = {v for v in left if not any(d == v for _, d in remaining)}
        if not free:
            break
        left -= free
        remaining = {(s, d) for s, d in remaining if s in left}
    return not left and len(nodes - {s for s, _ in edges}) == 1


@settings(max_examples=300, deadline=None)
@given(
    st.integers(1, 6).flatmap(
        lambda n: st.tuples(st.just(n), st.lists(st.tuples(st.integers(0, n), st.integers(0, n)), max_size=9))
    )
)
def test_the_graph_is_accepted_exactly_when_mas_orchestra_accepts_it(case):
    n, edges = case  # an end equal to n names an undeclared agent
    text = "".join(agent_block(f"g{i}") for i in range(n)) + (
        edge_block(*((f"g{s}", f"g{d}") for s, d in edges)) if edges else ""
    )
    try:
        plan = validate_plan(parse_mas_orchestra(text))
    except PlanError:
        assert not _mas_orchestra_accepts(n, edges)
        return
    assert _mas_orchestra_accepts(n, edges)
    assert edge_set(plan) == {(f"g{s}", f"g{d}") for s, d in edges}


def test_looks_like_mas_orchestra():
    assert looks_like_mas_orchestra(EXAMPLE) and looks_like_mas_orchestra(SINGLE)
    assert looks_like_mas_orchestra("Plan:\n<AGENT>\n<Agent_ID>a</Agent_ID>")
    for text in (
        '{"agents": [{"id": "a", "type": "cot", "input": "x"}]}',
        "<answer>4</answer>",
        "",
        "<agent_id>a</agent_id><agent>",
    ):
        assert not looks_like_mas_orchestra(text)
    assert not looks_like_mas_orchestra(None)


def test_tags_spelled_by_case_folding_are_refused():
    # MAS-Orchestra's re.IGNORECASE matches 'ſ' (U+017F) to 's' and 'K' (U+212A) to 'k': it reads such a tag,
    # orchrm refuses the text rather than guess (listed in docs/design.md).
    for text in ("<anſwer>4</anſwer>", SINGLE.replace("thinking", "thin\u212aing")):
        with pytest.raises(PlanError) as info:
            parse_mas_orchestra(text)
        assert info.value.rule == "lookalike_tag"


_FRAGMENTS = st.sampled_from(
    [
        *(f"<{t}>" for t in (*_TAGS, "AGENT", "Edge", "x", "anſwer")),
        *(f"</{t}>" for t in (*_TAGS, "AGENT", "x")),
        *AGENT_NAMES,
        "${a}",
        "${b}",
        "${ a }",
        "${",
        "}",
        "a",
        "b",
        "",
        " ",
        "\n",
        '""',
        "[",
        "]",
        "'r1'",
        '"r2"',
        ",",
        "3",
        "-1",
        "1e9",
        "\x00",
        "\ud800",
        "&amp;",
        "<",
        ">",
        "</",
        "$",
    ]
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.text(max_size=300), st.lists(st.one_of(_FRAGMENTS, st.text(max_size=8)), max_size=60).map("".join)))
def test_any_text_is_a_plan_or_a_plan_error(text):
    assert isinstance(looks_like_mas_orchestra(text), bool)
    try:
        plan = parse_mas_orchestra(text)
    except PlanError as exc:
        assert exc.rule and exc.reason
        return
    assert isinstance(plan, Plan)
    try:
        validate_plan(plan, degree="direct" if not plan.agents else "dag")
    except PlanError:
        pass


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plans(), st.randoms(use_true_random=False))
def test_fragments_of_a_real_plan_are_a_plan_or_a_plan_error(plan, rnd):
    text = to_mas_orchestra(plan)
    cut = sorted(rnd.sample(range(len(text) + 1), 2))
    for variant in (text[: cut[0]], text[cut[0] :], text[: cut[0]] + text[cut[1] :]):
        try:
            validate_plan(parse_mas_orchestra(variant))
        except PlanError:
            pass
