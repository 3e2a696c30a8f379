"""Checks that need to know what a workload meant to do, still read from the history alone.

Owns the end-of-run checks of the simulation workloads: a copier's output is its
input exactly once and agrees with the group's committed offsets; a bank's total
is conserved for read_committed readers; a multi-partition transaction is all or
nothing; a fenced producer instance never commits; committed offsets never go
backwards.  Each reads the ops the workload recorded, including the final read
(ops with ``f == "final-read"``) that reads every partition to its end.
"""
from __future__ import annotations

from operator import itemgetter
from typing import Callable, Optional

from .checker import CheckResult
from .history import OK, History, topic_of


def final_values(history: History, topic: Optional[str] = None) -> dict:
    """key -> [(offset, value)] returned by the final read, in offset order."""
    out: dict = {}
    for op in history:
        if op.f != "final-read":
            continue
        for key, entries in op.polls():
            if topic is None or topic_of(key) == topic:
                out.setdefault(key, []).extend(entries)
    # each (offset, value) once, sorted: the final read returns them in offset order, which sorted() finds in one
    # pass once the duplicates are dropped in that order (dropped into a set, they would come out shuffled)
    return {k: sorted(dict.fromkeys(map(tuple, es))) for k, es in out.items()}


def _of_topic(history: History, topic: str, finals: Optional[dict]) -> dict:
    """final_values(history, topic), taken from ``finals`` (final_values(history), every key) when given: the same
    keys in the same order, each with the same entries."""
    if finals is None:
        return final_values(history, topic)
    return {k: es for k, es in finals.items() if topic_of(k) == topic}


def default_source(value: str) -> str:
    return value.split("|", 1)[0]


def check_copy(history: History, input_topic: str, output_topic: str,
               source_of: Callable[[str], str] = default_source, finals: Optional[dict] = None) -> CheckResult:
    """The committed output, mapped back to its input records, is the committed input exactly once.  ``finals``:
    final_values(history) when the caller has it already."""
    r = CheckResult()
    inputs = {v: (k, o) for k, es in _of_topic(history, input_topic, finals).items() for o, v in es}
    copies: dict = {}
    for key, entries in _of_topic(history, output_topic, finals).items():
        for offset, value in entries:
            src = value.split("|", 1)[0] if source_of is default_source else source_of(value)   # (inlined)
            got = copies.get(src)
            if got is None:
                copies[src] = [(key, offset, value)]
            else:
                got.append((key, offset, value))
    for src, where in sorted(copies.items()):
        if len(where) > 1:
            shown = ", ".join(f"{v!r} at {k}@{o}" for k, o, v in where[:3])
            r.add("duplicate", f"input {src!r} was copied to the output {len(where)} times: {shown}", key=where[0][0])
        if src not in inputs:
            r.add("G1a", f"the output holds {where[0][2]!r}, a copy of {src!r}, which is not committed input "
                  f"(it was aborted or never written)", key=where[0][0])
    if history.attrs.get("finished", True):
        for src, (k, o) in sorted(inputs.items(), key=itemgetter(1)):
            if src not in copies:
                r.add("lost-write", f"committed input {src!r} at {k}@{o} never reached the committed output", key=k)
    return r


def check_offsets(history: History, input_topic: str, output_topic: str,
                  source_of: Callable[[str], str] = default_source, finals: Optional[dict] = None) -> CheckResult:
    """Committed offsets agree with committed outputs, and never go backwards."""
    r = CheckResult()
    if source_of is default_source:
        copied = {v.split("|", 1)[0] for es in _of_topic(history, output_topic, finals).values() for _o, v in es}
    else:
        copied = {source_of(v) for es in _of_topic(history, output_topic, finals).values() for _o, v in es}
    inputs = _of_topic(history, input_topic, finals)
    for op in history:
        if op.f != "committed-offsets":
            continue
        for key, committed in sorted(op.attrs.get("offsets", {}).items()):
            if committed is None or committed < 0:
                committed = 0
            for offset, value in inputs.get(key, []):
                if offset < committed and value not in copied:
                    r.add("offsets-outputs-mismatch", f"the group committed {key} up to offset {committed}, but "
                          f"input {value!r} at offset {offset} has no committed output", key=key)
                    break
                if offset >= committed and value in copied:
                    r.add("offsets-outputs-mismatch", f"input {value!r} at {key}@{offset} has a committed output, "
                          f"but the group's committed offset is only {committed}", key=key)
                    break
    last: dict = {}
    for op in sorted((o for o in history if o.f == "txn" and o.outcome == OK and o.attrs.get("offsets")),
                     key=lambda o: (o.end, o.index)):
        for key, off in op.attrs["offsets"].items():
            prev = last.get((op.attrs.get("group"), key))
            if prev is not None and off < prev[0]:
                r.add("nonmonotonic-offsets", f"{op.process} committed {key}={off} after op {prev[1]} had committed "
                      f"{key}={prev[0]}", (prev[1], op.index), key)
            last[(op.attrs.get("group"), key)] = (off, op.index)
    return r


def check_bank(history: History, topic: str, initial_total: int) -> CheckResult:
    """Values are ``t<id>:<account>:<delta>``; a read_committed total must equal the initial total."""
    r = CheckResult()
    total = initial_total
    legs: dict = {}
    for key, entries in final_values(history, topic).items():
        for offset, value in entries:
            tid, _acct, delta = value.split("|", 1)[0].split(":")
            total += int(delta)
            legs.setdefault(tid, []).append(f"{key}@{offset}")
    if history.attrs.get("finished", True) and total != initial_total:
        r.add("wrong-total", f"the final read_committed balances add up to {total}, not {initial_total}", key=None)
    for tid, where in sorted(legs.items()):
        if len(where) != 2:
            r.add("torn-transaction", f"transfer {tid} has {len(where)} visible leg(s) ({', '.join(where)}), "
                  f"not 2", key=None)
    return r


def check_atomic(history: History, topic: str) -> CheckResult:
    """Every transaction's sends to ``topic`` are all visible to the final read, or none is."""
    r = CheckResult()
    visible = {v for es in final_values(history, topic).values() for _o, v in es}
    for op in history:
        if op.f != "txn":
            continue
        mine = [(k, v) for k, v, _o in op.sends() if topic_of(k) == topic]
        seen = [v for _k, v in mine if v in visible]
        if seen and len(seen) != len(mine):
            missing = [v for _k, v in mine if v not in visible]
            r.add("torn-transaction", f"{op.process}'s transaction (op {op.index}, {op.outcome}) wrote {len(mine)} "
                  f"records to {topic}; {len(seen)} are visible, {missing[:3]} are not", (op.index,))
    return r


def check_fencing(history: History) -> CheckResult:
    """No instance commits after a newer instance of its transactional.id finished init_transactions()."""
    r = CheckResult()
    inits: dict = {}
    for op in history:
        if op.f == "init" and op.outcome == OK:
            inits.setdefault(op.attrs["transactional_id"], []).append(op)
    for op in history:
        tid = op.attrs.get("transactional_id")
        if op.f != "txn" or op.outcome != OK or tid is None or "commit_at" not in op.attrs:
            continue
        mine = [i for i in inits.get(tid, []) if i.attrs["instance"] == op.attrs.get("instance")]
        if not mine:
            continue
        own_end = mine[0].end
        for init in inits.get(tid, []):
            # only an init that started after ours had finished is certainly newer (the coordinator
            # serialises InitProducerId, but two overlapping calls may complete in either order)
            if init.start > own_end and init.end < op.attrs["commit_at"]:
                r.add("zombie-commit", f"{op.process} (instance {op.attrs.get('instance')}) committed op {op.index} "
                      f"at {op.end}ms, after instance {init.attrs['instance']} of {tid!r} finished "
                      f"init_transactions() at {init.end}ms", (init.index, op.index))
                break
    return r
