// orchrm view: the page. Every text from a run (questions, plans, model outputs) is untrusted: it enters the DOM
// only through textContent and attribute setters, never as markup. There is no innerHTML in this file.
"use strict";

const SVG = "http://www.w3.org/2000/svg";
const state = { runs: [], run: null, data: null, q: null, plan: null, seq: 0 };

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") node.className = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, String(v));
  }
  for (const c of children) {
    if (c === null || c === undefined) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

function svg(tag, attrs) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, String(v));
  return node;
}

function $(id) { return document.getElementById(id); }

async function getJSON(url) {
  const res = await fetch(url, { credentials: "same-origin" });
  if (!res.ok) throw new Error(url + ": " + res.status);
  return res.json();
}

function fmt(x, digits) {
  if (x === null || x === undefined) return "–";
  if (typeof x === "number") return digits === undefined ? x.toLocaleString("en-US") : x.toFixed(digits);
  return String(x);
}

function setStatus(text) { $("status").textContent = text; }

// ---- hash state: #run=0&q=<id>&plan=<i> ---------------------------------------------------------------------
function readHash() {
  const p = new URLSearchParams(location.hash.slice(1));
  return { run: p.has("run") ? Number(p.get("run")) : 0, q: p.get("q"), plan: p.has("plan") ? Number(p.get("plan")) : null };
}

function writeHash() {
  const p = new URLSearchParams();
  p.set("run", String(state.run));
  if (state.q !== null) p.set("q", state.q);
  if (state.plan !== null) p.set("plan", String(state.plan));
  history.replaceState(null, "", "#" + p.toString());
}

// ---- run list and summary -----------------------------------------------------------------------------------
function renderSummary(run) {
  const box = $("summary");
  box.replaceChildren();
  const tok = Object.entries(run.tokens).map(([k, v]) => k + " " + fmt(v)).join(" · ");
  box.append(el("div", { class: "meta" },
    el("b", {}, run.name), el("span", { class: "tag" }, run.kind),
    " " + run.tasks.join(", ") + " · " + fmt(run.questions) + " questions · " +
    (run.kind === "grpo" ? fmt(run.samples) + " sampled plans" : fmt(run.traces) + " traces") + " · tokens: " + (tok || "–")));
  if (run.grpo && run.grpo.steps) {
    const table = el("table", { id: "steps" },
      el("tr", {}, ...["step", "samples", "valid", "mean reward"].map(h => el("th", {}, h))));
    for (const s of run.grpo.steps) {
      table.append(el("tr", {}, el("td", {}, fmt(s.step)), el("td", {}, fmt(s.samples)),
        el("td", {}, fmt(100 * s.valid, 0) + "%"), el("td", {}, fmt(s.mean_reward, 3))));
    }
    box.append(el("div", {}, "training (GRPO): reward of the sampled plans by step"), table);
  }
  if (run.bon && run.bon.methods) {
    const table = el("table", { id: "methods" },
      el("tr", {}, ...["method", "accuracy", "95% interval", "plan tok", "execute tok", "verify tok", "total tok", "plans run"].map(h => el("th", {}, h))));
    for (const [name, m] of Object.entries(run.bon.methods)) {
      const t = m.tokens || {};
      table.append(el("tr", {},
        el("td", {}, name), el("td", {}, fmt(m.accuracy, 3)),
        el("td", {}, m.low === null || m.low === undefined ? "–" : fmt(m.low, 3) + "–" + fmt(m.high, 3)),
        el("td", {}, fmt(t.plan, 0)), el("td", {}, fmt(t.execute, 0)), el("td", {}, fmt(t.verify, 0)),
        el("td", {}, fmt(t.total, 0)), el("td", {}, fmt(m.executed_plans, 2))));
    }
    box.append(el("div", {}, "best-of-N at N=" + fmt(run.bon.n) + " (mean tokens per question by category)"), table);
  }
}

function fillSelect(select, values, keepFirst) {
  while (select.options.length > keepFirst) select.remove(keepFirst);
  for (const v of values) select.append(el("option", { value: v }, v));
}

async function loadRun(id) {
  state.run = id;
  const t0 = performance.now();
  setStatus("loading run…");
  const run = state.runs[id];
  renderSummary(run);
  state.data = await getJSON("/api/runs/" + id + "/questions");
  fillSelect($("f-task"), state.data.tasks, 1);
  fillSelect($("f-kind"), state.data.kinds, 1);
  fillSelect($("f-method"), state.data.methods, 1);
  renderQuestions();
  setStatus(fmt(state.data.questions.length) + " questions in " + Math.round(performance.now() - t0) + " ms");
}

// ---- question list ------------------------------------------------------------------------------------------
function outcomeOf(q, method) {
  if (method) {
    const pick = q.picks[method];
    if (!pick || pick.correct === null || pick.correct === undefined) return null;
    if (pick.correct >= 1) return "correct";
    if (pick.correct <= 0) return "wrong";
    return "partial";
  }
  return q.plans.some(p => p.outcome === "correct") ? "correct" : "wrong";
}

function visibleQuestions() {
  const task = $("f-task").value, kind = $("f-kind").value, method = $("f-method").value;
  const outcome = $("f-outcome").value, text = $("f-text").value.trim().toLowerCase();
  return state.data.questions.filter(q =>
    (!task || q.task === task) && (!kind || q.kind === kind) &&
    (!outcome || outcomeOf(q, method) === outcome) &&
    (!method || q.picks[method]) &&
    (!text || q.id.toLowerCase().includes(text) || (q.question || "").toLowerCase().includes(text)));
}

function planChip(q, p) {
  const picked = Object.entries(q.picks).filter(([, v]) => v.chosen === p.index).map(([m]) => m);
  const label = "#" + p.index + (p.reward === null || p.reward === undefined ? "" : " " + fmt(p.reward, 2));
  return el("span", {
    class: "chip " + p.outcome + (picked.length ? " picked" : ""),
    title: p.outcome + (picked.length ? " · picked by " + picked.join(", ") : "") + " · " + p.shape +
      (p.step === undefined ? " · " + fmt(p.tokens) + " tok" : " · step " + p.step),
    "data-plan": p.index,
    onclick: (ev) => { ev.stopPropagation(); selectQuestion(q.id, p.index); },
  }, label);
}

function renderQuestions() {
  const list = $("questions");
  const shown = visibleQuestions();
  const method = $("f-method").value;
  const frag = document.createDocumentFragment();
  for (const q of shown) {
    const tags = [q.task, q.kind].filter(Boolean).map(t => el("span", { class: "tag" }, t));
    const verdict = method ? outcomeOf(q, method) : null;
    const row = el("div", { class: "q" + (q.id === state.q ? " sel" : ""), "data-q": q.id, tabindex: 0, role: "button",
      onclick: () => selectQuestion(q.id, null),
      onkeydown: (ev) => { if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); selectQuestion(q.id, null); } } },
      el("div", {}, el("span", { class: "qid" }, q.id), ...tags, verdict ? el("span", { class: "tag" }, method + ": " + verdict) : null),
      el("div", { class: "text" }, q.question || ""),
      el("div", { class: "chips" }, ...q.plans.map(p => planChip(q, p))));
    frag.append(row);
  }
  list.replaceChildren(frag);
  $("count").textContent = shown.length + " of " + state.data.questions.length + " questions";
}

// ---- one question, one trace --------------------------------------------------------------------------------
function defaultPlan(q) {
  for (const m of ["rm", "rm-adaptive", "judge"]) {
    if (q.picks[m] && q.picks[m].chosen !== null && q.picks[m].chosen !== undefined) return q.picks[m].chosen;
  }
  return q.plans.length ? q.plans[0].index : null;
}

async function selectQuestion(qid, plan) {
  const q = state.data.questions.find(x => x.id === qid);
  if (!q) return;
  state.q = qid;
  state.plan = plan === null ? defaultPlan(q) : plan;
  writeHash();
  for (const row of document.querySelectorAll(".q.sel")) row.classList.remove("sel");
  const row = document.querySelector('.q[data-q="' + CSS.escape(qid) + '"]');
  if (row) row.classList.add("sel");
  const detail = $("detail");
  detail.replaceChildren(renderQuestionHead(q));
  if (state.plan === null) return;
  const url = "/api/runs/" + state.run + "/trace?q=" + encodeURIComponent(qid) + "&plan=" + state.plan;
  const seq = ++state.seq;
  const d = await getJSON(url);
  if (seq !== state.seq) return;  // a later click asked for another trace
  detail.append(d.sample ? renderSample(d) : renderTrace(d));
  document.body.dataset.trace = qid + "/" + state.plan;
}

function renderSample(d) {
  const s = d.sample;
  const out = el("div", { id: "trace" });
  out.append(el("h3", {}, "sample #" + s.index + " · step " + s.step + " · " + d.outcome + " · reward " + fmt(s.reward, 3)));
  if (!s.valid) out.append(el("div", { class: "err" }, "invalid plan — " + (s.rule || "?") + (s.reason ? ": " + s.reason : "")));
  if (s.error) out.append(el("div", { class: "err" }, "scorer error: " + s.error));
  if (d.graph.nodes.length) out.append(el("h4", {}, "plan"), drawDag(d.graph, []));
  for (const a of (d.plan && d.plan.agents) || []) {
    out.append(el("div", { class: "agent", "data-agent": a.id }, el("div", {}, el("b", {}, a.id), " (" + a.type + ")"),
      Object.keys(a.options || {}).length ? block("options", a.options) : null, block("input", a.input)));
  }
  out.append(block("completion as sampled", s.completion));
  if (s.detail && Object.keys(s.detail).length) out.append(block("reward detail", s.detail));
  return out;
}

function renderQuestionHead(q) {
  if (state.runs[state.run].kind === "grpo") {
    const table = el("table", { id: "plans" }, el("tr", {}, ...["sample", "step", "outcome", "shape", "reward"].map(h => el("th", {}, h))));
    for (const p of q.plans) {
      table.append(el("tr", {},
        el("td", {}, el("a", { href: "#", onclick: (ev) => { ev.preventDefault(); selectQuestion(q.id, p.index); } }, "#" + p.index)),
        el("td", {}, fmt(p.step)), el("td", {}, p.outcome), el("td", {}, p.shape), el("td", {}, fmt(p.reward, 3))));
    }
    return el("div", {}, el("h2", {}, q.id), table);
  }
  const head = el("div", {},
    el("h2", {}, q.id), el("div", {}, ...[q.task, q.kind].filter(Boolean).map(t => el("span", { class: "tag" }, t))),
    el("div", {}, el("b", {}, "gold: "), q.gold === null ? "–" : q.gold));
  const methods = Object.keys(q.picks);
  const table = el("table", { id: "plans" }, el("tr", {},
    ...["plan", "outcome", "answer", "shape", "tokens", "RM reward", "judge", "picked by"].map(h => el("th", {}, h))));
  for (const p of q.plans) {
    const picked = methods.filter(m => q.picks[m].chosen === p.index);
    const judge = q.judge && q.judge.scores ? q.judge.scores[String(p.index)] : null;
    table.append(el("tr", { class: p.index === state.plan ? "sel" : null },
      el("td", {}, el("a", { href: "#", onclick: (ev) => { ev.preventDefault(); selectQuestion(q.id, p.index); } }, "#" + p.index)),
      el("td", {}, p.outcome), el("td", {}, p.answer === null ? "–" : p.answer), el("td", {}, p.shape),
      el("td", {}, fmt(p.tokens)), el("td", {}, fmt(p.reward, 3)), el("td", {}, fmt(judge, 3)), el("td", {}, picked.join(", "))));
  }
  head.append(table);
  if (methods.length) {
    const picks = el("table", { id: "picks" }, el("tr", {}, ...["method", "pick", "correct", "tokens", "plans run"].map(h => el("th", {}, h))));
    for (const m of methods) {
      const v = q.picks[m];
      picks.append(el("tr", {}, el("td", {}, m), el("td", {}, v.chosen === null ? "(expected over plans)" : "#" + v.chosen),
        el("td", {}, fmt(v.correct, 2)), el("td", {}, fmt(v.tokens, 0)), el("td", {}, fmt(v.executed))));
    }
    head.append(el("h3", {}, "each method's pick"), picks);
  }
  return head;
}

function drawDag(graph, agents) {
  const W = 150, H = 40, GX = 50, GY = 16, PAD = 10;
  const status = Object.fromEntries(agents.map(a => [a.id, a.status]));
  const pos = {};
  let maxLevel = 0, maxRow = 0;
  for (const n of graph.nodes) {
    pos[n.id] = { x: PAD + n.level * (W + GX), y: PAD + n.row * (H + GY) };
    maxLevel = Math.max(maxLevel, n.level); maxRow = Math.max(maxRow, n.row);
  }
  const box = svg("svg", { class: "dag", width: 2 * PAD + (maxLevel + 1) * W + maxLevel * GX, height: 2 * PAD + (maxRow + 1) * H + maxRow * GY,
    role: "img", "aria-label": "plan DAG" });
  const defs = svg("defs");
  const marker = svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 8, markerHeight: 8, orient: "auto" });
  marker.append(svg("path", { class: "arrow", d: "M0,0 L10,5 L0,10 z" }));
  defs.append(marker);
  box.append(defs);
  for (const [src, dst] of graph.edges) {
    const a = pos[src], b = pos[dst];
    if (!a || !b) continue;
    box.append(svg("line", { class: "edge", x1: a.x + W, y1: a.y + H / 2, x2: b.x, y2: b.y + H / 2, "marker-end": "url(#arrow)" }));
  }
  for (const n of graph.nodes) {
    const g = svg("g", { class: "node", "data-agent": n.id });
    const p = pos[n.id];
    const cls = [n.id === graph.sink ? "sink" : "", status[n.id] === "failed" ? "failed" : "", status[n.id] === "skipped" ? "skipped" : ""].join(" ").trim();
    g.append(svg("rect", { x: p.x, y: p.y, width: W, height: H, rx: 6, class: cls }));
    const id = svg("text", { x: p.x + 8, y: p.y + 16 });
    id.textContent = n.id.length > 18 ? n.id.slice(0, 17) + "…" : n.id;
    const type = svg("text", { x: p.x + 8, y: p.y + 31, class: "type" });
    type.textContent = n.type + (n.id === graph.sink ? " · sink" : "") + (status[n.id] && status[n.id] !== "ok" ? " · " + status[n.id] : "");
    const title = svg("title");
    title.textContent = n.id + " (" + n.type + ")";
    g.append(title, id, type);
    box.append(g);
  }
  return box;
}

function block(label, text) {
  if (text === null || text === undefined || text === "") return null;
  return el("div", {}, el("b", {}, label), el("pre", {}, typeof text === "string" ? text : JSON.stringify(text, null, 1)));
}

function renderCall(call, i) {
  const u = call.usage || {};
  const sum = "call " + i + " · " + fmt(u.prompt_tokens) + " prompt + " + fmt(u.completion_tokens) + " completion tok · " +
    fmt(call.latency_s, 1) + "s" + (call.cached ? " · cached" : "") + " · " + call.finish_reason;
  const body = el("details", { class: "call" }, el("summary", {}, sum));
  for (const m of call.messages || []) body.append(block(m.role, m.content));
  body.append(block("reply", call.text));
  return body;
}

function renderTrace(d) {
  const t = d.trace;
  const out = el("div", { id: "trace" });
  out.append(el("h3", {}, "plan #" + t.plan_index + " · " + d.outcome + (d.picked_by.length ? " · picked by " + d.picked_by.join(", ") : "")));
  out.append(el("div", {}, "RM reward " + fmt(d.reward, 3) + " · judge score " + fmt(d.judge_score, 3) +
    " · orchestrator " + t.orchestrator.backend + "/" + t.orchestrator.model_id.slice(0, 24) + " · T=" + t.orchestrator.temperature));
  out.append(block("question", t.question));
  const tok = el("table", { id: "tokens" }, el("tr", {}, ...["category", "prompt", "completion", "calls", "cached"].map(h => el("th", {}, h))));
  for (const [k, v] of Object.entries(d.tokens)) {
    tok.append(el("tr", {}, el("td", {}, k), el("td", {}, fmt(v.prompt)), el("td", {}, fmt(v.completion)), el("td", {}, fmt(v.calls)), el("td", {}, fmt(v.cached_calls))));
  }
  out.append(el("h4", {}, "tokens per category"), tok);
  if (t.plan_error) {
    out.append(el("div", { class: "err" }, "invalid plan — " + t.plan_error.rule + ": " + t.plan_error.message + (t.plan_error.agent ? " (agent " + t.plan_error.agent + ")" : "")));
  } else if (t.plan && t.plan.agents.length === 0) {
    out.append(block("direct answer", t.plan.answer));
  }
  if (d.graph.nodes.length) out.append(el("h4", {}, "plan"), drawDag(d.graph, t.agents));
  out.append(el("details", {}, el("summary", {}, "plan text as written"), el("pre", {}, t.plan_text)));
  if (t.plan_call) out.append(el("details", {}, el("summary", {}, "orchestrator call"), renderCall(t.plan_call, 0)));
  const specs = Object.fromEntries(((t.plan && t.plan.agents) || []).map(a => [a.id, a]));
  for (const a of t.agents) {
    const tokens = (a.calls || []).reduce((s, c) => s + (c.usage.prompt_tokens || 0) + (c.usage.completion_tokens || 0), 0);
    const card = el("div", { class: "agent " + a.status, "data-agent": a.id },
      el("div", {}, el("b", {}, a.id), " (" + a.type + ", " + a.status + ") · " + a.calls.length + " calls · " + fmt(tokens) + " tok · " + fmt(a.latency_s, 1) + "s"),
      specs[a.id] && Object.keys(specs[a.id].options || {}).length ? block("options", specs[a.id].options) : null,
      block("input", a.resolved_input === null ? a.input : a.resolved_input),
      a.steps && a.steps.length ? block("steps", a.steps) : null,
      block("output", a.output), block("answer", a.answer),
      a.error ? el("div", { class: "err" }, "error: " + a.error) : null);
    a.calls.forEach((c, i) => card.append(renderCall(c, i)));
    out.append(card);
  }
  out.append(el("div", {}, el("b", {}, "final answer: "), t.final_answer === null ? "–" : t.final_answer, " · gold: ", t.gold === null ? "–" : t.gold));
  for (const e of t.errors || []) out.append(el("div", { class: "err" }, "error: " + e));
  return out;
}

// ---- start --------------------------------------------------------------------------------------------------
async function main() {
  const t0 = performance.now();
  state.runs = await getJSON("/api/runs");
  const select = $("run");
  state.runs.forEach(r => select.append(el("option", { value: r.id }, r.name + " (" + r.kind + ")")));
  const hash = readHash();
  const first = state.runs[hash.run] ? hash.run : 0;
  select.value = String(first);
  select.addEventListener("change", async () => { state.q = null; state.plan = null; $("detail").replaceChildren(); await loadRun(Number(select.value)); writeHash(); });
  for (const id of ["f-task", "f-kind", "f-method", "f-outcome"]) $(id).addEventListener("change", renderQuestions);
  $("f-text").addEventListener("input", renderQuestions);
  if (!state.runs.length) { setStatus("no runs"); document.body.dataset.ready = "1"; return; }
  await loadRun(first);
  document.body.dataset.loadMs = String(Math.round(performance.now() - t0));
  document.body.dataset.ready = "1";
  if (hash.q) await selectQuestion(hash.q, hash.plan);
}

main().catch(err => { setStatus("error: " + err.message); document.body.dataset.error = err.message; });
