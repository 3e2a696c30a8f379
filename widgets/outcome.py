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
import re
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


CSS = ("<style>.txl-cmp{border-collapse:collapse;font-size:15px;margin:6px 0}"
       ".txl-cmp td,.txl-cmp th{border:1px solid #ddd;padding:4px 10px;text-align:left;vertical-align:top}"
       ".txl-cmp th{background:#f1f3f5}.txl-cmp td.txl-num{text-align:right;font-variant-numeric:tabular-nums}"
       "</style>")


def _words(key) -> str:
    """A result key as words: 'read_committed_after_commit' -> 'read_committed after commit'."""
    text = str(key)
    for level in ("read_committed", "read_uncommitted"):
        text = text.replace(level, level.replace("_", "\0"))
    return text.replace("_", " ").replace("\0", "_")


def readable(v, _nested: bool = False) -> str:
    """One value as plain text for a table cell: lists joined with commas, a mapping as 'key: value' pairs,
    a transaction as 'state, producer id, epoch' -- never a Python repr of a dict or a list."""
    if v is None:
        return "–"
    if isinstance(v, dict):
        if not v:
            return "nothing"
        if {"state", "producer_id", "producer_epoch"} <= set(v):
            epoch = v["producer_epoch"]
            return f"{v['state']}, producer id {v['producer_id']}, " + (f"epoch {epoch}" if epoch >= 0 else
                                                                         "no epoch yet")
        text = "; ".join(f"{_words(k)}: {readable(x, True)}" for k, x in v.items())
        return f"({text})" if _nested and len(v) > 1 else text
    if isinstance(v, (list, tuple, set, frozenset)):
        items = sorted(v, key=str) if isinstance(v, (set, frozenset)) else list(v)
        return ", ".join(readable(x, True) for x in items) if items else "none"
    if isinstance(v, bool):
        return "yes" if v else "no"
    return str(v)


def _cell(v) -> str:
    cls = " class='txl-num'" if isinstance(v, (int, float)) and not isinstance(v, bool) else ""
    return f"<td{cls}>{html.escape(readable(v))}</td>"


_KAFKA_ERROR = re.compile(r"(?:[\w.]+\.)?(\w+): KafkaError\{(?:[A-Z_,]*,)?code=(\w+),val=(-?\d+),str=\"(.*)\"\}$",
                          re.S)


def _error_words(text) -> str:
    """'txnlab.errors.KafkaException: KafkaError{FATAL,code=_FATAL,val=-150,str="..."}' -> 'KafkaException _FATAL
    (-150): ...': the error as a person reads it."""
    m = _KAFKA_ERROR.match(str(text).strip())
    if not m:
        return str(text)
    kind, code, val, words = m.groups()
    return f"{kind} {code} ({val}): {words}"


def _result_rows(d: dict) -> list[tuple]:
    """(where, what, a, b) for each fact of the client code's ending that differs."""
    (ra, ea), (rb, eb) = d["result"]
    rows = []
    if ea or eb:
        rows.append(("client code", "raised", _error_words(ea) if ea else "nothing (it returned)",
                     _error_words(eb) if eb else "nothing (it returned)"))
    if isinstance(ra, dict) or isinstance(rb, dict):          # a branch that raised returned nothing: None
        ra, rb = ra if isinstance(ra, dict) else {}, rb if isinstance(rb, dict) else {}
        for key in list(ra) + [k for k in rb if k not in ra]:
            if ra.get(key) != rb.get(key):
                rows.append(("client code", f"returned {_words(key)}", ra.get(key), rb.get(key)))
    elif ra != rb:
        rows.append(("client code", "returned", ra, rb))
    return rows


def diff_html(a: dict, b: dict, d: dict) -> str:
    head = (f"<b>{html.escape(a['branch'])}</b> ({html.escape(a['faults'])}; ends at step {a['position']}, "
            f"t={a['clock_ms']}ms) vs <b>{html.escape(b['branch'])}</b> ({html.escape(b['faults'])}; ends at step "
            f"{b['position']}, t={b['clock_ms']}ms)")
    if d["same"]:
        return f"<div>{head}</div><div>The two branches end the same way.</div>"
    rows: list[tuple] = []           # (where, what, a, b, moved)
    for tp, e in d["partitions"].items():
        for level in ("read_committed", "read_uncommitted"):
            if level in e:
                x = e[level]
                moved = "; ".join(f"{v}: {oa} → {ob}" for v, oa, ob in x["moved"]) or "–"
                what = ("records only this branch's read_committed consumer sees" if level == "read_committed"
                        else "records only in this branch's log (to the HW)")
                rows.append((tp, what, x["only_in_a"] or None, x["only_in_b"] or None, moved))
        keys = [k for k in ("leo", "hw", "lso") if k in e]
        if keys:
            rows.append((tp, "offsets", ", ".join(f"{k.upper()} {readable(e[k][0])}" for k in keys),
                         ", ".join(f"{k.upper()} {readable(e[k][1])}" for k in keys), ""))
    for tid, (x, y) in d["transactions"].items():
        rows.append((tid, "coordinator state", x, y, ""))
    for key, (x, y) in d["state"].items():
        where, _, what = key.partition(": ")
        rows.append((where, what, x, y, ""))
    for key, (x, y) in d["offsets"].items():
        rows.append((f"{key[0]} {key[1]}", f"group offset ({key[2]})", x, y, ""))
    if d["result"]:
        rows += [(*r, "") for r in _result_rows(d)]
    na, nb = html.escape(a["branch"]), html.escape(b["branch"])
    moved_head = f"moved (offset in {na} → {nb})" if d["partitions"] else ""
    cols = f"<th>{na}</th><th>{nb}</th><th>{moved_head}</th>"
    body = "".join(f"<tr><td>{html.escape(str(where))}</td><td>{html.escape(str(what))}</td>{_cell(x)}{_cell(y)}"
                   f"<td>{html.escape(str(moved))}</td></tr>" for where, what, x, y, moved in rows)
    return (f"{CSS}<div>{head}</div><table class='txl-t txl-cmp'><tr><th>where</th><th>what</th>{cols}</tr>"
            f"{body}</table>")
