"""Where the live log strip's words stand (a helper of ``log_strip.LogStrip``): the HW / LSO labels above each
partition, the consumers' triangles and names under it, and the names of two consumers turned so that they never
meet in 14 px type."""
from __future__ import annotations

from .cluster_view import consumers_of
from .legible import text_extent
from .pictures import SMALL

CONSUMER_ROW, SECOND_CONSUMER_DROP = 0.62, 0.8      # consumers stand below a partition's last row (y offsets)
HW_ROW = 0.55                                        # the HW / LSO labels above its first row (rows of ROW_PX)


def part_facing_names(cons: dict, lo: int, hi: int, px: float, room_right: float) -> None:
    """A read_committed consumer's name (to the right of its triangle) and a read_uncommitted one's (to the left)
    face each other when the second stands a little to the right of the first on the same row: if they would
    meet, each turns to its outer side where there is room, or goes under its triangle."""
    rc, ru = cons["read_committed"], cons["read_uncommitted"]
    rc_sides, ru_sides = list(rc[4]), list(ru[4])
    for i, (x1, y1, t1) in enumerate(zip(rc[0], rc[1], rc[2])):
        for j, (x2, y2, t2) in enumerate(zip(ru[0], ru[1], ru[2])):
            if y1 != y2 or x1 >= x2 or rc_sides[i] != "middle right" or ru_sides[j] != "middle left":
                continue
            w1, w2 = text_extent(t1, SMALL)[0], text_extent(t2, SMALL)[0]
            if (x2 - x1) * px >= w1 + w2 + 28:
                continue
            rc_sides[i] = "middle left" if (x1 - lo) * px >= w1 + 14 else "bottom right"
            ru_sides[j] = "middle right" if (hi - x2) * px + room_right >= w2 + 14 else "bottom left"
    cons["read_committed"] = rc[:4] + (rc_sides,)
    cons["read_uncommitted"] = ru[:4] + (ru_sides,)


def hw_labels(rows, labels, above: float = HW_ROW) -> tuple:
    """'HW n' and 'LSO n' above each partition (``above`` rows over its first row's middle), at the leader's
    values."""
    first_row = {}
    for topic, p, broker, y, *_ in rows:
        first_row.setdefault((topic, p), y)
    xs, ys, texts, colors = [], [], [], []
    for topic, p, hw, lso in labels:
        y0 = first_row[(topic, p)] - above
        if hw == lso:
            xs.append(hw), ys.append(y0), texts.append(f"HW = LSO = {hw}"), colors.append("#1c7ed6")
            continue
        xs += [hw, lso]
        ys += [y0, y0]
        texts += [f"HW {hw}", f"LSO {lso}"]
        colors += ["#1c7ed6", "#f76707"]
    return xs, ys, texts, colors


def consumer_marks(cluster, rows, below: float = CONSUMER_ROW) -> dict:
    """The consumers' triangles, ``below`` rows under their partition's last row's middle, with their names."""
    first_row = {}
    for topic, p, broker, y, *_ in rows:
        first_row[(topic, p)] = y               # the partition's last row: consumers stand below it
    out = {"read_committed": ([], [], [], []), "read_uncommitted": ([], [], [], [])}
    for name, iso, positions in consumers_of(cluster):
        for (topic, p), pos in positions.items():
            y0 = first_row.get((topic, p))
            if y0 is None or pos < 0 or iso not in out:
                continue
            xs, ys, texts, hs = out[iso]
            xs.append(pos)
            ys.append(y0 + below)
            texts.append(name)
            hs.append(f"{name} ({iso}): position {pos} on {topic}-{p}<br>the next offset it will fetch")
    # a read_uncommitted consumer at the same position as a read_committed one stands a little lower: two
    # triangles, each with its name beside it (one name under the other's triangle met it in 14 px type)
    taken = set(zip(out["read_committed"][0], out["read_committed"][1]))
    xs, ys = out["read_uncommitted"][0], out["read_uncommitted"][1]
    for i, (x, y) in enumerate(zip(xs, ys)):
        if (x, y) in taken:
            ys[i] = y + SECOND_CONSUMER_DROP
    return out
