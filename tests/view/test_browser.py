"""The page in a real headless Chromium (Debian's /usr/bin/chromium, driven by Playwright): hostile text stays
text, plans draw as DAGs, filters work, the CSP holds, and the committed 100-question best-of-N run loads in
under 2 s. Skipped, with the reason, where Chromium or Playwright is absent."""

import io
import shutil
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

import pytest

from orchrm.view import load_runs
from synthetic_traces import write_run
from view_runs import BENCH_BON, PAYLOAD, Running

CHROMIUM = Path("/usr/bin/chromium")
pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not CHROMIUM.exists(), reason="no /usr/bin/chromium (apt-get install chromium) for the browser tests"
    ),
]
sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package (the dev extra) is not installed")

FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def browser():
    profile = tempfile.mkdtemp(prefix="orchrm-view-chromium-")
    with sync_api.sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            profile, executable_path=str(CHROMIUM), headless=True, args=FLAGS, viewport={"width": 1400, "height": 900}
        )
        yield context
        context.close()
    shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture
def page(browser):
    page = browser.new_page()
    page.problems = []  # console errors (a CSP violation is one), page errors, dialogs
    page.on("console", lambda m: page.problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: page.problems.append(str(e)))
    page.on("dialog", lambda d: (page.problems.append("dialog " + d.message), d.dismiss()))
    yield page
    page.close()


# Waits are selectors, never wait_for_function: the page's CSP forbids the eval Playwright's polling uses.
def open_viewer(page, url):
    response = page.goto(url)
    page.wait_for_selector("body[data-ready='1']", timeout=10_000)
    return response


def pixels(png: bytes):
    from PIL import Image

    return Image.open(io.BytesIO(png)).convert("RGB")


def test_hostile_text_stays_text(page, viewer):
    qid = f"q0-{PAYLOAD}"
    response = open_viewer(page, viewer.url + f"#run=0&q={quote(qid)}&plan=0")
    assert "script-src 'self'" in response.headers["content-security-policy"]
    page.wait_for_selector("#trace .agent")
    assert page.locator("#injected").count() == 0 and page.locator("img").count() == 0
    assert page.evaluate("window.pwned") is None
    # the payload is on the page, as literal text, in the question list, the trace, every agent card
    assert PAYLOAD in page.locator(".q").first.inner_text()
    assert PAYLOAD in page.locator("#trace").inner_text()
    assert page.locator("#trace pre", has_text=PAYLOAD).count() >= 4
    assert page.problems == []


def test_dag_drawn_with_its_nodes_edges_and_sink(page, viewer):
    open_viewer(page, viewer.url + "#run=0&q=q2&plan=0")
    dag = page.locator("svg.dag")
    dag.wait_for()
    assert dag.locator("g.node").count() == 4 and dag.locator("line.edge").count() == 4
    assert page.locator("svg.dag g.node[data-agent='a3'] rect.sink").count() == 1
    assert page.locator("#trace .agent").count() == 4
    assert "picked by rm" in page.locator("#trace h3").inner_text()
    img = pixels(dag.screenshot())
    colours = img.getcolors(1 << 16)
    assert colours is not None and len(colours) > 20  # drawn, not blank
    assert (221, 244, 255) in {c for _, c in colours}  # the node fill
    # the single-agent plan draws one node
    page.locator("#plans a", has_text="#1").click()
    page.wait_for_selector("body[data-trace='q2/1']")
    assert page.locator("svg.dag g.node").count() == 1
    assert page.problems == []


def test_filters_by_kind_method_and_outcome(page, viewer):
    open_viewer(page, viewer.url)
    assert page.locator(".q").count() == 4
    page.select_option("#f-kind", "odd")
    assert page.locator(".q").count() == 2
    page.select_option("#f-kind", "")
    page.select_option("#f-method", "rm")
    page.select_option("#f-outcome", "correct")
    assert sorted(page.locator(".q").evaluate_all("rows => rows.map(r => r.dataset.q)")) == [f"q0-{PAYLOAD}", "q2"]
    page.select_option("#f-outcome", "wrong")
    assert page.locator(".q").count() == 2
    page.select_option("#f-method", "")
    page.select_option("#f-outcome", "")
    page.fill("#f-text", "q3")
    assert page.locator(".q").count() == 1
    assert page.locator("#count").inner_text() == "1 of 4 questions"
    assert page.locator("#methods tr").count() == 3  # header + rm + random
    assert page.problems == []


@pytest.mark.skipif(not BENCH_BON.exists(), reason="the committed best-of-N run is not in this checkout")
def test_committed_100_question_bon_run_loads_in_under_2s(page, tmp_path):
    cold = time.perf_counter()
    running = Running(load_runs([BENCH_BON]))
    try:
        start = time.perf_counter()
        open_viewer(page, running.url)
        seconds = time.perf_counter() - start
        print(f"100-question best-of-N run: files read and served, page ready: {time.perf_counter() - cold:.3f}s")
        assert page.locator(".q").count() == 100
        assert page.locator(".chip").count() == 800
        own = page.evaluate("document.body.dataset.loadMs")
        print(f"100-question best-of-N run: page ready in {seconds:.3f}s (the page's own count: {own} ms)")
        assert seconds < 2.0
        # the rm pick of the first question, its DAG and agents
        page.locator(".q").first.click()
        page.wait_for_selector("#trace")
        shot = pixels(page.screenshot(path=str(tmp_path / "bon.png")))
        assert len(shot.getcolors(1 << 16) or range(1 << 16)) > 50
        assert page.problems == []
    finally:
        running.stop()


def test_training_run_shows_sampled_plans_and_their_dags(page, grpo_dir):
    running = Running(load_runs([grpo_dir]))
    try:
        open_viewer(page, running.url + "#run=0&q=g1&plan=3")
        page.wait_for_selector("#trace svg.dag")
        assert page.locator("svg.dag g.node").count() == 4
        assert "step 2" in page.locator("#trace h3").inner_text()
        assert page.locator("#steps tr").count() == 3
        page.locator("#plans a", has_text="#2").click()
        page.wait_for_selector("body[data-trace='g1/2']")
        assert PAYLOAD in page.locator("#trace .err").inner_text()
        assert page.locator("svg.dag").count() == 0 and page.locator("img").count() == 0
        assert page.evaluate("window.pwned") is None
        assert page.problems == []
    finally:
        running.stop()


def test_rollout_run_shows_an_invalid_plan_as_text(page, tmp_path):
    running = Running(load_runs([write_run(tmp_path / "run", questions=2)]))
    try:
        open_viewer(page, running.url + "#run=0&q=q1&plan=2")
        page.wait_for_selector("body[data-trace='q1/2']")
        assert "invalid plan — parse: bad" in page.locator("#trace .err").inner_text()
        assert page.locator("svg.dag").count() == 0
        page.locator("#trace summary", has_text="plan text as written").click()
        assert page.locator("#trace pre", has_text="{not a plan").is_visible()
        # quick clicks: only the last trace asked for is shown
        page.locator("#plans a", has_text="#0").click()
        page.locator("#plans a", has_text="#1").click()
        page.wait_for_selector("body[data-trace='q1/1']")
        assert page.locator("#trace").count() == 1 and page.locator("svg.dag g.node").count() == 1
        page.select_option("#f-outcome", "correct")
        assert page.locator(".q").count() == 2 and page.locator("#f-method option").count() == 1
        assert page.problems == []
    finally:
        running.stop()


def test_csp_blocks_inline_scripts_and_handlers_in_the_browser(page, viewer):
    open_viewer(page, viewer.url)
    page.evaluate("""() => { const s = document.createElement('script'); s.textContent = 'window.inline = 1';
                             document.head.append(s); }""")
    page.evaluate("""() => { const b = document.createElement('button'); b.setAttribute('onclick', 'window.handler = 1');
                             document.body.append(b); b.click(); }""")
    assert page.evaluate("() => [window.inline, window.handler]") == [None, None]
    assert page.problems and all("Content Security Policy" in p for p in page.problems)
