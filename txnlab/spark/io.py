"""Batch-level reading for the Spark source and sink: offsets and whole fetched batches.

A Spark task reads a fixed offset range [start, end) of one partition.  A
``Consumer`` would hand it the records one ``poll()`` at a time; ``Link`` asks
the brokers directly with the protocol (Metadata, ListOffsets, Fetch) and
turns each fetched batch into columns, filtering exactly as Kafka's consumer
does (``CompletedFetch``: aborted transactions and control markers are
skipped under read_committed).  It works against a served cluster
(``txnlab://`` address, from a Spark worker) and an in-kernel one alike.
"""
from __future__ import annotations

import threading
from typing import Iterator, Optional

from ..client.fetcher import CompletedFetch
from ..client.network_client import ClientNode, attachment_for
from ..errors import KafkaError, KafkaException
from ..kernel.attach import constructed_in_turn
from ..protocol import messages as m
from ..protocol.errors import Errors

EARLIEST, LATEST = -2, -1
FETCH_MAX_BYTES = 8 * 1024 * 1024
# Retries back off 100 ms each; 1200 of them span two simulated minutes, enough for the controller
# to fence a crashed broker (broker.session.timeout.ms) and elect new leaders.
RETRIES = 1200
RETRIABLE = {Errors.NOT_LEADER_OR_FOLLOWER, Errors.LEADER_NOT_AVAILABLE, Errors.FENCED_LEADER_EPOCH,
             Errors.UNKNOWN_LEADER_EPOCH, Errors.NETWORK_EXCEPTION, Errors.REQUEST_TIMED_OUT,
             Errors.UNKNOWN_TOPIC_OR_PARTITION, Errors.KAFKA_STORAGE_ERROR}
_LOCAL_CLAIMS: set = set()
_LOCAL_CLAIMS_LOCK = threading.Lock()


def release(client) -> None:
    """Drop a finished client's node from a remote process's private kernel (see RemoteAttachment)."""
    client._attachment.release(client._node)


def isolation_of(level: str) -> int:
    if level == "read_committed":
        return m.READ_COMMITTED
    if level == "read_uncommitted":
        return m.READ_UNCOMMITTED
    raise ValueError(f"isolation.level must be read_committed or read_uncommitted, got {level!r}")


class Link:
    """One client node on a (served or in-kernel) cluster with blocking protocol calls."""

    @constructed_in_turn
    def __init__(self, bootstrap: str, label: str = "spark") -> None:
        self._attachment = attachment_for(bootstrap)       # through the kernel's registry, like any client
        self.kernel = self._attachment.kernel
        self._node = self.node = self._attachment.attach(self._attachment.next_client_name(label), self, ClientNode)

    def _on_process_crash(self) -> None:
        pass

    def close(self) -> None:
        """Let a served cluster's client side forget this link's node (in-kernel: nothing to do)."""
        release(self)

    def call(self, dst: str, request, timeout_ms: int = 30_000):
        """(response, error) of one request."""
        box: dict = {}
        self.node.send_request(dst, request, lambda r, e: box.update(r=r, e=e), timeout_ms=timeout_ms)
        self.kernel.run_until(lambda: "e" in box or self.node.crashed)
        if "e" not in box:
            raise KafkaException(KafkaError(KafkaError._FATAL, f"{self.node.name} was crashed in the cluster",
                                            fatal=True))
        return box.get("r"), box["e"]

    def backoff(self, ms: int = 100) -> None:
        self.kernel.advance(ms)

    # ------------------------------------------------------------- metadata
    def partitions(self, topic: str, attempts: int = RETRIES) -> int:
        """How many partitions ``topic`` has (waiting while it is being created)."""
        for _ in range(attempts):
            resp, err = self.call(self.node.any_broker(), m.MetadataRequest((topic,)))
            if err is None:
                self.node.live_brokers = [f"broker-{b}" for b in resp.brokers] or self.node.live_brokers
                e, parts = resp.topics.get(topic, (Errors.UNKNOWN_TOPIC_OR_PARTITION, []))
                if e == Errors.NONE and parts and all(p.leader >= 0 for p in parts):
                    self.node.topics[topic] = parts
                    return len(parts)
                if e == Errors.UNKNOWN_TOPIC_OR_PARTITION and attempts <= 1:
                    break
            self.backoff()
        raise KafkaException(KafkaError(Errors.UNKNOWN_TOPIC_OR_PARTITION, f"topic {topic!r} is not available"))

    def leader(self, tp: tuple) -> str:
        node = self.node.leader_for(tp)
        if node is None:
            self.partitions(tp[0])
            node = self.node.leader_for(tp)
        return node

    def _forget(self, topic: str) -> None:
        self.node.topics.pop(topic, None)

    # -------------------------------------------------------------- offsets
    def offsets(self, tps: list, which: int, isolation: int, attempts: int = RETRIES) -> dict:
        """{tp: offset}: the log start (EARLIEST), or the LSO / HW (LATEST, by isolation)."""
        out: dict = {}
        for _ in range(attempts):
            todo = [tp for tp in tps if tp not in out]
            if not todo:
                return out
            by_leader: dict = {}
            for tp in todo:
                by_leader.setdefault(self.leader(tp), {})[tp] = which
            for leader, parts in sorted(by_leader.items()):
                resp, err = self.call(leader, m.ListOffsetsRequest(isolation, parts))
                for tp in parts:
                    e, off = (err, -1) if err is not None else resp.partitions.get(tp, (Errors.UNKNOWN_SERVER_ERROR, -1))[:2]
                    if e == Errors.NONE:
                        out[tp] = off
                    else:
                        self._forget(tp[0])
            if len(out) < len(tps):
                self.backoff()
        raise KafkaException(KafkaError(Errors.LEADER_NOT_AVAILABLE, f"no offsets for {sorted(set(tps) - set(out))}"))

    # ---------------------------------------------------------------- fetch
    def read_range(self, tp: tuple, start: int, end: int, isolation: int,
                   max_bytes: int = FETCH_MAX_BYTES, attempts: int = RETRIES) -> Iterator[tuple]:
        """Yield column chunks (offsets, keys, values, timestamps, headers, timestamp_types) for the
        records of [start, end) that the isolation level lets a consumer see, one chunk per fetch."""
        pos = start
        failures = 0
        read_committed = isolation == m.READ_COMMITTED
        while pos < end:
            leader = self.leader(tp)
            req = m.FetchRequest(m.CONSUMER_REPLICA_ID, 0, 1, isolation, {tp: m.FetchPartition(
                pos, max_bytes, self.node.leader_epoch_for(tp))})
            resp, err = self.call(leader, req)
            data = None if err is not None else resp.partitions.get(tp)
            if err is None and getattr(resp, "error", 0):
                e = Errors(resp.error)
            else:
                e = err if err is not None else (Errors(data.error) if data is not None else Errors.UNKNOWN_SERVER_ERROR)
            if e != Errors.NONE:
                failures += 1
                if e not in RETRIABLE or failures > attempts:
                    raise KafkaException(KafkaError(e, f"Fetch {tp[0]}-{tp[1]} at offset {pos}: {e.name}"))
                self._forget(tp[0])
                self.backoff()
                continue
            failures = 0
            if not data.records:
                # nothing below ``end`` yet (a follower lagging after a leader change): wait and ask again
                limit = data.last_stable_offset if read_committed else data.high_watermark
                if limit >= end:
                    raise KafkaException(KafkaError(Errors.UNKNOWN_SERVER_ERROR,
                                                    f"{tp[0]}-{tp[1]}: no records at {pos} below {end}"))
                self.backoff()
                continue
            cf = CompletedFetch(tp, pos, data.records, data.aborted_transactions, read_committed)
            offs, keys, values, stamps, headers, types = [], [], [], [], [], []
            while True:
                got = cf.next_record()
                if got is None:
                    break
                off, rec, batch = got
                if off >= end:
                    break
                offs.append(off)
                keys.append(rec.key)
                values.append(rec.value)
                if batch.log_append_time >= 0:
                    stamps.append(batch.log_append_time)
                    types.append(1)
                else:
                    stamps.append(rec.timestamp)
                    types.append(0)
                headers.append(rec.headers)
            pos = max(pos + 1, cf.next_fetch_offset) if not offs else max(offs[-1] + 1, cf.next_fetch_offset)
            if offs:
                yield offs, keys, values, stamps, headers, types

    # -------------------------------------------------------------- helpers
    def ensure_topic(self, name: str, partitions: int, replication_factor: int = 3) -> None:
        """Create ``name`` unless it exists (a CreateTopics request; racing tasks: one creates it, the
        others are told TOPIC_ALREADY_EXISTS)."""
        rf = max(1, min(replication_factor, len(self._attachment.brokers)))
        try:
            self.partitions(name, attempts=1)
            return
        except KafkaException:
            pass
        request = m.CreateTopicsRequest((m.CreatableTopic(name, partitions, rf),))
        for _ in range(RETRIES):
            resp, err = self.call(self.node.any_broker(), request)
            if err is None:
                e = Errors(resp.topics[0].error_code)
                if e not in (Errors.NONE, Errors.TOPIC_ALREADY_EXISTS):
                    raise KafkaException(KafkaError(e, f"cannot create topic {name!r}: "
                                                       f"{resp.topics[0].error_message or e.name}"))
                break
            self.backoff()
        self.partitions(name)

    def claim(self, key: str) -> bool:
        """True the first time ``key`` is claimed (at the front door, so across processes)."""
        claim = getattr(self._attachment, "claim", None)
        if claim is not None:
            return claim(key)
        with _LOCAL_CLAIMS_LOCK:
            first = key not in _LOCAL_CLAIMS
            _LOCAL_CLAIMS.add(key)
            return first

    def signal(self, name: str, data=None):
        fn = getattr(self._attachment, "signal", None)
        return fn(name, data) if fn is not None else None


def parse_offsets(spec: Optional[str]) -> Optional[dict]:
    """Spark's Kafka JSON offsets ``{"topic": {"0": 23, "1": -2}}`` -> {(topic, p): offset}."""
    import json
    if spec is None:
        return None
    try:
        raw = json.loads(spec)
    except ValueError:
        raise ValueError(f"offsets must be 'earliest', 'latest' or JSON like {{\"t\":{{\"0\":23}}}}, got {spec!r}") from None
    if not isinstance(raw, dict):
        raise ValueError(f"offsets JSON must be an object, got {spec!r}")
    out = {}
    for topic, parts in raw.items():
        if not isinstance(parts, dict):
            raise ValueError(f"offsets of {topic!r} must be an object of partition -> offset")
        for p, off in parts.items():
            out[(topic, int(p))] = int(off)
    return out
