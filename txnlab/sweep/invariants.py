"""Invariants of the engine's state, checked after every step of a simulation run and at its end.

Owns ``StepInvariants`` (LSO <= HW <= LEO on every partition leader of the
workload's topics, checked each time the kernel records a step, so the state
after every step is seen; and, as the brokers decide, through the cluster's
``auditors``: no consumer fetch returns an offset at or above the HW, no
read_committed fetch crosses the LSO, no TxnOffsetCommit of an old generation or
an unknown member is accepted (KIP-447), no OffsetFetch with require_stable answers
an offset while a transactional commit of it is pending) and ``end_invariants`` (after faults heal and every
timeout has passed, no partition holds an open transaction and no coordinator
holds a transaction in Ongoing/PrepareCommit/PrepareAbort).  These read engine
state on purpose; the history checker (``txnlab.check``) never does.
"""
from __future__ import annotations

from ..check.checker import CheckResult

DECIDED = ("Empty", "CompleteCommit", "CompleteAbort", "Dead")


class StepInvariants:
    """Checks the watermarks of the given topics' leaders at every step (cheap: a few attribute reads)."""

    def __init__(self, cluster, topics: list, limit: int = 5) -> None:
        self.cluster = cluster
        self.brokers = [cluster.broker(b) for b in cluster.brokers]
        self.tps = sorted(tp for tp in cluster.controller.states if tp[0] in set(topics))
        self.result = CheckResult()
        self.limit = limit
        self.first_step = None          # the step after which an invariant first failed
        self._last = None
        # broker name -> (the broker, its partitions dict, its isr_version, the dict's size, the logs of tps it
        # leads), as last found (a first entry that can match nothing: found at the broker's first step)
        self._led: dict = {b.name: (b, None, -1, -1, ()) for b in self.brokers}
        self._topics = set(topics)
        cluster.kernel.observers.append(self._observe)
        cluster.auditors.append(self._audit)

    def _observe(self, tev) -> None:
        # Called as a step begins: the previous step is complete, and only the node that handled it
        # can have moved its watermarks (appends, HW moves and markers happen on the broker that acts).
        # Called at every step: the check is inlined here, over the logs of the partitions the broker leads
        # (found again only when its partitions dict is new or changed size, or its isr_version moved: a
        # partition's leader changes only with isr_version), and a leader that breaks the invariant is reported
        # by _check_broker (the full check, in partition order, recording what it finds).
        led = self._led.get(self._last)
        self._last = tev.node
        if led is not None:
            b, parts, isr_version, size, logs = led
            if b.alive:
                now_parts = b.partitions
                if parts is not now_parts or isr_version != b.isr_version or size != len(now_parts):
                    logs = self._leading(b)[4]
                for log in logs:
                    if not log.last_stable_offset <= log.high_watermark <= log.log_end_offset:
                        self._check_broker(b, tev.step - 1)
                        return

    def _leading(self, b) -> tuple:
        parts, bid = b.partitions, b.broker_id
        led = self._led[b.name] = (b, parts, b.isr_version, len(parts),
                                   tuple(p.log for p in map(parts.get, self.tps) if p is not None and p.leader == bid))
        return led

    def check(self, step: int) -> None:
        """Check every broker now."""
        for b in self.brokers:
            self._check_broker(b, step)

    def _check_broker(self, b, step: int) -> None:
        if b.alive:
            parts = b.partitions
            for tp in self.tps:
                p = parts.get(tp)
                if p is None or p.leader != b.broker_id:
                    continue
                log = p.log
                lso, hw, leo = log.last_stable_offset, log.high_watermark, log.log_end_offset
                if not lso <= hw <= leo and len(self.result.anomalies.get("watermarks", ())) < self.limit:
                    if self.first_step is None:
                        self.first_step = step
                    self.result.add("watermarks", f"after step {step}: {tp[0]}-{tp[1]} on broker {b.broker_id} "
                                    f"has LSO {lso}, HW {hw}, LEO {leo}", key=f"{tp[0]}-{tp[1]}")

    def _add(self, name: str, text: str, key: str) -> None:
        if len(self.result.anomalies.get(name, ())) < self.limit:
            if self.first_step is None:
                self.first_step = self.cluster.kernel.step_count
            self.result.add(name, f"at step {self.cluster.kernel.step_count}: {text}", key=key)

    def _audit(self, kind: str, f: dict) -> None:
        """A broker's decision, checked as it is made (``Cluster.audit``)."""
        if kind == "fetch":
            tp = f["tp"]
            if tp[0] not in self._topics:
                return
            if f["last"] < f["hw"] and (f["isolation"] != 1 or f["last"] < f["lso"]):
                return                      # (nearly every fetch: nothing to report, no key to write)
            key = f"{tp[0]}-{tp[1]}"
            if f["last"] >= f["hw"]:
                self._add("read-above-hw", f"broker {f['broker']} answered a consumer's fetch of {key} from offset "
                          f"{f['fetch_offset']} with records up to {f['last']}, at or above the HW {f['hw']}", key)
            elif f["isolation"] == 1 and f["last"] >= f["lso"]:
                self._add("read-above-lso", f"broker {f['broker']} answered a read_committed fetch of {key} from "
                          f"offset {f['fetch_offset']} with records up to {f['last']}, at or above the LSO "
                          f"{f['lso']}", key)
        elif kind == "txn-offset-commit":
            if not f["accepted"] or (f["generation"] < 0 and (not f["member"] or f["empty"])):
                return      # refused, or the groupId-only commit, or generation -1 to an Empty group (no membership)
            if f["generation"] != f["group_generation"] or (f["member"] and f["member"] not in f["members"]):
                self._add("kip447-fencing", f"broker {f['broker']} accepted a TxnOffsetCommit to group "
                          f"{f['group']!r} from member {f['member']!r} of generation {f['generation']}; the group is "
                          f"at generation {f['group_generation']} with members {sorted(f['members'])}", f["group"])
        elif kind == "offset-fetch" and f["answered"]:
            tps = ", ".join(f"{t}-{p}" for t, p in f["answered"])
            self._add("require-stable", f"broker {f['broker']} answered OffsetFetch(require_stable) of group "
                      f"{f['group']!r} with offsets for {tps} while a transactional offset commit of them was "
                      f"pending", f["group"])

    def detach(self) -> None:
        if self._observe in self.cluster.kernel.observers:
            self.cluster.kernel.observers.remove(self._observe)
        if self._audit in self.cluster.auditors:
            self.cluster.auditors.remove(self._audit)


def watermark_violations(cluster, topics: list) -> list:
    """The state now: every leader of the given topics whose LSO <= HW <= LEO does not hold (a stepper's
    reading of the same invariant ``StepInvariants`` checks after each step)."""
    out = []
    for b in cluster.brokers:
        br = cluster.broker(b)
        if not br.alive:
            continue
        for tp, p in sorted(br.partitions.items()):
            if tp[0] in topics and p.leader == br.broker_id:
                log = p.log
                lso, hw, leo = log.last_stable_offset, log.high_watermark, log.log_end_offset
                if not lso <= hw <= leo:
                    out.append(f"{tp[0]}-{tp[1]} on broker {br.broker_id} has LSO {lso}, HW {hw}, LEO {leo}")
    return out


def end_invariants(cluster, topics: list, transactional_ids: list) -> CheckResult:
    """Every transaction completed or timed out: run after faults healed and timeouts passed."""
    r = CheckResult()
    for (t, p), s in sorted(cluster.controller.states.items()):
        if t not in topics:
            continue
        if s.leader < 0 or not cluster.broker(s.leader).alive:
            r.add("hanging-transaction", f"{t}-{p} has no live leader at the end of the run", key=f"{t}-{p}")
            continue
        log = cluster.broker(s.leader).logs[(t, p)]
        if log.first_unstable_offset is not None or log.last_stable_offset < log.high_watermark:
            r.add("hanging-transaction", f"{t}-{p}: a transaction is still open at offset "
                  f"{log.first_unstable_offset} (LSO {log.last_stable_offset}, HW {log.high_watermark}) long after "
                  f"every timeout", key=f"{t}-{p}")
    for tid in sorted(transactional_ids):
        st = cluster.transaction_state(tid)
        if st is not None and st["state"] not in DECIDED:
            r.add("hanging-transaction", f"the coordinator still holds {tid!r} in {st['state']} "
                  f"(partitions {st['partitions']}) long after every timeout")
    return r
