"""How many pixels a row of the partition-logs strip gets (a helper of ``log_strip.LogStrip``).

Owns the one rule from rows to heights.  A row (one replica) is a unit of the strip's y axis; its cells are
``BAR`` of it high.  With room to spare (the stepper's view, which grows with its rows) a row gets ``ROW_PX``, its
cells ``WORDS_BAR_PX``: their 14 px words and a little air.  A strip given the most it may take (``max_height``:
presenter mode's stage, on a 1280×720 screen) gives its rows the room there is, down to the least that still
shows the cells' words: a cell then fills more of its row (up to ``TIGHT_BAR``, so that the replicas' rows stay
apart), and at the least it is ``WORDS_MIN_PX`` high, the least in which plotly shows a 14 px word (uniformtext
"hide": a line of 14 px type is 16 px high in Chromium, 3 px of padding above and below, and plotly snaps a
bar's edges to whole pixels).  Two and three
partitions of three replicas fit presenter mode's stage so; a strip that would need less than the least (four
partitions and more) takes the least and scrolls in its stage.  The words and triangles above and below a
partition's cells (the HW / LSO labels, the consumers) keep their distance in pixels from the cells' words
(``beside_words``); a second consumer at the same offset stands a row's part lower, so under the rule's least
rows its name can come within a few pixels of the next partition's HW label when that label stands at the same
offset (the one story with three partitions, chapter 02's, has one consumer).  Pure arithmetic: no figure here.
"""
from __future__ import annotations

import math
from typing import Optional

BAR = 0.8             # a cell's height, in rows, with room to spare
# the least height of a cell that shows its words: plotly hides a bar's words (uniformtext "hide") unless their line
# (16 px for FONT = 14 px type in Chromium) and 3 px of padding above and below fit inside the bar; 2 px to spare
WORDS_BAR_PX = 24
ROW_PX = WORDS_BAR_PX / BAR     # so the plot gives each row (a unit of the y axis) this many pixels with room
WORDS_MIN_PX = 22.5   # the least: the 22 px plotly needs, and half a pixel for its snapping (at 22.0 some hid)
TIGHT_BAR = 0.92      # a cell fills at most this much of its row (the next replica's cells 2 px or more below)


def fit_rows(span: float, margins: float, max_height: Optional[float] = None) -> tuple:
    """(the figure's height in pixels, pixels per row, a cell's height in rows) for a y axis of ``span`` rows and
    ``margins`` pixels above and below the plot, in at most ``max_height`` pixels (None: as tall as the rows
    need with room to spare).  A strip that cannot fit at the least row its words need is that tall."""
    if max_height is None or margins + ROW_PX * span <= max_height:
        return math.ceil(margins + ROW_PX * span), ROW_PX, BAR
    px = (max_height - margins) / span
    if px * TIGHT_BAR < WORDS_MIN_PX:                      # too many rows for the room: the least, scrolling
        px = WORDS_MIN_PX / TIGHT_BAR
        return math.ceil(margins + px * span), px, TIGHT_BAR
    return int(max_height), px, min(TIGHT_BAR, max(BAR, WORDS_BAR_PX / px))


def beside_words(rows: float, px: float) -> float:
    """How far from a row's middle (in rows of ``px`` pixels) a mark stands that stands ``rows`` from it in rows of
    ``ROW_PX``: as many pixels from the cells' words, which stand in the middle (and so still clear of the cells,
    which are smaller)."""
    return rows if px == ROW_PX else rows * ROW_PX / px
