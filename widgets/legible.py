"""Can a picture's words be read without hovering?  Where each text label of a plotly figure stands, in pixels, and
which labels meet.

Owns the one estimate of a label's size the lab uses (``text_extent``: an average character is ``CHAR_EM`` of the
type size wide, a line ``LINE_EM`` of it high), the rule that two labels keep ``MARGIN`` pixels apart (``clash``),
the reading of a figure's labels as boxes (``label_boxes``: annotations, text traces and the words inside bars,
placed as plotly places them) with the pairs that meet (``touching``), those that run off the picture (``off_picture``)
and those set too small to read from the back of a room (``too_small``: under ``SMALLEST_PX``), and one placement
pass for the static pictures (``spread``: a label that meets one placed before it moves to the nearest free place
among those it offers).  The live views place their own labels with the same estimate (``spacetime.place_labels``).  Reads
figures only; pure functions.
"""
from __future__ import annotations

import re
from typing import Callable, Iterable, Optional, Sequence

CHAR_EM = 7.6 / 13      # an average character of the lab's type (Open Sans / Arial), as a part of its size
LINE_EM = 1.15          # a line of it, ascent to descent
MARGIN = 2.0            # the pixels two labels keep between them (closer, they read as one)
# a title's average character, in ems: prose, mostly lower case (measured in Chromium on the lab's titles: 0.44-0.48)
TITLE_EM = 0.48
SMALLEST_PX = 14        # the smallest type a projected picture may use (widgets.pictures.FONT)
_TAG = re.compile(r"<[^>]+>")


def text_extent(text: str, size: float) -> tuple:
    """(width, height) in pixels of ``text`` (plotly's HTML: <br> breaks a line, other tags take no room) in type
    of ``size`` px."""
    text = str(text)
    if "<" not in text:                                    # plain words, one line (most labels)
        return len(text) * CHAR_EM * size, LINE_EM * size
    lines = [_TAG.sub("", line) for line in re.split(r"<br\s*/?>", text)]
    return max(len(line) for line in lines) * CHAR_EM * size, len(lines) * LINE_EM * size


def clash(a: Sequence[float], b: Sequence[float], margin: float = MARGIN) -> bool:
    """Whether boxes ``a`` and ``b`` (left, right, top, bottom in pixels) overlap or come closer than ``margin``."""
    return min(a[1], b[1]) - max(a[0], b[0]) > -margin + 1e-6 and min(a[3], b[3]) - max(a[2], b[2]) > -margin + 1e-6


# ------------------------------------------------------------------------------------------ a figure's labels
class _Axis:
    """Data -> pixels along one axis of a figure (its range, or the data's extent when plotly chooses it)."""

    def __init__(self, axis, lo_px: float, span_px: float, extent: tuple, flip: bool, categories: dict) -> None:
        self.categories = categories        # a category axis's words -> their places 0, 1, ... (plotly's order)
        rng = list(axis.range) if axis.range is not None and axis.autorange not in (True, "reversed") else None
        if rng is None:
            lo, hi = extent if extent[0] is not None else (0.0, 1.0)
            if axis.rangemode == "tozero":
                lo, hi = min(lo, 0.0), max(hi, 0.0)
            rng = [hi, lo] if axis.autorange == "reversed" else [lo, hi]
        self.r0, self.r1 = float(rng[0]), float(rng[1])
        self.lo_px, self.span_px, self.flip = lo_px, span_px, flip

    def place(self, v) -> float:
        """``v`` as a number along the axis (a category's place)."""
        return self.categories[v] if isinstance(v, str) else v

    def __call__(self, v) -> float:
        if isinstance(v, str):
            v = self.categories[v]
        f = (float(v) - self.r0) / ((self.r1 - self.r0) or 1e-9)
        return self.lo_px + self.span_px * (1 - f if self.flip else f)


def _seq(v) -> list:
    """A trace's array property as a list (plotly keeps tuples, lists or numpy arrays; None: empty)."""
    return [] if v is None else list(v) if not isinstance(v, (str, int, float)) else [v]


def _categories(fig, letter: str) -> dict:
    """A category axis's words -> their places, in plotly's order (``categoryarray``, then as the traces name them);
    empty for a numeric axis."""
    axis = fig.layout[f"{letter}axis"]
    places: dict = {}
    if axis.categoryorder == "array":
        for c in _seq(axis.categoryarray):
            places.setdefault(str(c), len(places))
    for tr in fig.data:
        if tr.type in ("bar", "scatter"):
            for v in _seq(getattr(tr, letter)):
                if isinstance(v, str):
                    places.setdefault(v, len(places))
    return places


def _extent(fig, letter: str, categories: dict) -> tuple:
    lo = hi = None
    for tr in fig.data:
        if tr.type == "bar":
            length = (letter == "x") == (tr.orientation == "h")   # the bars' lengths lie along this axis
            vals = getattr(tr, letter)
            base = tr.base if length else None
            for i, v in enumerate(_seq(vals)):
                if v is None:
                    continue
                v = categories[v] if isinstance(v, str) else v
                b = _at(base, i, 0) or 0
                ends = (b, b + v) if length else (v - 0.5, v + 0.5)
                lo = min(ends) if lo is None else min(lo, *ends)
                hi = max(ends) if hi is None else max(hi, *ends)
        elif tr.type == "scatter":
            for v in _seq(getattr(tr, letter)):
                if v is not None:
                    v = categories[v] if isinstance(v, str) else v
                    lo = v if lo is None else min(lo, v)
                    hi = v if hi is None else max(hi, v)
    return lo, hi


def y_labels_width(ticks: Sequence[str], size: float, title_size: float = 0) -> float:
    """The room a y axis's tick labels (type ``size``) and title (``title_size``; 0: none) take left of the plot:
    plotly's automargin widens the left margin to it."""
    widest = max([text_extent(t, size)[0] for t in ticks] or [0.0])
    return widest + 8 + (LINE_EM * title_size + 10 if title_size else 0) if widest else 0.0


def _y_labels_width(axis, base: float) -> float:
    if axis.visible is False or axis.showticklabels is False or axis.side == "right":
        return 0.0
    size = axis.tickfont.size if axis.tickfont and axis.tickfont.size else base
    title = axis.title.text if axis.title else None
    title_size = (axis.title.font.size if axis.title.font and axis.title.font.size else base) if title else 0
    return y_labels_width([str(t) for t in _seq(axis.ticktext)], size, title_size)


def _legend_width(fig, base: float) -> float:
    """The room a legend standing right of the plot takes (plotly's automargin widens the right margin to it)."""
    lay = fig.layout
    leg = lay.legend
    if lay.showlegend is False or leg.orientation == "h" or (leg.x is not None and leg.x < 1):
        return 0.0
    names = [t.name for t in fig.data if getattr(t, "showlegend", False) is not False and t.name
             and (lay.showlegend or t.showlegend)]
    size = leg.font.size if leg.font and leg.font.size else base
    return max([text_extent(n, size)[0] for n in names] or [-50.0]) + 50      # the symbol and the gaps


def _frame(fig) -> tuple:
    lay = fig.layout
    width, height = lay.width or 700, lay.height or 450
    m = lay.margin
    left, right = m.l if m.l is not None else 80, m.r if m.r is not None else 80
    top, bottom = m.t if m.t is not None else 100, m.b if m.b is not None else 80
    base = lay.font.size if lay.font and lay.font.size else 12
    left = max(left, _y_labels_width(lay.yaxis, base))        # plotly widens a margin its axis labels need
    right = max(right, _legend_width(fig, base))
    plot_w, plot_h = width - left - right, height - top - bottom
    xc, yc = _categories(fig, "x"), _categories(fig, "y")
    x = _Axis(lay.xaxis, left, plot_w, _extent(fig, "x", xc), False, xc)
    y = _Axis(lay.yaxis, top, plot_h, _extent(fig, "y", yc), True, yc)
    return x, y, (left, top, plot_w, plot_h)


def _at(v, i: int, default=None):
    """Item i of a trace property that is either one value for every point or one per point."""
    if v is not None and not isinstance(v, (str, int, float)):
        v = list(v)
        return v[i] if i < len(v) else default
    return default if v is None else v


def text_box(x: float, y: float, text: str, size: float, position: str = "middle center", marker: float = 0) -> tuple:
    """The box (left, right, top, bottom) in pixels of a text trace's words at pixel (x, y), as plotly places them
    for ``textposition`` ("top center", "middle right", ...) beside a marker ``marker`` px wide (0: none)."""
    w, h = text_extent(text, size)
    vert, horiz = position.split(" ")
    gap = marker / 2 + 3 if marker else 0             # plotly keeps the words a little off the marker
    x += gap if horiz == "right" else -gap if horiz == "left" else 0
    y += gap if vert == "bottom" else -gap if vert == "top" else 0
    return _anchored(x, y, w, h, {"right": "left", "left": "right"}.get(horiz, "center"),
                     {"top": "bottom", "bottom": "top"}.get(vert, "middle"))


def pixels_per_unit(fig) -> tuple:
    """(pixels per unit of x, pixels per unit of y) of ``fig``'s plot (its ranges, or its data's extent)."""
    X, Y, _ = _frame(fig)
    return abs(X(1) - X(0)), abs(Y(1) - Y(0))


def _anchored(cx: float, cy: float, w: float, h: float, xanchor: str, yanchor: str) -> tuple:
    left = cx if xanchor == "left" else cx - w if xanchor == "right" else cx - w / 2
    top = cy if yanchor == "top" else cy - h if yanchor == "bottom" else cy - h / 2
    return left, left + w, top, top + h


def label_boxes(fig) -> list:
    """(what, text, (left, right, top, bottom)) in the figure's pixels for every label plotly draws on ``fig``: its
    annotations with text, the points of its text traces and the words inside its bars (those that fit, as
    ``uniformtext`` shows them).  ``what`` says which label it is ('annotation 3', 'arrow labels #2')."""
    return [(what, text, box) for what, text, box, _ in labels(fig)]


def labels(fig) -> list:
    """``label_boxes`` with each label's type size in px: (what, text, box, size); a bar's words shrunk to fit their
    cell are at the size they are drawn."""
    lay = fig.layout
    X, Y, (left, top, plot_w, plot_h) = _frame(fig)
    base = (lay.font.size if lay.font and lay.font.size else 12)
    out = []

    def px(v, ref: str, axis, lo: float, span: float, flip: bool) -> float:
        if ref and ref.endswith(("paper", "domain")):     # (an axis's domain is the plot's, one plot)
            return lo + span * ((1 - float(v)) if flip else float(v))
        return axis(v)

    for k, a in enumerate(lay.annotations or ()):
        if not a.text or a.x is None or a.y is None or a.visible is False:
            continue
        size = (a.font.size if a.font and a.font.size else base)
        w, h = text_extent(a.text, size)
        cx = px(a.x, a.xref, X, left, plot_w, False)
        cy = px(a.y, a.yref, Y, top, plot_h, True)
        xanchor, yanchor = a.xanchor or "auto", a.yanchor or "auto"
        if a.showarrow is not False:                           # the words stand at the arrow's tail
            if a.axref in (None, "pixel"):
                cx, cy = cx + (a.ax if a.ax is not None else -10), cy + (a.ay if a.ay is not None else -30)
            else:
                cx, cy = X(a.ax), Y(a.ay)
            xanchor = "center" if xanchor == "auto" else xanchor
            yanchor = "middle" if yanchor == "auto" else yanchor
        box = _anchored(cx + (a.xshift or 0), cy - (a.yshift or 0), w, h, xanchor, yanchor)
        out.append((f"annotation {k}", a.text, box, size))
    for j, tr in enumerate(fig.data):
        name = tr.name or f"trace {j}"
        if tr.visible is False or tr.visible == "legendonly":
            continue
        if tr.type == "scatter" and tr.mode and "text" in tr.mode:
            marker = "markers" in tr.mode
            xs, ys = _seq(tr.x), _seq(tr.y)
            for i, text in enumerate(_seq(tr.text)):
                if not text or xs[i] is None or ys[i] is None:
                    continue
                size = _at(tr.textfont.size, i, base) if tr.textfont else base
                pos = _at(tr.textposition, i, "middle center")
                box = text_box(X(xs[i]), Y(ys[i]), text, size, pos, _at(tr.marker.size, i, 6) if marker else 0)
                out.append((f"{name} #{i}", text, box, size))
        elif tr.type == "bar" and tr.text is not None and tr.orientation == "h":
            size = tr.textfont.size if tr.textfont and tr.textfont.size else base
            smallest = lay.uniformtext.minsize if lay.uniformtext and lay.uniformtext.mode == "hide" else 0
            xs, ys = _seq(tr.x), _seq(tr.y)
            for i, text in enumerate(_seq(tr.text)):
                if not text or xs[i] is None:
                    continue
                b = _at(tr.base, i, 0) or 0
                x0, x1 = sorted((X(b), X(b + xs[i])))
                cell_h = abs(Y(Y.place(ys[i]) + (tr.width if isinstance(tr.width, (int, float)) else 0.8)) - Y(ys[i]))
                room_w, room_h = x1 - x0 - 6, cell_h - 6                # plotly's padding inside a bar
                w, h = text_extent(text, size)
                scale = min(1.0, room_w / w if w else 1.0, room_h / h if h else 1.0)
                if scale <= 0 or size * scale < smallest:
                    continue                                            # hidden: it does not fit the cell
                out.append((f"{name} cell {i}", text, _anchored((x0 + x1) / 2, Y(ys[i]), w * scale, h * scale,
                                                                "center", "middle"), size * scale))
    return out


def too_small(fig, smallest: float = SMALLEST_PX) -> list:
    """(what, text, size) of ``fig``'s words set in type under ``smallest`` px: its labels (``labels``) and the tick
    words of axes whose type is set smaller."""
    out = [(what, text, size) for what, text, _, size in labels(fig) if size < smallest]
    for name in ("xaxis", "yaxis", "xaxis2", "yaxis2", "xaxis3", "yaxis3"):
        axis = fig.layout[name] if name in fig.layout else None
        if axis is not None and axis.tickfont and axis.tickfont.size and axis.tickfont.size < smallest:
            out.append((f"{name} ticks", " ".join(str(t) for t in (axis.ticktext or ())[:3]), axis.tickfont.size))
    return out


def touching(fig, margin: float = MARGIN) -> list:
    """Pairs ((what, text), (what, text)) of ``fig``'s labels that overlap or come closer than ``margin`` px."""
    boxes = label_boxes(fig)
    return [((boxes[j][0], boxes[j][1]), (a[0], a[1])) for i, a in enumerate(boxes) for j in range(i)
            if clash(a[2], boxes[j][2], margin)]


def off_picture(fig) -> list:
    """(what, text) of ``fig``'s labels that run off the picture or under a legend standing right of the plot."""
    lay = fig.layout
    width, height = lay.width or 700, lay.height or 450
    right = width - _legend_width(fig, lay.font.size if lay.font and lay.font.size else 12)
    out = [(what, text) for what, text, b in label_boxes(fig) if b[0] < 0 or b[1] > right or b[2] < 0 or b[3] > height]
    title = lay.title.text if lay.title and lay.title.text else ""
    if title:       # plotly sets a title in 1.4 times the figure's type, from 5 % of the width, and never wraps it
        size = lay.title.font.size if lay.title.font and lay.title.font.size else \
            1.4 * (lay.font.size if lay.font and lay.font.size else 12)
        x = lay.title.x if lay.title.x is not None else 0.05
        longest = max(len(_TAG.sub("", line)) for line in re.split(r"<br\s*/?>", title))
        if x * width + longest * TITLE_EM * size > width:
            out.append(("title", title))
    return out


# ------------------------------------------------------------------------------------------ placing labels
def keep_inside(fig, indexes: Iterable[int]) -> None:
    """Annotations of ``fig`` (``indexes``) whose words would run past the plot's right end (off the picture or
    under a legend beside it) or its left end end at their point instead of being centred on it (xanchor)."""
    boxes = {what: box for what, _, box in label_boxes(fig)}
    _, _, (left, _, plot_w, _) = _frame(fig)
    anns = fig.layout.annotations
    for k in indexes:
        box = boxes.get(f"annotation {k}")
        if box is not None and (anns[k].xanchor or "auto") in ("auto", "center"):
            if box[1] > left + plot_w:
                anns[k].xanchor = "right"
            elif box[0] < left:
                anns[k].xanchor = "left"


def cover(box: Sequence[float], placed: Iterable[Sequence[float]], margin: float = MARGIN) -> float:
    """How much of ``placed`` the box meets: the area (px²) its boxes share with ``box`` grown by ``margin``."""
    lo_x, hi_x, lo_y, hi_y = box[0] - margin, box[1] + margin, box[2] - margin, box[3] + margin
    total = 0.0
    for p_lo_x, p_hi_x, p_lo_y, p_hi_y in placed:
        if p_lo_y < hi_y and p_hi_y > lo_y and p_lo_x < hi_x and p_hi_x > lo_x:
            total += (min(hi_x, p_hi_x) - max(lo_x, p_lo_x)) * (min(hi_y, p_hi_y) - max(lo_y, p_lo_y))
    return total


def first_free(candidates: Iterable[Sequence[float]], placed: list, bounds: Optional[Sequence[float]] = None) -> tuple:
    """The one placement rule of the lab's labels: (index, 0) of the first of ``candidates`` (boxes, most wanted
    first; an iterator is read only as far as the first free one) that meets no box of ``placed`` (see ``clash``)
    and lies inside ``bounds`` (a box; None: anywhere); when none does, (index, how much it meets) of the one that meets least (leaving ``bounds`` counts as meeting a
    lot)."""
    best, best_cover = 0, None
    for i, box in enumerate(candidates):
        c = cover(box, placed)
        if bounds is not None and (box[0] < bounds[0] or box[1] > bounds[1] or box[2] < bounds[2] or box[3] > bounds[3]):
            c += 1e6
        if c == 0:
            return i, 0.0
        if best_cover is None or c < best_cover:
            best, best_cover = i, c
    return best, best_cover


def spread(fig, movable: Sequence[int], tries: Callable[[int], Sequence[tuple]], keep_clear: Sequence[tuple] = ()) -> None:
    """One placement pass over a static picture's annotations: those whose indexes are in ``movable`` (in that
    order: the first choose first) each keep their place when it meets no label placed before them, else move by
    the first of ``tries(index)`` ((xshift, yshift) in pixels, added to their own) that meets none and stays inside
    the plot, else to the one that meets least.  Every other label of the figure stays where it is and is kept
    clear of, and so is each of ``keep_clear`` ((x0, x1, y0, y1) in data units: what the words must not cover, such
    as a row of cells).  Run once when the picture is drawn."""
    boxes = {what: box for what, _, box in label_boxes(fig)}
    mine = {f"annotation {k}" for k in movable}
    placed = [box for what, box in boxes.items() if what not in mine]
    X, Y, (left, top, plot_w, plot_h) = _frame(fig)
    for x0, x1, y0, y1 in keep_clear:
        (x_lo, x_hi), (y_lo, y_hi) = sorted((X(x0), X(x1))), sorted((Y(y0), Y(y1)))
        placed.append((x_lo + MARGIN, x_hi - MARGIN, y_lo + MARGIN, y_hi - MARGIN))   # touching its edge is fine
    bounds = (left, left + plot_w, top, top + plot_h)
    anns = fig.layout.annotations
    for k in movable:
        box = boxes.get(f"annotation {k}")
        if box is None:
            continue
        moves = [(0.0, 0.0)] + list(tries(k))
        shifted = [(box[0] + dx, box[1] + dx, box[2] - dy, box[3] - dy) for dx, dy in moves]
        i, _ = first_free(shifted, placed, bounds)
        if i:
            a = anns[k]
            a.xshift, a.yshift = (a.xshift or 0) + moves[i][0], (a.yshift or 0) + moves[i][1]
        placed.append(shifted[i])
