"""Presenter mode's partition logs show the words written on their cells: the strip's height follows its rows (each
cell tall enough for its 14 px words, plus the margins for the title, the offset axis and, in the normal view, the
legend), in presenter mode as in the stepper, for the chapters' two-partition stories and chapter 02's three
partitions.  In presenter mode the strip fits its stage on a 1280×720 screen: two and three partitions of three
replicas whole, without scrolling, their rows given fewer pixels but never fewer than their words need; four
partitions take the least and scroll.  Read from the layout, and in Chromium: plotly hides a bar's words that do
not fit (uniformtext "hide"), so the page shows which words a person sees."""
from __future__ import annotations

import json
import os
from pathlib import Path

import plotly.graph_objects as go
import plotly.io as pio
import pytest

from txnlab import Cluster
from widgets import LogStrip, Stepper
from widgets.pictures import FONT
from widgets.presenter import PICTURE_HEIGHT, STRIP_MARGIN, WIDTH
from widgets.strip_rows import TIGHT_BAR, WORDS_BAR_PX, WORDS_MIN_PX

CHROMIUM = "/usr/bin/chromium"
PLOTLY_JS = Path(go.__file__).resolve().parent.parent / "package_data" / "plotly.min.js"
# Chromium sets a line of 14 px type 16 px high, and plotly keeps 3 px free above and below a bar's words
NEEDED_PX = 16 + 2 * 3
STORIES = {"lso-stuck-by-open-transaction": 2, "commit-marker-lost-retried": 3}   # chapters 03 and 02


def _cell_px(fig) -> float:
    """The drawn height of one cell, in pixels, from the figure's layout."""
    lay = fig.layout
    lo, hi = lay.yaxis.range
    plot = lay.height - lay.margin.t - lay.margin.b
    bar = next(t for t in fig.data if t.type == "bar")
    return plot / abs(lo - hi) * bar.width


def _presenter_strip(story: str):
    s = Stepper(story)
    box = s.present()
    moment = s.key_moments[len(s.key_moments) // 2][0]
    s.goto(moment)
    return s, s.presenter_views[0], box


@pytest.mark.parametrize("story", sorted(STORIES))
def test_presenter_modes_cells_are_tall_enough_for_their_words(story):
    s, strip, _ = _presenter_strip(story)
    parts = {(t, p) for t, p, *_ in strip._rows}
    assert len(parts) == STORIES[story]
    assert FONT == 14
    assert _cell_px(strip.figure) >= NEEDED_PX, (story, strip.figure.layout.height)
    assert _cell_px(s.log_strip.figure) >= NEEDED_PX, (story, s.log_strip.figure.layout.height)
    s.close()


def _stage(box, strip):
    return next(w for w in box.children if getattr(w, "children", None) and strip.figure in w.children)


def _px(size: str) -> int:
    return int(size.rstrip("px"))


def _type_sizes(fig) -> list:
    """Every type size the figure sets for its words: its own, its axes' tick words, the legend's, the cells' words
    (and the least plotly may shrink them to), every trace's words."""
    lay = fig.layout
    sizes = [lay.font.size, lay.xaxis.tickfont.size, lay.yaxis.tickfont.size, lay.legend.font.size,
             lay.uniformtext.minsize]
    sizes += [t.textfont.size for t in fig.data if getattr(t, "textfont", None) is not None]
    return [s for s in sizes if s is not None]


@pytest.mark.parametrize("story", sorted(STORIES))
def test_presenter_modes_stage_shows_two_and_three_partitions_whole_without_scrolling(story):
    s, strip, box = _presenter_strip(story)
    stage = _stage(box, strip)
    height = strip.figure.layout.height
    assert height <= PICTURE_HEIGHT <= _px(stage.layout.max_height), \
        f"{STORIES[story]} partitions of three replicas fit the stage ({height} px in {stage.layout.max_height})"
    assert _cell_px(strip.figure) >= WORDS_MIN_PX > NEEDED_PX, "each cell still shows its 14 px words"
    assert min(_type_sizes(strip.figure)) >= FONT == 14, _type_sizes(strip.figure)
    assert strip.figure.data[0].width <= TIGHT_BAR, "the replicas' rows stay apart"
    s.close()


def _strip_of(partitions: int, max_height=None) -> LogStrip:
    c = Cluster(brokers=3, seed=1)
    c.create_topic("orders", partitions=partitions, replication_factor=3)
    strip = LogStrip(width=WIDTH, title="", max_height=max_height)
    if max_height is not None:
        strip.figure.layout.margin.update(STRIP_MARGIN)     # as presenter mode sets them
    strip.update(c)
    return strip


@pytest.mark.parametrize("partitions", [1, 2, 3, 4, 5])
def test_presenter_modes_rows_get_the_room_there_is_down_to_what_their_words_need(partitions):
    """One rule from rows to heights: up to three partitions of three replicas fit the stage; more take the least
    a cell's words need (and the stage scrolls); the normal view gives every row its room whatever their number."""
    strip = _strip_of(partitions, PICTURE_HEIGHT)
    height, cell = strip.figure.layout.height, _cell_px(strip.figure)
    assert cell >= WORDS_MIN_PX, (partitions, cell)
    if partitions <= 3:
        assert height <= PICTURE_HEIGHT, (partitions, height)
    else:
        assert height > PICTURE_HEIGHT and cell == pytest.approx(WORDS_MIN_PX, abs=0.1), (partitions, height, cell)
    normal = _strip_of(partitions)
    assert _cell_px(normal.figure) == pytest.approx(WORDS_BAR_PX, abs=0.1), "the normal view's rows as they were"


@pytest.mark.parametrize("story", sorted(STORIES))
def test_presenter_modes_strip_shows_every_cells_words_in_chromium(story):
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"{CHROMIUM} is missing: run `make browser-deps`")
    sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright python package is not installed")
    s, strip, _ = _presenter_strip(story)
    fig = json.loads(pio.to_json(go.Figure(strip.figure)))
    words = [w for t in fig["data"] if t["type"] == "bar" for w in (t.get("text") or []) if w]
    s.close()
    assert words, "the moment has cells with words"
    page_html = f"<html><head><meta charset='utf-8'><script>{PLOTLY_JS.read_text()}</script></head>" \
                "<body style='margin:0'><div id='g'></div></body></html>"
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--headless", "--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.set_content(page_html)
            page.evaluate("f => Plotly.newPlot('g', f.data, f.layout)", fig)
            texts = page.evaluate("() => [...document.querySelectorAll('.bartext')]"
                                  ".map(t => [t.textContent, t.style.display !== 'none'])")
            legend = page.evaluate("() => { const r = document.querySelector('.legend').getBoundingClientRect();"
                                   " return [r.left, r.right, r.top, r.bottom]; }")
            names = page.evaluate("() => [...document.querySelectorAll('.legend .legendtext')].map(t => t.textContent)")
        finally:
            browser.close()
    hidden = [w for w, shown in texts if not shown]
    assert texts and hidden == [], f"{story}: words hidden on cells too thin for them: {hidden}"
    width, height = fig["layout"]["width"], fig["layout"]["height"]
    assert "LSO (last stable offset)" in " ".join(names)
    assert 0 <= legend[0] < legend[1] <= width and 0 <= legend[2] < legend[3] <= height, \
        f"{story}: the legend beside the strip is on the picture: {legend} in {width}x{height}"


def test_presenter_mode_brings_the_narrations_style_when_it_is_the_first_of_its_stepper_on_the_page():
    """``present()`` alone in a cell (the stepper never shown): the narration still has its colours, its bold key
    moment and its padding, which the stepper's own style sheet sets."""
    from widgets.stepper_ui import CSS as STEPPER_CSS
    s, _strip, box = _presenter_strip("lso-stuck-by-open-transaction")
    assert STEPPER_CSS in box.children[0].value
    s.close()


def test_presenter_modes_key_moments_stand_in_the_stage_corner_under_the_partition_logs():
    """With the partition logs on the stage, the key moments stand in its lower right corner (the box then fits
    1280x720: each key moment is one click away) and the stage keeps its whole height; with the message diagram,
    which takes the stage's width, they stand below it.  A click on one goes to it."""
    from widgets.presenter import PICTURE_HEIGHT, STAGE_PAD
    s, _strip, box = _presenter_strip("abort-hidden-from-read-committed")
    stage, chapters = box.children[3], box.children[4]
    assert "txl-on-logs" in box._dom_classes and "txl-chapters" in chapters._dom_classes
    assert stage.layout.min_height == f"{PICTURE_HEIGHT + STAGE_PAD}px"
    # no plotly toolbar over the legend in presenter mode; the normal view keeps it
    assert all(v.figure._config.get("displayModeBar") is False for v in s.presenter_views)
    assert s.log_strip.figure._config.get("displayModeBar") is not False
    pick = box.children[1].children[-1]
    pick.value = "messages"
    assert "txl-on-logs" not in box._dom_classes and stage.layout.min_height is None
    pick.value = "partition logs"
    assert "txl-on-logs" in box._dom_classes
    first = chapters.children[1]
    first.click()
    assert s.position == s.key_moments[0][2]
    s.close()
