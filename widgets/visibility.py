"""When a commit becomes readable, partition by partition: the decision is one durable record, but each
partition's read_committed readers see the transaction only once that partition's own marker is written
and replicated (its LSO passes the transaction's records).

Owns ``commit_timeline(scenario, transactional_id, topics)`` (a fresh run of a gallery scenario, stepped
event by event, noting when the coordinator's decision became durable and when each partition became
readable) and ``visibility_figure(timeline)`` (a static plotly picture of it).  Reads the trace narration,
``transaction_state`` and ``partition_state`` only; never touches a learner's stepper.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Sequence

import plotly.graph_objects as go


@dataclass
class CommitTimeline:
    scenario: str
    transactional_id: str
    decided_ms: Optional[int] = None          # PrepareCommit durable in __transaction_state
    decided_step: Optional[int] = None
    readable_ms: dict = field(default_factory=dict)     # "orders-0" -> lab time its LSO passed the records
    readable_step: dict = field(default_factory=dict)
    end_ms: int = 0

    def order(self) -> list:
        """The partitions in the order they became readable."""
        return sorted(self.readable_ms, key=lambda p: (self.readable_ms[p], p))


def commit_timeline(scenario: str, transactional_id: str, partitions: Sequence[tuple], *, seed: int = 0,
                    variant: Optional[str] = None, max_steps: int = 200_000) -> CommitTimeline:
    """Step a fresh run of ``scenario`` to its end and note, for the first commit of ``transactional_id``,
    the lab time its decision became durable and the time each of ``partitions`` ((topic, p), ...) became
    readable to read_committed consumers (its LSO moved past the end of the log it had when the decision was
    taken)."""
    from .stepper import Stepper
    s = Stepper(scenario, seed=seed, variant=variant)
    t = CommitTimeline(scenario, transactional_id)
    pending: dict = {}
    try:
        for _ in range(max_steps):
            if s.at_end:
                break
            s._step_once()
            c = s.cluster
            now = c.kernel.now
            if t.decided_ms is None:
                st = (c.transaction_state(transactional_id) or {}).get("state")
                if st in ("PrepareCommit", "CompleteCommit"):
                    t.decided_ms, t.decided_step = now, s.position
                    # the transaction's records are below each partition's LEO now
                    pending = {f"{tp}-{p}": c.partition_state(tp, p)["leo"] for tp, p in partitions}
            for name, leo in list(pending.items()):
                tp, p = name.rsplit("-", 1)
                lso = c.partition_state(tp, int(p))["lso"]        # None while the partition has no leader
                if lso is not None and lso >= leo:
                    t.readable_ms[name], t.readable_step[name] = now, s.position
                    del pending[name]
            if t.decided_ms is not None and not pending:
                break
        t.end_ms = s.cluster.kernel.now
    finally:
        s.close()
    return t


FONT = 14          # every word of the picture, legible on a projector


def visibility_figure(t: CommitTimeline, title: str = "", width: int = 840) -> go.Figure:
    """One row for the decision, one per partition: a bar from the decision to the moment the partition
    became readable (committed, not readable yet: its marker is not written, or not yet below the HW), then
    green (readable).  ``width`` fits a notebook column beside JupyterLab's file browser."""
    if t.decided_ms is None:
        raise ValueError(f"{t.transactional_id!r} never committed in {t.scenario}")
    rows = ["decision (PrepareCommit durable)"] + t.order()
    end = max([t.decided_ms] + list(t.readable_ms.values())) + 1
    end = end + max(1, (end - t.decided_ms) // 5)
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=[t.decided_ms], y=[rows[0]], mode="markers+text", marker=dict(size=14, color="#862e9c"),
                             text=[f"  decided at {t.decided_ms} ms"], textposition="middle right", textfont=dict(size=FONT),
                             name="the decision: atomic and durable", hoverinfo="text"))
    for name in t.order():
        at = t.readable_ms[name]
        # the words go in the longer of its two bars, at the moment they meet (in the shorter they would shrink)
        waiting_longer = at - t.decided_ms >= end - at
        words = [f"readable from {at} ms →" if waiting_longer else f"readable from {at} ms"]
        fig.add_trace(go.Bar(y=[name], x=[at - t.decided_ms], base=[t.decided_ms], orientation="h",
                             marker_color="#F2B701", name="decided, not readable yet (marker not written or not replicated)",
                             showlegend=name == t.order()[0],
                             text=words if waiting_longer else None, textposition="inside", insidetextanchor="end",
                             textfont=dict(size=FONT),
                             hovertext=f"{name}: not readable for {at - t.decided_ms} ms after the decision",
                             hoverinfo="text"))
        fig.add_trace(go.Bar(y=[name], x=[end - at], base=[at], orientation="h", marker_color="#54A24B",
                             name="readable (read_committed)", showlegend=name == t.order()[0],
                             text=None if waiting_longer else words, textposition="inside", insidetextanchor="start",
                             textfont=dict(size=FONT), hovertext=f"{name}: readable from {at} ms", hoverinfo="text"))
    fig.update_layout(barmode="overlay", width=width, height=200 + 56 * len(rows), margin=dict(l=10, r=10, t=50, b=40),
                      title=title or f"{t.scenario}: one decision, each partition readable on its own",
                      xaxis_title="lab time (ms)", yaxis=dict(categoryorder="array", categoryarray=rows[::-1]),
                      plot_bgcolor="white", font=dict(size=FONT),
                      legend=dict(orientation="h", yanchor="top", y=-0.3, x=0, font=dict(size=FONT)))
    return fig
