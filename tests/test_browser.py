"""The real-browser test: JupyterLab in Debian's Chromium, driven by Playwright.

Opens notebooks/00_tour.ipynb, runs all cells, clicks the stepper's Step button several times and
checks that the narration changes and that the HW and LSO lines of the partition log strip move.
Saves screenshots to tests/artifacts/.  Chromium comes from scripts/install-chromium.sh (Debian's
package at /usr/bin/chromium); the test skips, saying why, only where it is missing.
"""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "tests" / "artifacts"
CHROMIUM = "/usr/bin/chromium"
NOTEBOOK = "00_tour.ipynb"

# the HW and LSO ticks of orders-0's leader, as drawn in the page (first .js-plotly-plot with them)
READ_LINES = """() => {
  for (const gd of document.querySelectorAll('.js-plotly-plot')) {
    const data = gd.data || [];
    const hw = data.find(t => t.name === 'HW'), lso = data.find(t => t.name === 'LSO');
    if (hw && lso) return {hw: Array.from(hw.x || []), lso: Array.from(lso.x || [])};
  }
  return null;
}"""


# headless Debian Chromium that never reaches the internet by itself
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_http(port: int, token: str, proc, timeout: float = 90) -> None:
    import urllib.request
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("jupyter lab exited early")
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status?token={token}", timeout=2)
            return
        except Exception:
            time.sleep(0.5)
    raise TimeoutError("jupyter lab did not answer")


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"{CHROMIUM} is missing: run `make browser-deps` (scripts/install-chromium.sh) as root to "
                    f"install Debian's chromium; the real-browser test needs it")
    pytest.importorskip("playwright.sync_api", reason="the playwright python package is not installed")
    work = tmp_path_factory.mktemp("lab")
    shutil.copy(ROOT / "notebooks" / NOTEBOOK, work / NOTEBOOK)
    port, token = _free_port(), uuid.uuid4().hex
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}",
               PYTHONPATH=f"{ROOT}:{os.environ.get('PYTHONPATH', '')}", JUPYTER_CONFIG_DIR=str(work / "cfg"),
               JUPYTER_RUNTIME_DIR=str(work / "rt"), JUPYTERLAB_WORKSPACES_DIR=str(work / "ws"))
    cmd = [sys.executable, "-m", "jupyter", "lab", "--no-browser", f"--port={port}", "--ip=127.0.0.1",
           f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={work}",
           f"--config={ROOT / 'jupyter' / 'jupyter_lab_config.py'}"]     # as `make lab` runs it: no news, offline
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")
    log = open(work / "jupyter.log", "w")
    proc = subprocess.Popen(cmd, cwd=work, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        _wait_http(port, token, proc)
        yield f"http://127.0.0.1:{port}/lab/tree/{NOTEBOOK}?token={token}&reset"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def test_tour_runs_in_jupyterlab_and_step_moves_the_hw_and_lso(lab):
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1500, "height": 1100})
            outside = []                                      # everything must load from the lab itself
            page.on("request", lambda r: outside.append(r.url)
                    if not r.url.startswith(("http://127.0.0.1", "data:", "blob:", "about:")) else None)
            page.goto(lab)
            page.get_by_text("| Idle").first.wait_for(timeout=300_000)
            page.get_by_role("menuitem", name="Run").click()
            page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
            # the last cell prints one "ok" line per gallery scenario: wait for the whole run
            page.get_by_text("ok  consume-transform-produce").first.wait_for(timeout=600_000)
            page.locator(".js-plotly-plot .main-svg").first.wait_for(timeout=300_000)
            step = page.locator("button.jupyter-button", has_text="Step").first
            step.scroll_into_view_if_needed()
            narration = page.locator(".txl-narr").first
            first_text = narration.inner_text()
            page.wait_for_function(f"({READ_LINES})() !== null", timeout=300_000)   # the log strip is drawn
            before = page.evaluate(READ_LINES)
            page.screenshot(path=str(ARTIFACTS / "tour_before_steps.png"))

            texts, moved = [first_text], False
            for _ in range(30):
                step.click()
                page.wait_for_function("t => document.querySelector('.txl-narr').innerText !== t",
                                       arg=texts[-1], timeout=300_000)
                texts.append(narration.inner_text())
                now = page.evaluate(READ_LINES)
                if now["hw"] != before["hw"] and now["lso"] != before["lso"]:
                    moved = True
                    break
            after = page.evaluate(READ_LINES)
            page.locator(".js-plotly-plot").first.scroll_into_view_if_needed()
            page.screenshot(path=str(ARTIFACTS / "tour_after_steps.png"))

            # the keys: focus the key box, press the right arrow
            before_key = narration.inner_text()
            page.locator(".txl-keys").first.click()
            page.keyboard.press("ArrowRight")
            page.wait_for_function("t => document.querySelector('.txl-narr').innerText !== t",
                                   arg=before_key, timeout=300_000)
            key_text = narration.inner_text()
            # Run plays steps by itself until paused
            play = page.locator(".widget-play button, .jupyter-widget-play button").first
            play.click()
            page.wait_for_function(
                """t => { const m = document.querySelector('.txl-narr .txl-head').innerText.match(/step (\\d+)/);
                          const n = t.match(/step (\\d+)/); return m && n && +m[1] >= +n[1] + 2; }""",
                arg=key_text, timeout=300_000)
            play.click()
        finally:
            browser.close()
    assert len(set(texts)) == len(texts), "every Step click changed the narration"
    assert moved, f"the HW and LSO lines moved after Step clicks: before {before}, after {after}"
    assert key_text != before_key, "the right-arrow key stepped"
    assert outside == [], f"requests left the machine (no CDN allowed): {outside[:5]}"


# what the pictures show, read from the page: the words on the message arrows and the values in the log cells
READ_PICTURES = """() => {
  const out = {arrows: [], cells: []};
  for (const gd of document.querySelectorAll('.js-plotly-plot')) {
    for (const t of (gd.data || [])) {
      if (t.name === 'arrow labels') out.arrows.push(...Array.from(t.text || []));
      if (t.type === 'bar' && /^orders-\\d+$/.test(t.name || '')) out.cells.push(...Array.from(t.text || []));
    }
  }
  return out;
}"""


# the words the live log strip shows in its cells (plotly hides a bar's words, display none, where they do not fit)
READ_SHOWN_CELLS = """() => {
  for (const gd of document.querySelectorAll('.js-plotly-plot')) {
    if (!(gd.data || []).some(t => t.type === 'bar' && /^orders-\\d+$/.test(t.name || ''))) continue;
    return [...gd.querySelectorAll('.bartext')].filter(t => t.style.display !== 'none').map(t => t.textContent);
  }
  return null;
}"""


# the transactional ids on the coordinator view's state machine, as drawn in the page
READ_TIDS = """() => {
  for (const gd of document.querySelectorAll('.js-plotly-plot')) {
    const t = (gd.data || []).find(t => t.name === 'transactional ids');
    if (t) return Array.from(t.text || []);
  }
  return null;
}"""


def _run_all(page, lab) -> None:
    page.goto(lab)
    page.get_by_text("| Idle").first.wait_for(timeout=300_000)
    page.get_by_role("menuitem", name="Run").click()
    page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
    page.get_by_text("ok  consume-transform-produce").first.wait_for(timeout=600_000)
    page.locator(".js-plotly-plot .main-svg").first.wait_for(timeout=300_000)


def test_tour_steps_to_a_key_moment_by_moments_and_presenter_mode_fits_1280x720(lab):
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1500, "height": 1100})
            _run_all(page, lab)
            # a prediction answered in the page: wrong first (told why), then right
            question = page.locator(".txl-q", has_text="where is the")
            predict = page.locator(".widget-vbox", has=question).last
            predict.scroll_into_view_if_needed()
            verdicts = []
            for answer, verdict in (("5", ".txl-no"), ("0", ".txl-ok")):
                predict.locator("input").first.fill(answer)
                predict.locator("button", has_text="Check").first.click()
                predict.locator(verdict).first.wait_for(timeout=120_000)
                verdicts.append(predict.locator(verdict).first.inner_text())
            page.screenshot(path=str(ARTIFACTS / "tour_prediction_answered.png"))
            narration = page.locator(".txl-narr").first
            page.locator(".widget-toggle-button", has_text="moment").first.click()      # step by moment
            page.locator("button.jupyter-button", has_text="Reset").first.click()
            page.wait_for_function("() => /step 0 of/.test(document.querySelector('.txl-narr').innerText)",
                                   timeout=300_000)
            step = page.locator("button.jupyter-button", has_text="Step").first
            clicks, key = 0, ""
            while clicks < 15 and "★" not in key:
                before = narration.inner_text()
                step.click()
                clicks += 1
                page.wait_for_function("t => document.querySelector('.txl-narr').innerText !== t",
                                       arg=before, timeout=300_000)
                key = narration.inner_text()
            page.locator(".js-plotly-plot").first.scroll_into_view_if_needed()
            page.screenshot(path=str(ARTIFACTS / "tour_key_moment_logs.png"))
            # the message diagram is drawn when its tab is first opened, at the step the stepper is on
            page.locator(".lm-TabBar-tab, .p-TabBar-tab", has_text="Messages").first.click()
            page.wait_for_function(f"({READ_PICTURES})().arrows.length > 0", timeout=60_000)
            page.wait_for_timeout(800)
            pictures = page.evaluate(READ_PICTURES)
            page.screenshot(path=str(ARTIFACTS / "tour_key_moment_messages.png"))
            # so are the coordinator view and the Faults panel
            page.locator(".lm-TabBar-tab, .p-TabBar-tab", has_text="Coordinators").first.click()
            page.wait_for_function(f"(({READ_TIDS})() || []).length > 0", timeout=60_000)
            tids = page.evaluate(READ_TIDS)
            page.locator(".jupyter-widget-Collapse-header", has_text="Faults").first.click()
            crash = page.locator("button.jupyter-button", has_text="Crash").first
            crash.wait_for(timeout=60_000)
            crash.scroll_into_view_if_needed()
            page.screenshot(path=str(ARTIFACTS / "tour_key_moment_faults.png"))
            fault_menu = page.locator("select", has=page.locator("option", has_text="broker-0 (up)")).count()
            # a click on a key moment's tick under the slider jumps there
            tick = page.locator(".txl-tick[data-moment='prepare-commit']").first
            tick.scroll_into_view_if_needed()
            tick.click()
            page.wait_for_function("() => document.querySelector('.txl-narr').innerText"
                                   ".includes('PrepareCommit is durable')", timeout=300_000)
            ticked = narration.inner_text()
            page.wait_for_function("() => !!document.querySelector('.txl-tick-on')", timeout=60_000)
            tick_on = page.locator(".txl-tick-on").first.inner_text()
            page.mouse.move(0, 0)
            page.wait_for_timeout(500)
            # the tick stands under the slider's handle, which is now at that moment's step
            under = page.evaluate("""() => {
              const on = document.querySelector('.txl-tick-on');
              const t = on.getBoundingClientRect();   // the handle of the step slider in the same box
              const h = on.closest('.txl-ticks').parentElement.closest('.widget-vbox')
                          .querySelector('.noUi-handle').getBoundingClientRect();
              return {tick: t.left + 6, handle: h.left + h.width / 2};
            }""")
            page.screenshot(path=str(ARTIFACTS / "tour_tick_clicked.png"))
            # at that moment the consumers stand under the rows; the cells still show their values in the page
            page.locator(".lm-TabBar-tab, .p-TabBar-tab", has_text="Partition logs").first.click()
            page.wait_for_timeout(800)
            page.locator(".js-plotly-plot").first.scroll_into_view_if_needed()
            shown_cells = page.evaluate(READ_SHOWN_CELLS) or []
            page.screenshot(path=str(ARTIFACTS / "tour_key_moment_cells.png"))

            # presenter mode: a new cell at the end runs s.present(); the screen is 1280x720
            page.locator(".jp-Cell").last.click()
            page.keyboard.press("Escape")
            page.keyboard.press("b")
            page.keyboard.press("Enter")
            page.keyboard.type("s.present()")
            page.keyboard.press("Shift+Enter")
            present = page.locator(".txl-present.widget-vbox, .txl-present.jupyter-widgets").last
            present.wait_for(timeout=300_000)
            page.keyboard.press("Escape")
            page.keyboard.press("Control+b")                  # a presenter hides the file browser
            news = page.get_by_role("button", name="No", exact=True)
            if news.count():
                news.first.click()                            # JupyterLab's news question, answered no
            page.set_viewport_size({"width": 1280, "height": 720})
            page.wait_for_timeout(500)
            present.evaluate("el => el.scrollIntoView({block: 'start'})")
            page.wait_for_timeout(800)
            page.screenshot(path=str(ARTIFACTS / "presenter_1280x720.png"))
            boxes = {name: present.locator(sel).first.bounding_box() for name, sel in (
                ("step", "button.jupyter-button:has-text('Step')"), ("narration", ".txl-narr"),
                ("picture", ".js-plotly-plot"), ("key moments", ".txl-chapters"))}
            # the message diagram instead: its key moments stand in one row below it, on the screen too
            present.locator("button.widget-toggle-button:has-text('messages')").first.click()
            page.wait_for_function("() => !document.querySelector('.txl-present.txl-on-logs')", timeout=60_000)
            page.wait_for_timeout(800)
            page.screenshot(path=str(ARTIFACTS / "presenter_messages_1280x720.png"))
            boxes.update({f"{name} (message diagram)": present.locator(sel).first.bounding_box() for name, sel in (
                ("picture", ".js-plotly-plot:visible"), ("key moments", ".txl-chapters"))})
        finally:
            browser.close()
    assert "not" in verdicts[0].lower() or "wrong" in verdicts[0].lower(), verdicts[0]
    assert "LSO" in verdicts[1] and "open transaction" in verdicts[1], verdicts[1]
    assert "★" in key and clicks <= 15, f"a key moment within 15 Step clicks by moment: {clicks} clicks: {key[:200]}"
    assert "★ PrepareCommit is durable" in ticked and tick_on == "▲ prepare-commit", (ticked[:200], tick_on)
    assert abs(under["tick"] - under["handle"]) < 12, f"the tick stands under the slider's handle: {under}"
    assert any(a.startswith(("Produce", "EndTxn", "WriteTxnMarkers", "Fetch", "AddPartitionsToTxn"))
               for a in pictures["arrows"]), pictures["arrows"]
    assert {"order-0", "order-2"} <= set(pictures["cells"]), pictures["cells"]
    assert {"order-0", "order-2"} <= set(shown_cells), f"the cells' words are shown, not hidden: {shown_cells}"
    assert tids and all(" e" in t for t in tids), f"the state machine shows each transactional.id: {tids}"
    assert fault_menu == 1, "the Faults panel, opened, offers the processes of this step"
    for name, box in boxes.items():      # controls, narration and the whole picture on one 1280x720 screen
        assert box is not None and box["y"] >= 0 and box["y"] + box["height"] <= 722 and \
            box["x"] + box["width"] <= 1280 + 2, f"{name} is on the 1280x720 screen: {box}"
