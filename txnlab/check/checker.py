"""The history checker: Jepsen's Kafka anomalies, found from a recorded history alone.

Owns ``check(history)``: it builds, per partition (key), the order of values that
readers saw and the offsets sends were told, then looks for G1a, lost-write,
unseen, duplicate, inconsistent-offsets, poll-skip, nonmonotonic-poll, the int-*
variants, nonmonotonic-send, int-send-skip, and dependency cycles (G0, G1c).  It
never looks at the engine: a history from a real Kafka cluster checks the same way.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from itertools import repeat
from operator import itemgetter
from typing import Optional

from .anomalies import explain, is_allowed
from .cycles import Graph, cycles
from .history import FAIL, INFO, OK, History


@dataclass
class Anomaly:
    name: str
    detail: str
    ops: list = field(default_factory=list)
    key: Optional[str] = None

    @property
    def allowed(self) -> bool:
        return is_allowed(self.name)

    def to_dict(self) -> dict:
        return {"name": self.name, "detail": self.detail, "ops": list(self.ops), "key": self.key}


class CheckResult:
    """What the checker found: anomalies by name; violations are the ones Kafka does not allow."""

    def __init__(self) -> None:
        self.anomalies: dict[str, list[Anomaly]] = {}

    def add(self, name: str, detail: str, ops=(), key: Optional[str] = None) -> None:
        self.anomalies.setdefault(name, []).append(Anomaly(name, detail, list(ops), key))

    def merge(self, other: "CheckResult") -> "CheckResult":
        for name, cases in other.anomalies.items():
            self.anomalies.setdefault(name, []).extend(cases)
        return self

    @property
    def violations(self) -> dict[str, list[Anomaly]]:
        return {n: c for n, c in self.anomalies.items() if not is_allowed(n)}

    @property
    def ok(self) -> bool:
        return not self.violations

    def names(self, include_allowed: bool = False) -> list[str]:
        src = self.anomalies if include_allowed else self.violations
        return sorted(src)

    def summary(self) -> str:
        if not self.anomalies:
            return "no anomalies"
        parts = [f"{n} x{len(c)}" + (" (allowed)" if is_allowed(n) else "") for n, c in sorted(self.anomalies.items())]
        return ", ".join(parts)

    def explain(self, examples: int = 2, include_allowed: bool = False) -> str:
        """Plain words: what each anomaly means, and its first cases."""
        lines = []
        src = self.anomalies if include_allowed else self.violations
        for name in sorted(src):
            cases = src[name]
            tag = " (allowed in Kafka)" if is_allowed(name) else ""
            lines.append(f"{name}{tag}: {len(cases)} case(s). {explain(name)}")
            for a in cases[:examples]:
                lines.append(f"  - {a.detail}")
        return "\n".join(lines) if lines else "no violations"

    def to_dict(self) -> dict:
        return {n: [a.to_dict() for a in c] for n, c in sorted(self.anomalies.items())}


class _Index:
    """Per-key facts gathered from the history once."""

    def __init__(self, history: History) -> None:
        self.writers: dict = {}            # value -> [(op, key, offset)]
        # the poll micro-ops that returned records, in history order: (op, key, [[offset, value], ...]).  The
        # checks walk each poll's records together: they share the op (its index, process, end) and the key
        self.polls: list = []
        # key -> {offset: the first value sent or read there}; the offsets that held more than one value are in
        # ``conflicts`` (as (key, offset)), and at_offset() gives, for those, every value there with the ops (sends
        # first, then polls, of each op in history order) -- nearly every offset holds one value, and no dict or list
        # is built for it.  (Per key, then per offset: no (key, offset) tuple is made and hashed for every record;
        # ``first_at`` gives the same as one dict keyed by (key, offset), when a failing history needs it.)
        self.first_at_key: dict = {}
        self.conflicts: set = set()
        self.read_offsets: dict = {}       # key -> sorted offsets that some poll returned
        self.value_at_key: dict = {}       # key -> {offset: the value read there (first seen)}
        self.sends: list = []              # per op of the history, in its order: its ["send", key, value, offset] mops
        self.seeks_polls: list = []        # (op, micro-op) of every seek and every poll that returned records, in order
        self._history = history
        self._first_at: Optional[dict] = None
        # one pass over every op's micro-ops (Op.sends()/Op.polls() inlined: a history has thousands of ops)
        writers, polls, sends, conflicts = self.writers, self.polls, self.sends, self.conflicts
        seeks_polls = self.seeks_polls
        first_at_key, value_at_key = self.first_at_key, self.value_at_key
        # value -> when the op that wrote it first called commit (its "commit_at"), for the ops that did
        self.first_commit_at: dict = {}
        first_commit_at = self.first_commit_at
        for op in history:
            mine = []
            mine_polls = None
            for m in op.mops:
                tag = m[0]
                if tag == "send":
                    mine.append(m)
                elif tag == "poll":
                    if m[2]:
                        if mine_polls is None:
                            mine_polls = [m]
                        else:
                            mine_polls.append(m)
                        seeks_polls.append((op, m))
                elif tag == "seek":
                    seeks_polls.append((op, m))
            sends.append(mine)
            # an op's sends are taken before its polls (the order at_offset() lists them in).  Where a value is
            # sent or read at (key, offset), the first value there is kept and another one marks the offset as
            # holding several: setdefault() hands back what was there (the value itself the first time: a value is
            # equal to itself, so ``is not`` spares the comparison)
            last_key = fk = None
            commit_at = op.attrs.get("commit_at", _NONE) if mine else _NONE
            for m in mine:
                key, value, offset = m[1], m[2], m[3]
                ws = writers.get(value)
                if ws is None:
                    writers[value] = [(op, key, offset)]
                    if commit_at is not _NONE:
                        first_commit_at[value] = commit_at
                else:
                    ws.append((op, key, offset))
                if offset is not None:
                    if key is not last_key:     # (a transaction's sends to one partition share its key)
                        fk = first_at_key.get(key)
                        if fk is None:
                            fk = first_at_key[key] = {}
                        last_key = key
                    got = fk.setdefault(offset, value)
                    if got is not value and got != value:
                        conflicts.add((key, offset))
            if mine_polls is None:
                continue
            for m in mine_polls:
                key, entries = m[1], m[2]
                polls.append((op, key, entries))
                fk = first_at_key.get(key)
                if fk is None:
                    fk = first_at_key[key] = {}
                vk = value_at_key.get(key)
                if vk is None:
                    vk = value_at_key[key] = {}
                for offset, value in entries:
                    got = fk.setdefault(offset, value)
                    if got is not value and got != value:
                        conflicts.add((key, offset))
                    vk.setdefault(offset, value)
        # every writer's outcome at once (writer_outcome: ok if some write of the value is ok, else info if some
        # is, else fail; None for a value nobody wrote)
        self._outcomes: dict = {}
        outcomes = self._outcomes
        self.failed: set = set()            # the values whose outcome is fail
        failed = self.failed
        # value -> the indexes of the ops that wrote it, in order (_dependency_cycles' wr edges)
        self.writer_indexes: dict = {}
        writer_indexes = self.writer_indexes
        for value, ws in writers.items():
            if len(ws) == 1:                # (nearly every value has one writer)
                op = ws[0][0]
                writer_indexes[value] = (op.index,)
                o = op.outcome
                if o == OK:
                    outcomes[value] = OK
                elif o == INFO:
                    outcomes[value] = INFO
                else:
                    outcomes[value] = FAIL
                    failed.add(value)
                continue
            writer_indexes[value] = tuple([w[0].index for w in ws])
            got = FAIL
            for w in ws:
                o = w[0].outcome
                if o == OK:
                    got = OK
                    break
                if o == INFO:
                    got = INFO
            outcomes[value] = got
            if got == FAIL:
                failed.add(value)
        # key -> the offsets polled there, except those of values whose writers did not commit (an aborted read is
        # G1a; it is not part of the order); a key enters at the first poll that adds an offset to it
        per_key: dict = {}
        for _op, key, entries in polls:
            if failed and not failed.isdisjoint(map(_VALUE, entries)):
                offs = [e[0] for e in entries if e[1] not in failed]
                if not offs:
                    continue
            else:
                offs = map(_OFFSET, entries)
            got = per_key.get(key)
            if got is None:
                per_key[key] = set(offs)
            else:
                got.update(offs)
        self.read_offsets = {k: sorted(v) for k, v in per_key.items()}
        self.position = {k: dict(zip(v, range(len(v)))) for k, v in self.read_offsets.items()}

    def writer_outcome(self, value) -> Optional[str]:
        return self._outcomes.get(value)

    @property
    def first_at(self) -> dict:
        """(key, offset) -> the first value sent or read there, in the order the offsets were first met (built from
        the history again, when asked: only a history with a duplicate or an inconsistent offset needs it)."""
        if self._first_at is None:
            out: dict = {}
            for op, mine in zip(self._history, self.sends):
                for m in mine:
                    key, value, offset = m[1], m[2], m[3]
                    if offset is not None:
                        out.setdefault((key, offset), value)
                for m in op.mops:
                    if m[0] == "poll":
                        key = m[1]
                        for offset, value in m[2]:
                            out.setdefault((key, offset), value)
            self._first_at = out
        return self._first_at

    def at_offset(self) -> dict:
        """(key, offset) -> {value: [op indexes]} of the offsets in ``conflicts``, in first_at's order."""
        conflicts = self.conflicts
        out: dict = {ko: {} for ko in self.first_at if ko in conflicts}
        for op in self._history:
            index = op.index
            for m in op.mops:
                if m[0] == "send" and m[3] is not None and (m[1], m[3]) in conflicts:
                    out[(m[1], m[3])].setdefault(m[2], []).append(index)
            for m in op.mops:
                if m[0] == "poll":
                    for offset, value in m[2]:
                        if (m[1], offset) in conflicts:
                            out[(m[1], offset)].setdefault(value, []).append(index)
        return out


_NONE = object()        # (no value yet: a value may be None)
_OFFSET, _VALUE = itemgetter(0), itemgetter(1)      # of a poll's [offset, value]


def check(history: History) -> CheckResult:
    """Every history check that needs no knowledge of the workload."""
    r = CheckResult()
    ix = _Index(history)
    _aborted_reads(ix, r)
    _duplicates_and_offsets(ix, r)
    _lost_writes(history, ix, r)
    _poll_order(history, ix, r)
    _send_order(history, ix, r)
    _dependency_cycles(history, ix, r)
    return r


def _aborted_reads(ix: _Index, r: CheckResult) -> None:
    seen = set()
    get, writers = ix._outcomes.get, ix.writers
    failed, commit_at_get = ix.failed, ix.first_commit_at.get
    for op, key, entries in ix.polls:
        index, process, end = op.index, op.process, op.end
        # nearly every poll read only values whose writers committed, each after asking to commit: nothing to report
        # (a G1a needs a value of a failed writer; an undecided read, a writer's commit_at after the poll's end)
        values = list(map(_VALUE, entries))
        if (not failed or failed.isdisjoint(values)) and max(map(commit_at_get, values, repeat(-1))) <= end:
            continue
        for offset, value in entries:
            outcome = get(value)
            if outcome is None:
                continue
            if outcome == FAIL:
                if (value, process) in seen:
                    continue
                seen.add((value, process))
                w = writers[value][0][0]
                r.add("G1a", f"{process} read {value!r} at {key}@{offset}, written by {w.process} in a "
                      f"transaction that did not commit (op {w.index})", (w.index, index), key)
            else:
                # read before its writer even asked to commit: the read saw undecided data (the read's end
                # compared first: it is after the commit for nearly every read)
                w = writers[value][0][0]
                commit_at = w.attrs.get("commit_at", _NONE)
                if commit_at is not _NONE and end < commit_at and w.index != index and (value, process) not in seen:
                    seen.add((value, process))
                    r.add("undecided-read", f"{process} read {value!r} at {key}@{offset} by {end}ms, but "
                          f"{w.process} called commit only at {commit_at}ms (op {w.index})", (w.index, index), key)


def _duplicates_and_offsets(ix: _Index, r: CheckResult) -> None:
    if not ix.conflicts:
        held, values = 0, set()
        for fk in ix.first_at_key.values():
            held += len(fk)
            values.update(fk.values())
        if len(values) == held:
            return      # every offset held one value, and every value is at one offset: nothing to report
    places: dict = {}        # value -> its first (key, offset), then a list of every (key, offset) once it has two
    conflicted = ix.at_offset() if ix.conflicts else {}
    for ko, first in ix.first_at.items():
        values = conflicted.get(ko)
        for v in (first,) if values is None else values:
            got = places.get(v)
            if got is None:
                places[v] = ko
            elif got.__class__ is list:
                got.append(ko)
            else:
                places[v] = [got, ko]
        if values is not None:          # (an offset in conflicts held more than one value)
            key, offset = ko
            shown = ", ".join(repr(v) for v in sorted(values, key=str)[:3])
            ops = sorted({i for v in values.values() for i in v})
            r.add("inconsistent-offsets", f"{key}@{offset} held different values: {shown}", ops[:4], key)
    for v, where in places.items():
        if where.__class__ is list:      # (first_at's keys are distinct: every (key, offset) once)
            shown = ", ".join(f"{k}@{o}" for k, o in sorted(where)[:4])
            r.add("duplicate", f"value {v!r} is in the log {len(where)} times: {shown}",
                  [op.index for op, _k, _o in ix.writers.get(v, [])][:2], sorted(where)[0][0])


def _lost_writes(history: History, ix: _Index, r: CheckResult) -> None:
    read_values: dict = {}
    for _op, key, entries in ix.polls:
        got = read_values.get(key)
        if got is None:
            read_values[key] = set(map(_VALUE, entries))
        else:
            got.update(map(_VALUE, entries))
    outcomes = ix._outcomes
    if not ix.conflicts:
        # A lost write is a value some ok writer was told is at (key, offset) that no poll of the key returned: with
        # one value at every offset, that value is among the key's values (first_at_key) that its polls never
        # returned.  Nearly always, none of those has an ok writer (they are aborted writes): nothing to report.
        for key, fk in ix.first_at_key.items():
            unread = set(fk.values()).difference(read_values.get(key, ()))
            if unread and OK in map(outcomes.get, unread):
                break
        else:
            return
    final_keys = set(history.attrs.get("final_keys", ()))
    for value, ws in ix.writers.items():
        if outcomes[value] != OK:
            continue
        for op, key, offset in ws:
            if op.outcome != OK or offset is None or value in read_values.get(key, ()):
                continue
            offs = ix.read_offsets.get(key)
            if offs and offs[-1] > offset:
                r.add("lost-write", f"{value!r} sent by {op.process} was acknowledged at {key}@{offset}, but no "
                      f"consumer ever read it although they read up to offset {offs[-1]}", (op.index,), key)
            elif key in final_keys:
                r.add("unseen", f"{value!r} sent by {op.process} was acknowledged at {key}@{offset}, but the "
                      f"final read of {key} never returned it", (op.index,), key)


def _poll_order(history: History, ix: _Index, r: CheckResult) -> None:
    chain: dict = {}          # (process, key) -> ("at", offset) | ("seek", offset)
    for op, m in ix.seeks_polls:
        if m[0] == "seek":
            chain[(op.process, m[1])] = ("seek", m[2])
        else:
            _check_poll(op, m[1], m[2], chain, ix, r)


def _check_poll(op, key, entries, chain, ix: _Index, r: CheckResult) -> None:
    pos = ix.position.get(key, {})
    offs = ix.read_offsets.get(key, [])
    places = list(map(pos.get, map(_OFFSET, entries)))  # each record's place in the key's order (None: not in it)
    if None in places:
        entries = [e for e in entries if e[0] in pos]
        if not entries:
            return
        places = [pos[e[0]] for e in entries]
    # one poll's records follow each other in the key's order (nearly always): nothing to report within it
    if places != list(range(places[0], places[0] + len(places))):
        for (o1, _v1), (o2, _v2), i1, i2 in zip(entries, entries[1:], places, places[1:]):
            if i2 <= i1:
                r.add("int-nonmonotonic-poll", f"{op.process} returned {key}@{o1} then {key}@{o2} in one poll",
                      (op.index,), key)
            elif i2 > i1 + 1:
                r.add("int-poll-skip", f"{op.process} returned {key}@{o1} then {key}@{o2} in one poll, skipping "
                      f"{i2 - i1 - 1} committed value(s) from offset {offs[i1 + 1]}", (op.index,), key)
    first = entries[0][0]
    prev = chain.get((op.process, key))
    if prev is not None and prev[1] is not None:
        if prev[0] == "at":
            i_last, i_first = pos[prev[1]], pos[first]
            if i_first <= i_last:
                r.add("nonmonotonic-poll", f"{op.process} polled {key} up to offset {prev[1]}, then its next poll "
                      f"started back at offset {first}", (op.index,), key)
            elif i_first > i_last + 1:
                r.add("poll-skip", f"{op.process} polled {key} up to offset {prev[1]}, then its next poll started "
                      f"at {first}, skipping {i_first - i_last - 1} value(s) from offset {offs[i_last + 1]}",
                      (op.index,), key)
        else:
            at = prev[1]
            expect = bisect.bisect_left(offs, at)
            if first < at:
                r.add("nonmonotonic-poll", f"{op.process} was positioned at {key}@{at} but polled offset {first}",
                      (op.index,), key)
            elif pos[first] > expect:
                r.add("poll-skip", f"{op.process} was positioned at {key}@{at} but its poll started at {first}, "
                      f"skipping {pos[first] - expect} value(s) from offset {offs[expect]}", (op.index,), key)
    chain[(op.process, key)] = ("at", entries[-1][0])


def _send_order(history: History, ix: _Index, r: CheckResult) -> None:
    last: dict = {}           # (process, key) -> (offset, op index)
    read_offsets = ix.read_offsets
    for op, sends in zip(history, ix.sends):
        if not sends:
            continue
        within: dict = {}
        firsts: dict = {}     # key -> the least offset this op's sends to it got
        for m in sends:
            key, offset = m[1], m[3]
            if offset is None:
                continue
            prev = within.get(key)
            if prev is not None:
                if offset <= prev:
                    r.add("int-nonmonotonic-send", f"{op.process} sent to {key} at offset {prev}, then a later send "
                          f"of the same transaction got offset {offset}", (op.index,), key)
                elif offset != prev + 1:
                    # _maybe_send_skip has something to look at only if some read offset lies between the two
                    # (none can between two adjacent offsets)
                    offs = read_offsets.get(key, [])
                    i = bisect.bisect_right(offs, prev)
                    if i < len(offs) and offs[i] < offset:
                        _maybe_send_skip(op, key, prev, offset, ix, r)
                if offset < firsts[key]:
                    firsts[key] = offset
            else:
                firsts[key] = offset
            within[key] = offset
        for key, offset in within.items():
            first = firsts[key]
            p = last.get((op.process, key))
            if p is not None and first <= p[0]:
                r.add("nonmonotonic-send", f"{op.process} sent to {key}@{p[0]} (op {p[1]}), then a later send got "
                      f"offset {first} (op {op.index})", (p[1], op.index), key)
            last[(op.process, key)] = (max(offset, p[0]) if p else offset, op.index)


def _maybe_send_skip(op, key, o1, o2, ix: _Index, r: CheckResult) -> None:
    offs = ix.read_offsets.get(key, [])
    i = bisect.bisect_right(offs, o1)
    while i < len(offs) and offs[i] < o2:
        v = ix.value_at_key[key][offs[i]]
        if all(w.index != op.index for w, _k, _o in ix.writers.get(v, [])):
            r.add("int-send-skip", f"{op.process} sent to {key}@{o1} and {key}@{o2} in one transaction; "
                  f"{v!r} of another producer landed between them", (op.index,), key)
            return
        i += 1


def _dependency_cycles(history: History, ix: _Index, r: CheckResult) -> None:
    g = Graph()
    live = {op.index for op in history if op.outcome in (OK, INFO)}
    writers, value_at_key = ix.writers, ix.value_at_key
    windexes = ix.writer_indexes
    for op, _key, entries in ix.polls:
        reader = op.index
        if reader not in live:
            continue
        # the writers of the poll's records, each distinct tuple of them once, in the order first read: the edges
        # are added in the order the records name them (adding an edge again would change nothing)
        for ws in dict.fromkeys(map(windexes.get, map(_VALUE, entries))):
            if ws is None:
                continue
            for writer in ws:
                if writer in live:
                    g.add(writer, reader, "wr")
    for key, offs in ix.read_offsets.items():
        prev_writer = None
        for value in map(value_at_key[key].__getitem__, offs):
            # the first live writer of the value read there, to this key
            w = None
            for wr, k, _wo in writers.get(value, ()):
                if k == key and wr.index in live:
                    w = wr.index
                    break
            if w is None:
                prev_writer = None
                continue
            if prev_writer is not None and prev_writer != w:
                g.add(prev_writer, w, "ww")
            prev_writer = w
    # a cycle needs an edge from an op back to an earlier one (in history order): nearly always there is none
    for a, out in g.edges.items():
        if out and min(out) < a:
            break
    else:
        return
    for name, cycle in cycles(g):
        procs = " -> ".join(f"op {i} ({history[i].process})" for i in cycle)
        r.add(name, f"dependency cycle {procs} -> back to op {cycle[0]}", cycle)
