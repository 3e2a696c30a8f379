"""Moments: which steps of a run change something a picture shows, and a story's key moments.

Owns the semantic zoom of the stepper, as pure functions of a run's trace and state (one source of
truth; the widgets only draw it).  ``Observer`` watches a run position by position (the stepper's
position = one kernel event) and classifies each one:

* ``event``: every position is a stop;
* ``exchange``: a request with its response -- a stop at each delivered response (and at every fault,
  lost message or client call);
* ``moment`` (what a learner steps by): a stop only where the pictures change -- a record or marker
  lands in a partition log, an HW / LSO moves, a transactional id changes state, a consumer moves, a
  process goes down or up, a fault, an error answer, the response that ends an exchange whose records were
  appended.  The plumbing in between (fetch polls, heartbeats, metadata, replication of what is already shown,
  and a client's call or a retriable error alone: the next stop's narration says them) is folded into the next
  stop and counted; a run of identical failures (the same request to the same process failing the same way) is
  folded into one stop that says how many times and over how long.

``KeyMoment`` is a story's named moment: a short stable ``id``, a one-line ``caption`` and a predicate
over the lab and the trace entries of one position (never a step number: those change when the engine
does).  ``Moments`` holds the analysis of one branch: the stops of each granularity, what each stop
folded, and where each key moment is.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Optional

GRANULARITIES = ("moment", "exchange", "event")
STEP_KINDS = ("deliver", "wait", "timer", "drop", "fault", "admin")
_ERROR = re.compile(r"\b([A-Z][A-Z_]{3,}[A-Z])\((-?\d+)\)")
_INTERNAL = ("__consumer_offsets", "__transaction_state")


@dataclass(frozen=True)
class KeyMoment:
    """A moment of a story worth showing: ``id`` (short, stable: what ``Stepper(name, at=id)`` takes),
    ``caption`` (one line a learner reads) and ``when(lab, entries)``: does it happen at this position?
    The first position where ``when`` holds is the moment."""

    id: str
    caption: str
    when: Callable = field(compare=False, repr=False)


# ------------------------------------------------------------------ predicates for declaring key moments
def narrated(*texts: str, node: Optional[str] = None) -> Callable:
    """The position's trace says all of ``texts`` in one entry (optionally an entry of process ``node``)."""
    def when(lab, entries) -> bool:
        return any(all(t in e.narration for t in texts) and (node is None or e.node == node) for e in entries)
    return when


def txn_state(tid: str, state: str) -> Callable:
    """Transactional id ``tid`` enters ``state`` (PrepareCommit, CompleteAbort ...) here: its coordinator's write to
    __transaction_state is replicated, and the coordinator says so in the trace (true even if a person crashes the
    coordinator at this very step: the moment stays where the state was reached).

    Not where a new coordinator reads the state back from the log after a crash ("'tx' was PrepareCommit when the
    old coordinator stopped"): a caption such as "PrepareCommit is durable: the commit is decided" would say the
    decision was taken there, and the learner would look for it in the wrong place."""
    return narrated(f"{tid!r} is now {state} (")


def marker_lands(topic: str, partition: int, kind: str = "COMMIT") -> Callable:
    """A COMMIT or ABORT marker is written to the leader's log of ``topic-partition``."""
    pattern = re.compile(rf"{re.escape(topic)}-{partition}: wrote an? {kind} marker")

    def when(lab, entries) -> bool:
        return any(pattern.search(e.narration) for e in entries)
    return when


def lso(topic: str, partition: int, value: int) -> Callable:
    """The leader of ``topic-partition`` has its last stable offset at ``value``."""
    def when(lab, entries) -> bool:
        try:
            return lab.log(topic, partition).last_stable_offset == value
        except KeyError:
            return False
    return when


def reads(consumer: str, topic: str, partition: int, offset: int) -> Callable:
    """Consumer ``consumer`` has read ``topic-partition`` up to ``offset`` (its position is there)."""
    def when(lab, entries) -> bool:
        for name, pos in _consumer_positions(lab):
            if name == consumer and (topic, partition, offset) in pos:
                return True
        return False
    return when


def log_values_are(topic: str, partition: int, values: list) -> Callable:
    """The leader's log of ``topic-partition`` holds exactly these record values (markers left out)."""
    want = list(values)

    def when(lab, entries) -> bool:
        try:
            log = lab.log(topic, partition)
        except KeyError:
            return False
        got = [r.value.decode() for b in log.batches if not b.is_control for r in b.records]
        return got == want
    return when


def fault(kind: str, node: Optional[str] = None) -> Callable:
    """A fault of ``kind`` ('crash', 'restart', ...) is applied at this position (by the story or a person)."""
    def when(lab, entries) -> bool:
        return any(e.kind == "fault" and (kind in e.text) and (node is None or node in e.text) for e in entries)
    return when


def all_of(*preds: Callable) -> Callable:
    def when(lab, entries) -> bool:
        return all(p(lab, entries) for p in preds)
    return when


def finished() -> Callable:
    """The story's client code has finished."""
    return narrated("the scenario's client code has finished")


# ------------------------------------------------------------------------------ what a picture shows
def picture(lab) -> dict:
    """What the pictures of a lab show now, as comparable values (a change of them is a moment).

    Kafka: each user partition's leader and its LEO / HW / LSO, each transactional id's state at its
    coordinator, each consumer's positions; any lab: which processes are up and its ``summary()``."""
    nodes = tuple(sorted((n, bool(node.alive and not getattr(node, "crashed", False)))
                         for n, node in lab.kernel.nodes.items()))
    controller = getattr(lab, "controller", None)
    states = getattr(controller, "states", None)
    if states is None or not hasattr(lab, "transaction_state"):
        try:
            summary = repr(sorted(lab.summary().items()))
        except Exception:      # noqa: BLE001 - a half-built lab has no summary yet
            summary = ""
        return {"nodes": nodes, "summary": summary}
    parts = {}
    for (topic, p), s in states.items():
        if topic in _INTERNAL:
            continue
        lead = s.leader
        log = None
        if lead >= 0:
            b = lab.broker(lead)
            log = b.logs.get((topic, p)) if b.alive else None
        parts[f"{topic}-{p}"] = (lead, log.log_end_offset if log else None, log.high_watermark if log else None,
                                 log.last_stable_offset if log else None)
    txns = {}
    for bid in lab.broker_ids:
        b = lab.broker(bid)
        if not b.alive:
            continue
        for cache in b.txn_coordinator.state_manager.caches.values():
            for tid, md in cache.metadata.items():
                txns[tid] = str(getattr(md.state, "name", md.state))
    return {"nodes": nodes, "partitions": parts, "transactions": txns, "consumers": _consumer_positions(lab)}


def changes(before: dict, after: dict) -> tuple[list, list]:
    """(strong, weak): words for what a picture shows differently.  Strong: a process down or up, a leader
    moved, an LSO moved, a transactional id changed state, a consumer moved, another lab's facts changed.
    Weak: a leader's LEO or HW moved (records appended and replicated: shown, but part of an exchange)."""
    strong, weak = [], []
    if before is after or before == after:
        return strong, weak
    b_nodes, a_nodes = dict(before["nodes"]), dict(after["nodes"])
    for n, up in a_nodes.items():
        if b_nodes.get(n, up) != up:
            strong.append(f"{n} is {'up again' if up else 'down'}")
    if before.get("summary") != after.get("summary"):
        strong.append("the lab's state changed")
    bp, ap = before.get("partitions", {}), after.get("partitions", {})
    for tp, (lead, leo, hw, lso) in ap.items():
        old = bp.get(tp)
        if old is None:
            continue
        if old[0] != lead:
            strong.append(f"{tp}: leader broker {old[0]} → {lead}")
            continue
        if old[3] != lso and lso is not None and old[3] is not None:
            strong.append(f"{tp}: LSO {old[3]} → {lso}")
        if old[1] != leo and leo is not None and old[1] is not None:
            weak.append(f"{tp}: LEO {old[1]} → {leo}")
        if old[2] != hw and hw is not None and old[2] is not None:
            weak.append(f"{tp}: HW {old[2]} → {hw}")
    bt, at = before.get("transactions", {}), after.get("transactions", {})
    for tid, st in at.items():
        was = bt.get(tid)
        if was is not None and was != st:
            # a new transaction starting (Complete* / Empty -> Ongoing) is the answer to the client's request:
            # shown at that response; deciding (Prepare*) and completing are moments of their own
            (weak if st in ("Ongoing", "Empty") else strong).append(f"{tid!r}: {was} → {st}")
        elif was is None:
            weak.append(f"{tid!r} is known to its coordinator ({st})")
    bc = dict(before.get("consumers", ()))
    for name, pos in after.get("consumers", ()):
        old = dict((f"{t}-{p}", o) for t, p, o in bc.get(name, ()))
        for t, p, o in pos:
            if old.get(f"{t}-{p}", o) != o:
                strong.append(_moved(name, f"{t}-{p}", old[f"{t}-{p}"], o))
    return strong, weak


def _moved(name: str, tp: str, was: int, now: int) -> str:
    """Words for a consumer's position that moved.  A negative position is no offset: it is the client's way
    of saying it has none (OFFSET_INVALID, -1001, until it consumes a record), so the words say that."""
    if now < 0:
        return f"{name} has no position on {tp} any more (was offset {was})"
    return f"{name} reads {tp} from offset {now} " + ("(had no position yet)" if was < 0 else f"(was {was})")


def _consumer_positions(lab) -> tuple:
    from ..client.consumer import Consumer
    out = []
    for name, c in getattr(lab, "clients", {}).items():
        if not isinstance(c, Consumer):
            continue
        try:
            out.append((name, tuple(sorted((tp.topic, tp.partition, tp.offset) for tp in c.position(c.assignment())))))
        except Exception:      # noqa: BLE001 - a closed or crashed consumer has no position
            continue
    return tuple(out)


# answers that are a normal turn of a protocol, not trouble (KIP-394: a first JoinGroup always gets it)
_ROUTINE = ("MEMBER_ID_REQUIRED",)


def _retriable(err: str) -> bool:
    from ..protocol.errors import Errors
    name = err.split("(")[0]
    e = Errors.__members__.get(name)
    return name in _ROUTINE or bool(e is not None and e.retriable)


def errors_of(e) -> list[str]:
    """Kafka error names (with codes) a trace entry reports, e.g. ['NOT_COORDINATOR(16)']."""
    return [f"{m.group(1)}({m.group(2)})" for m in _ERROR.finditer(e.narration)]


# --------------------------------------------------------------------------------- one position
_MARKER = re.compile(r"(\S+-\d+): wrote an? (COMMIT|ABORT) marker at offset (\d+)")


@dataclass
class Position:
    """What one position (one kernel event, plus what the client code then did) was, for the zoom."""

    index: int
    time: int
    strong: list = field(default_factory=list)   # words: what a picture shows differently, worth a stop
    weak: list = field(default_factory=list)     # words: records appended or replicated (LEO / HW moved)
    events: list = field(default_factory=list)   # 'fault', 'drop', 'call', 'error', 'response', 'admin'
    signature: tuple = ()    # a failure: (api, from, to, errors); a run of failures folds into one stop
    headline: str = ""
    down: tuple = ()         # processes down after it

    @property
    def words(self) -> list:
        return self.strong + self.weak


def classify(index: int, entries: list, before: dict, after: dict, time: int, servers=()) -> Position:
    strong, weak = changes(before, after)
    pos = Position(index, time, strong, weak)
    for e in entries:
        if e.kind in ("fault", "admin"):
            pos.events.append("fault")
        elif e.kind == "drop":
            pos.events.append("drop")
            if not pos.signature:
                pos.signature = (e.api, e.src, e.dst, ("lost",))
        elif e.kind == "call":
            pos.events.append("call")
        elif e.kind == "deliver" and e.is_response and not e.background and e.dst not in servers:
            pos.events.append("response")
        for m in _MARKER.finditer(e.narration):
            pos.strong.append(f"{m.group(1)}: {m.group(2)} marker at offset {m.group(3)}")
        if e.kind in ("deliver", "timer") and not e.background:
            errs = errors_of(e)
            if errs:
                pos.events.append("error" if any(not _retriable(x) for x in errs) else "retriable")
                req = (e.dst, e.src) if e.is_response else (e.src or e.node, e.dst)
                pos.signature = (e.api or e.kind, req[0], req[1], tuple(errs))
    steps = [e for e in entries if e.kind in STEP_KINDS]
    if steps:
        pos.headline = steps[0].text
    return pos


# --------------------------------------------------------------------------------- a whole branch
@dataclass
class Stop:
    """A stop at one granularity: its position, how many plumbing positions it folded, and, for a run of
    identical failures folded into it, the words that say so."""

    position: int
    folded: int = 0
    repeated: int = 1
    first_time: int = 0
    summary: str = ""


class Moments:
    """The analysis of one branch: stops per granularity and where the key moments are.

    Feed it with ``observe(position, entries, lab)`` after each position (0 first); ``stops(g)`` then gives
    the stops.  Key moments are forced to be stops at every granularity."""

    def __init__(self, key_moments: tuple = ()) -> None:
        self.key_moments = tuple(key_moments)
        self.positions: list[Position] = []
        self.found: dict[str, int] = {}          # key moment id -> position
        self._last: Optional[tuple] = None
        self._stops: dict = {}

    def observe(self, index: int, entries: list, lab) -> None:
        after = picture(lab)
        before = after if self._last is None else self._last
        self._last = after
        k = lab.kernel
        servers = [n for n in k.nodes if k.is_server(n)] if hasattr(k, "is_server") else []
        pos = classify(index, entries, before, after, k.now, servers)
        pos.down = tuple(n for n, up in after["nodes"] if not up)
        for km in self.key_moments:
            if km.id not in self.found and index > 0:
                try:
                    hit = km.when(lab, entries)
                except (KeyError, AttributeError):
                    hit = False
                if hit:
                    self.found[km.id] = index
        self.positions.append(pos)
        self._stops.clear()

    @property
    def length(self) -> int:
        return len(self.positions) - 1

    def key_positions(self) -> dict[int, list[KeyMoment]]:
        out: dict = {}
        for km in self.key_moments:
            if km.id in self.found:
                out.setdefault(self.found[km.id], []).append(km)
        return out

    def stops(self, granularity: str = "moment") -> list[Stop]:
        """The stops of a granularity, in order (position 0 is not a stop: it is where a run opens)."""
        if granularity not in GRANULARITIES:
            raise ValueError(f"granularity must be one of {', '.join(GRANULARITIES)}, not {granularity!r}")
        got = self._stops.get(granularity)
        if got is None:
            got = self._stops[granularity] = self._compute(granularity)
        return got

    def _compute(self, granularity: str) -> list[Stop]:
        keys = self.key_positions()
        last = self.length
        out: list[Stop] = []
        folded = 0
        pending = False                       # records appended or replicated since the last stop
        run: Optional[Stop] = None            # the stop that folds a run of failures (moment granularity)
        counts: dict = {}
        for pos in self.positions[1:]:
            i = pos.index
            ev = pos.events
            failure = ("drop" in ev or "error" in ev) and bool(pos.signature) and not pos.strong and "fault" not in ev
            if granularity == "event":
                is_stop = True
            elif granularity == "exchange":
                is_stop = bool(pos.strong or pos.weak or ev)
            else:
                # records appended or replicated: part of the exchange that ends at the next response to a
                # client (a client call or a retriable error alone is plumbing: the narration still says it)
                pending = pending or bool(pos.weak)
                is_stop = bool(pos.strong) or "fault" in ev or failure or \
                    ("response" in ev and "retriable" not in ev and pending)
            is_stop = is_stop or i in keys or i == last
            if not is_stop:
                folded += 1
                continue
            pending = False
            if granularity == "moment" and failure and i not in keys and run is not None:
                # the same kind of trouble again: fold it into the run's stop, which says how often
                counts[pos.signature] = counts.get(pos.signature, 0) + 1
                run.repeated += 1
                run.folded += folded + 1
                run.position = i
                run.summary = _retry_words(counts, pos.time - run.first_time, self._down_at(i))
                folded = 0
                continue
            stop = Stop(i, folded, 1, pos.time)
            out.append(stop)
            folded = 0
            if granularity == "moment" and failure and i not in keys:
                run, counts = stop, {pos.signature: 1}
            else:
                run = None
        return out

    def _down_at(self, index: int) -> list:
        return list(self.positions[index].down)

    def next_stop(self, position: int, granularity: str) -> Optional[Stop]:
        for s in self.stops(granularity):
            if s.position > position:
                return s
        return None

    def previous_stop(self, position: int, granularity: str) -> int:
        best = 0
        for s in self.stops(granularity):
            if s.position >= position:
                break
            best = s.position
        return best

    def stop_at(self, position: int, granularity: str) -> Optional[Stop]:
        for s in self.stops(granularity):
            if s.position == position:
                return s
        return None

    def clicks_to(self, position: int, granularity: str = "moment") -> int:
        """How many Step clicks from position 0 reach ``position`` (or pass it) at a granularity."""
        n = 0
        for s in self.stops(granularity):
            n += 1
            if s.position >= position:
                return n
        return n

    def ordinal(self, position: int, granularity: str = "moment") -> int:
        """The number of stops of a granularity at or before ``position`` (the moment number a person sees)."""
        return sum(1 for s in self.stops(granularity) if s.position <= position)

    def find(self, ref: str) -> int:
        """The position of a key moment given by id or caption (KeyError naming the moments if unknown)."""
        for km in self.key_moments:
            if ref in (km.id, km.caption):
                if km.id not in self.found:
                    raise KeyError(f"key moment {km.id!r} ({km.caption}) does not happen in this branch")
                return self.found[km.id]
        raise KeyError(f"no key moment {ref!r}; this story's key moments: "
                       + ", ".join(f"{k.id} ({k.caption})" for k in self.key_moments))


def _retry_words(counts: dict, ms: int, down: list) -> str:
    over = f"{ms / 1000:.1f} s" if ms >= 1000 else f"{ms} ms"
    parts = []
    for (api, src, dst, errs), n in sorted(counts.items(), key=lambda kv: -kv[1]):
        how = "lost" if errs == ("lost",) else "failed with " + ", ".join(errs)
        parts.append(f"{api} from {src} to {dst} {how} {n}×")
    down = [d for d in down if any(dst == d for _, _, dst, _ in counts)]
    return "; ".join(parts) + f" over {over}" + (f" while {' and '.join(down)} {'was' if len(down) == 1 else 'were'} "
                                                  f"down" if down else "")
