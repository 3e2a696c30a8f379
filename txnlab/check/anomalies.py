"""The anomaly names the checker reports, each with a plain-words explanation.

Names follow Jepsen's Kafka checker (``jepsen.tests.kafka``) where Jepsen has one;
the few workload checks Jepsen has no name for (a bank's total, a torn multi-partition
transaction, offsets that disagree with outputs, a transaction that never ends) get a
short descriptive name.  ``allowed`` anomalies are reported but are not violations:
Kafka's transactions promise no write isolation, so interleaved writes are legal.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class AnomalyKind:
    name: str
    allowed: bool
    explanation: str


_KINDS = [
    AnomalyKind("G1a", False,
                "aborted read: a consumer returned a value that was written by a transaction that did not "
                "commit (it was aborted, or its producer never asked to commit it). read_committed must hide "
                "such data: the LSO and the aborted-transaction index exist for this."),
    AnomalyKind("undecided-read", False,
                "a read_committed consumer returned a value before the transaction that wrote it had even "
                "asked to commit: it read undecided data, above the last stable offset."),
    AnomalyKind("lost-write", False,
                "a write that the producer was told succeeded (an acknowledged send, or a send inside a "
                "committed transaction) was never read, although consumers read past its offset. Committed "
                "data disappeared: truncation after an unclean leader election, or a copy that skipped input."),
    AnomalyKind("unseen", False,
                "a write that was acknowledged was never read by the final read, which reads every partition "
                "up to its end: the data is stuck behind a last stable offset that never moves, or it is gone."),
    AnomalyKind("duplicate", False,
                "the same value appears twice in the log (at two offsets), or one input record was copied to "
                "the output twice. Exactly-once failed: a retry was appended again (no de-duplication), or two "
                "producer instances both committed the same work (no fencing)."),
    AnomalyKind("inconsistent-offsets", False,
                "one offset of one partition was seen holding two different values: the log was rewritten "
                "under readers (truncation after an unclean leader election), or a producer was told its write "
                "is at an offset that holds another write (two instances sharing one producer id and epoch, "
                "so the broker took one's batch for a retry of the other's)."),
    AnomalyKind("poll-skip", False,
                "between two polls of one consumer, the second poll started after values that the consumer "
                "should have returned first: records were skipped (a position moved forward without reading, "
                "e.g. not rewinding after an abort)."),
    AnomalyKind("nonmonotonic-poll", False,
                "between two polls of one consumer (without a seek), the second poll went back to values at or "
                "before ones it had already returned."),
    AnomalyKind("int-poll-skip", False,
                "inside one poll, the consumer returned two values of one partition with a committed value "
                "between them that it did not return."),
    AnomalyKind("int-nonmonotonic-poll", False,
                "inside one poll, the consumer returned the values of one partition out of offset order."),
    AnomalyKind("nonmonotonic-send", False,
                "one producer sent two records to one partition and the later send got a lower offset: the "
                "producer's order on the partition was not kept (idempotent producers keep it)."),
    AnomalyKind("int-nonmonotonic-send", False,
                "inside one transaction, a later send to a partition got a lower offset than an earlier one."),
    AnomalyKind("int-send-skip", True,
                "inside one transaction, two sends to one partition landed with another producer's records "
                "between them. Allowed: Kafka's transactions do not isolate writes, concurrent transactions "
                "interleave in the log."),
    AnomalyKind("G0", True,
                "write cycle: transactions T1 and T2 each wrote a record before the other on some partition "
                "(ww edges form a cycle). Allowed in Kafka: transactions give no write isolation."),
    AnomalyKind("G1c", False,
                "circular information flow over reads only: T1 read something T2 wrote and T2 read something "
                "T1 wrote (wr edges form a cycle). At read_committed that means someone read uncommitted data."),
    AnomalyKind("G1c-ww", True,
                "a cycle of read (wr) and write-order (ww) dependencies. Allowed: the ww edges come from "
                "interleaved writes, which Kafka permits; only a cycle of reads alone (G1c) is a bug."),
    AnomalyKind("wrong-total", False,
                "bank transfers: a read_committed reader that read every account to the end found a total "
                "different from the initial total. A transfer was half-applied, applied twice, or lost."),
    AnomalyKind("torn-transaction", False,
                "a transaction's writes to several partitions were not all-or-nothing: some are visible to a "
                "read_committed reader and others are not."),
    AnomalyKind("offsets-outputs-mismatch", False,
                "consume-transform-produce: the group's committed input offsets disagree with the committed "
                "outputs (offsets say an input was processed, but its output is missing, or outputs exist for "
                "input beyond the committed offset). Offsets and outputs must commit atomically."),
    AnomalyKind("nonmonotonic-offsets", False,
                "the group's committed offsets for an input partition went backwards between two commits."),
    AnomalyKind("zombie-commit", False,
                "a producer instance committed a transaction after a newer instance with the same "
                "transactional.id had finished init_transactions(): the old instance should have been fenced."),
    AnomalyKind("hanging-transaction", False,
                "a transaction never completed: long after every fault healed and every timeout passed, a "
                "partition still has an open transaction (its LSO is stuck below the high watermark) or the "
                "coordinator still holds it in Ongoing/PrepareCommit/PrepareAbort."),
    AnomalyKind("stuck", False,
                "the workload could not finish within its simulated time limit: some client waited forever."),
    AnomalyKind("watermarks", False,
                "LSO <= HW <= LEO did not hold on a partition leader after some step."),
    AnomalyKind("read-above-hw", False,
                "a consumer's fetch returned records at or above the partition's high watermark: data not yet "
                "on every in-sync replica, which a leader change can take back."),
    AnomalyKind("read-above-lso", False,
                "a read_committed fetch returned records at or above the last stable offset: data of a "
                "transaction that is not decided yet (or not yet replicated)."),
    AnomalyKind("kip447-fencing", False,
                "the group coordinator accepted a TxnOffsetCommit from a member or generation that is not the "
                "group's current one (KIP-447): a zombie's offsets were committed."),
    AnomalyKind("require-stable", False,
                "OffsetFetch with require_stable answered an offset while a transaction's offset commit for that "
                "partition was still pending (it must answer UNSTABLE_OFFSET_COMMIT)."),
    AnomalyKind("crash", False,
                "a Python exception escaped the engine during a step: the simulation itself is broken."),
]

KINDS: dict[str, AnomalyKind] = {k.name: k for k in _KINDS}


def explain(name: str) -> str:
    k = KINDS.get(name)
    return k.explanation if k else name


def is_allowed(name: str) -> bool:
    k = KINDS.get(name)
    return bool(k and k.allowed)
