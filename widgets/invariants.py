"""The invariants panel: which of the engine's invariants hold at the stepper's current step (✓ / ✗ / …).

Owns ``live_invariants(cluster)``: the exactly-once invariants a person can check by looking at a Kafka cluster now
-- LSO ≤ HW ≤ LEO on every leader (``txnlab.sweep.invariants.watermark_violations``, the check the sweep makes
after each step), no duplicate of an idempotent producer's batch in a log, no read_committed consumer past the
last stable offset (it would have read an open or aborted transaction), and for a story with a consume-transform-produce
``Pipeline`` offsets atomic with outputs (``offsets_atomic_with_outputs``) -- and ``panel_html``, which draws them, a broken one red.  A counterexample's own checks (the
sweep's history checker, ``txnlab.check``) come from its recipe.  Reads state only.
"""
from __future__ import annotations

import html

from txnlab.sweep.invariants import watermark_violations

from .cluster_view import consumers_of, is_kafka, transactional_ids

MARKS = {True: "✓", False: "✗", None: "…"}


def live_invariants(cluster, pipeline=None) -> list:
    """(name, True / False / None, words) for a Kafka cluster now; [] for another lab.  With a story's
    ``pipeline`` (``txnlab.gallery.scenario.Pipeline``) also: offsets atomic with outputs."""
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
    if pipeline is not None:
        ok, words = offsets_atomic_with_outputs(cluster, pipeline)
        out.append((f"offsets atomic with outputs (group {pipeline.group})", ok, words))
    return out


# ------------------------------------------------------------------------------ offsets atomic with outputs
def _decisions(cluster) -> dict:
    """producer id -> 'commit' / 'abort' once its transaction coordinator has decided (PrepareCommit is durable:
    every marker of it will land), as the coordinators' state says now."""
    out = {}
    for tid in transactional_ids(cluster):
        d = cluster.transaction_state(tid)
        if d is not None and d["state"] in ("PrepareCommit", "CompleteCommit", "PrepareAbort", "CompleteAbort"):
            out[d["producer_id"]] = "commit" if "Commit" in d["state"] else "abort"
    return out


def _fates(log, decided: dict):
    """(batch, 'visible' / 'aborted' / 'open') for the data batches of a log: a transactional batch is visible once
    its COMMIT marker is in the log or its coordinator has decided to commit it."""
    fate, out = {}, []
    for b in reversed(list(log.batches)):          # a transaction's fate is its producer id's next marker
        if b.is_control:
            ct = b.control_type
            fate[b.producer_id] = "visible" if ct is not None and ct.name == "COMMIT" else "aborted"
        elif not b.is_transactional:
            out.append((b, "visible"))
        else:
            f = fate.get(b.producer_id)
            if f is None:
                f = {"commit": "visible", "abort": "aborted"}.get(decided.get(b.producer_id), "open")
            out.append((b, f))
    return out[::-1]


def _text(v) -> str:
    return "null" if v is None else v.decode("utf-8", "replace") if isinstance(v, (bytes, bytearray)) else str(v)


def offsets_atomic_with_outputs(cluster, pipeline) -> tuple:
    """Do the group's committed offsets and the committed outputs say the same thing now?  Every committed input
    record below the group's committed offset has a committed output, and none at or above it has one (a
    transactional commit counts once its transaction is decided: its markers are on their way to every partition
    at once).  Reads the logs' leaders, the group coordinator and the transaction coordinators' state."""
    b = cluster.group_coordinator(pipeline.group)
    if b < 0 or not cluster.broker(b).alive:
        return None, f"the coordinator of group {pipeline.group!r} is not available now"
    g = cluster.group_state(pipeline.group) or {}           # no group yet: nothing committed
    decided = _decisions(cluster)
    committed = dict(g.get("offsets", {}))
    for pid, offsets in g.get("pending_transactional_offsets", {}).items():
        if decided.get(pid) == "commit":
            committed.update(offsets)
    done = set()
    for _t, _p, log in _leader_logs(cluster, [pipeline.output]):
        for b, fate in _fates(log, decided):
            if fate == "visible":
                done.update(pipeline.source(_text(r.value)) for r in b.records)
    for t, p, log in _leader_logs(cluster, [pipeline.input]):
        n = max(0, committed.get((t, p), 0))
        for b, fate in _fates(log, decided):
            if fate != "visible":
                continue
            for i, r in enumerate(b.records):
                off, value = b.base_offset + i, _text(r.value)
                if off < n and value not in done:
                    return False, (f"group {pipeline.group!r} committed {t}-{p} up to offset {n}, but input {value!r} "
                                   f"at offset {off} has no committed output in {pipeline.output}")
                if off >= n and value in done:
                    return False, (f"input {value!r} at {t}-{p} offset {off} has a committed output in "
                                   f"{pipeline.output}, but group {pipeline.group!r} has committed only up to offset {n}")
    return True, (f"the committed outputs in {pipeline.output} are exactly those of the input below the committed "
                  f"offsets of group {pipeline.group!r}")


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
