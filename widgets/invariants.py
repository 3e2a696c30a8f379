"""The invariants panel: which of the engine's invariants hold at the stepper's current step (✓ / ✗ / …).

Owns ``live_invariants(cluster)``: the exactly-once invariants a person can check by looking at a Kafka cluster now
-- LSO ≤ HW ≤ LEO on every leader (``txnlab.sweep.invariants.watermark_violations``, the check the sweep makes
after each step), no duplicate of an idempotent producer's batch in a log, no read_committed consumer past the
last stable offset (it would have read an open or aborted transaction) -- and ``panel_html``, which draws them, a broken one red.  A counterexample's own checks (the
sweep's history checker, ``txnlab.check``) come from its recipe.  Reads state only.
"""
from __future__ import annotations

import html

from txnlab.sweep.invariants import watermark_violations

from .cluster_view import consumers_of, is_kafka

MARKS = {True: "✓", False: "✗", None: "…"}


def live_invariants(cluster) -> list:
    """(name, True / False / None, words) for a Kafka cluster now; [] for another lab."""
    if not is_kafka(cluster):
        return []
    topics = list(cluster.topics())
    broken = watermark_violations(cluster, topics)
    out = [("LSO ≤ HW ≤ LEO on every leader", not broken, broken[0] if broken else "holds on every leader")]
    dup = _duplicate_batches(cluster, topics)
    out.append(("no duplicate of an idempotent producer's batch", not dup,
                dup[0] if dup else "every (producer id, epoch, sequence) is in each log once"))
    past = _read_committed_past_lso(cluster)
    out.append(("read_committed never reads past the LSO (no open or aborted read)", not past,
                past[0] if past else "every read_committed position is at or below its partition's LSO"))
    return out


def _leader_logs(cluster, topics):
    for t in topics:
        p = 0
        while (t, p) in cluster.controller.states:
            lead = cluster.leader(t, p)
            if lead >= 0 and cluster.broker(lead).alive:
                log = cluster.broker(lead).logs.get((t, p))
                if log is not None:
                    yield t, p, log
            p += 1


def _duplicate_batches(cluster, topics) -> list:
    out = []
    for t, p, log in _leader_logs(cluster, topics):
        seen = {}
        for b in log.batches:
            if b.is_control or b.producer_id < 0 or b.base_sequence < 0:
                continue
            key = (b.producer_id, b.producer_epoch, b.base_sequence)
            if key in seen:
                out.append(f"{t}-{p}: producer id {key[0]} epoch {key[1]} sequence {key[2]} at offsets "
                           f"{seen[key]} and {b.base_offset}")
            seen[key] = b.base_offset
    return out


def _read_committed_past_lso(cluster) -> list:
    out = []
    for name, iso, positions in consumers_of(cluster):
        if iso != "read_committed":
            continue
        for (t, p), pos in positions.items():
            try:
                state = cluster.partition_state(t, p)
            except KeyError:
                continue
            # the highest LSO any alive replica has (a new leader may lag the old one for a moment)
            bound = max((cluster.broker(b).logs[(t, p)].last_stable_offset for b, r in state["replicas"].items()
                         if r["alive"] and (t, p) in cluster.broker(b).logs), default=None)
            if bound is not None and pos > bound:
                out.append(f"{name} is at offset {pos} of {t}-{p}, past its LSO {bound}")
    return out


def panel_html(checks: list) -> str:
    """The checks as a row of ✓ / ✗ / … badges, a broken one red, with its words on hover and below."""
    if not checks:
        return ""
    badges, broken = [], []
    for name, ok, words in checks:
        cls = {True: "txl-ok", False: "txl-bad", None: "txl-wait"}[ok]
        badges.append(f"<span class='{cls}' title='{html.escape(str(words))}'>{html.escape(name)} {MARKS[ok]}</span>")
        if ok is False:
            broken.append(f"<div class='txl-bad'>{html.escape(name)} ✗: {html.escape(str(words))}</div>")
    return ("<div class='txl-inv'><b>invariants at this step:</b> " + " ".join(badges) + "".join(broken) + "</div>")
