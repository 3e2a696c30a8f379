"""How a branch ends, and how two branches' endings differ.

Owns ``outcome(execution)`` (per partition: the records in the leader's log and what a
read_committed and a read_uncommitted consumer would read; each transactional.id's state; the
group offsets; what the client code returned or raised) and ``diff(a, b)`` with its HTML form:
which records exist in only one branch, which moved to another offset, what read_committed
readers see differently.  Another design's lab (RocketMQ, two-phase commit) has no partitions or
coordinators: its ending is ``lab.summary()`` (``state``), compared fact by fact.  Computed from
state, never by running more of the simulation.
"""
from __future__ import annotations

import html
from collections import Counter

from .cluster_view import is_kafka, partitions_of, transactional_ids, user_topics, visible_records


def outcome(execution) -> dict:
    c = execution.cluster
    if not is_kafka(c):
        return {"branch": execution.branch.name, "faults": execution.branch.describe(),
                "position": execution.position, "clock_ms": c.now, "partitions": {}, "transactions": {},
                "offsets": {}, "state": c.summary(), "result": execution.result, "error": execution.error_text}
    parts = {}
    for topic in user_topics(c):
        for p in partitions_of(c, topic):
            parts[f"{topic}-{p}"] = visible_records(c, topic, p)
    txns = {}
    for tid in transactional_ids(c):
        d = c.transaction_state(tid)
        txns[tid] = None if d is None else {"state": d["state"], "producer_id": d["producer_id"],
                                            "producer_epoch": d["producer_epoch"]}
    offsets = {}
    for b in c.brokers:
        broker = c.broker(b)
        if broker.alive:
            try:
                for r in broker.group_coordinator.offsets_view():
                    offsets[(r["group"], f"{r['topic']}-{r['partition']}", r["status"])] = r["offset"]
            except Exception:
                pass
    return {"branch": execution.branch.name, "faults": execution.branch.describe(), "position": execution.position,
            "clock_ms": c.now, "partitions": parts, "transactions": txns, "offsets": offsets, "state": {},
            "result": execution.result, "error": execution.error_text}


def _values(rows: list) -> Counter:
    return Counter(v for _, v in rows)


def diff(a: dict, b: dict) -> dict:
    """What differs between two outcomes (a: the reference branch)."""
    out: dict = {"partitions": {}, "transactions": {}, "offsets": {}, "state": {}, "result": None}
    for tp in sorted(set(a["partitions"]) | set(b["partitions"])):
        pa = a["partitions"].get(tp, {"read_committed": [], "read_uncommitted": []})
        pb = b["partitions"].get(tp, {"read_committed": [], "read_uncommitted": []})
        entry = {}
        for level in ("read_committed", "read_uncommitted"):
            va, vb = _values(pa[level]), _values(pb[level])
            only_a, only_b = sorted((va - vb).elements(), key=str), sorted((vb - va).elements(), key=str)
            off_a = {v: o for o, v in pa[level]}
            off_b = {v: o for o, v in pb[level]}
            moved = sorted(((v, off_a[v], off_b[v]) for v in set(off_a) & set(off_b)
                            if off_a[v] != off_b[v] and va[v] == vb[v] == 1), key=lambda t: t[1])
            if only_a or only_b or moved:
                entry[level] = {"only_in_a": only_a, "only_in_b": only_b, "moved": moved}
        for key in ("lso", "hw", "leo"):
            if pa.get(key) != pb.get(key):
                entry[key] = (pa.get(key), pb.get(key))
        if entry:
            out["partitions"][tp] = entry
    for tid in sorted(set(a["transactions"]) | set(b["transactions"])):
        if a["transactions"].get(tid) != b["transactions"].get(tid):
            out["transactions"][tid] = (a["transactions"].get(tid), b["transactions"].get(tid))
    for key in sorted(set(a["offsets"]) | set(b["offsets"]), key=str):
        if a["offsets"].get(key) != b["offsets"].get(key):
            out["offsets"][key] = (a["offsets"].get(key), b["offsets"].get(key))
    sa, sb = a.get("state", {}), b.get("state", {})
    for key in list(sa) + [k for k in sb if k not in sa]:
        if sa.get(key) != sb.get(key):
            out["state"][key] = (sa.get(key), sb.get(key))
    if (a["result"], a["error"]) != (b["result"], b["error"]):
        out["result"] = ((a["result"], a["error"]), (b["result"], b["error"]))
    out["same"] = not (out["partitions"] or out["transactions"] or out["offsets"] or out["state"] or out["result"])
    return out


def _vals(vs: list) -> str:
    return html.escape(", ".join(map(str, vs))) if vs else "–"


def _fact(v) -> str:
    if v is None:
        return "–"
    if isinstance(v, (list, tuple)):
        return _vals(list(v))
    return html.escape(str(v))


def diff_html(a: dict, b: dict, d: dict) -> str:
    head = (f"<b>{html.escape(a['branch'])}</b> ({html.escape(a['faults'])}; ends at step {a['position']}, "
            f"t={a['clock_ms']}ms) vs <b>{html.escape(b['branch'])}</b> ({html.escape(b['faults'])}; ends at step "
            f"{b['position']}, t={b['clock_ms']}ms)")
    if d["same"]:
        return f"<div>{head}</div><div>The two branches end the same way.</div>"
    rows = []
    for tp, e in d["partitions"].items():
        for level in ("read_committed", "read_uncommitted"):
            if level in e:
                x = e[level]
                moved = "; ".join(f"{html.escape(str(v))}: {oa} → {ob}" for v, oa, ob in x["moved"]) or "–"
                what = "a read_committed consumer sees" if level == "read_committed" else "in the log (to the HW)"
                rows.append(f"<tr><td>{tp}</td><td>{what}</td><td>{_vals(x['only_in_a'])}</td>"
                            f"<td>{_vals(x['only_in_b'])}</td><td>{moved}</td></tr>")
        marks = ", ".join(f"{k.upper()} {e[k][0]} vs {e[k][1]}" for k in ("leo", "hw", "lso") if k in e)
        if marks:
            rows.append(f"<tr><td>{tp}</td><td>offsets</td><td colspan=3>{marks}</td></tr>")
    for tid, (x, y) in d["transactions"].items():
        rows.append(f"<tr><td>{html.escape(tid)}</td><td>coordinator state</td><td>{html.escape(str(x))}</td>"
                    f"<td>{html.escape(str(y))}</td><td></td></tr>")
    for key, (x, y) in d["state"].items():
        where, _, what = key.partition(": ")
        rows.append(f"<tr><td>{html.escape(where)}</td><td>{html.escape(what)}</td>"
                    f"<td>{_fact(x)}</td><td>{_fact(y)}</td><td></td></tr>")
    for key, (x, y) in d["offsets"].items():
        rows.append(f"<tr><td>{html.escape(str(key[0]))} {key[1]}</td><td>group offset ({key[2]})</td>"
                    f"<td>{x}</td><td>{y}</td><td></td></tr>")
    if d["result"]:
        (ra, ea), (rb, eb) = d["result"]
        rows.append(f"<tr><td>client code</td><td>returned / raised</td><td>{html.escape(str(ea or ra))}</td>"
                    f"<td>{html.escape(str(eb or rb))}</td><td></td></tr>")
    if d["partitions"] or d["offsets"] or d["transactions"]:
        cols = (f"<th>only in {html.escape(a['branch'])}</th><th>only in {html.escape(b['branch'])}</th>"
                f"<th>moved (offset a → b)</th>")
    else:                                   # another design's lab: facts side by side
        cols = f"<th>in {html.escape(a['branch'])}</th><th>in {html.escape(b['branch'])}</th><th></th>"
    return (f"<div>{head}</div><table class='txl-t'><tr><th>where</th><th>what</th>{cols}</tr>"
            + "".join(rows) + "</table>")
