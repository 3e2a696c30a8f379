"""``TransactionStateManager``: the coordinator's cache of transactions and its log, ``__transaction_state``.

Owns which ``__transaction_state`` partitions this broker leads (and with
which coordinator epoch), loading a partition after election (requests get
COORDINATOR_LOAD_IN_PROGRESS meanwhile; last value per key wins; tombstones
delete), writing every transition before it is acted on (acks=all), mapping
write errors to the errors a client sees, and dropping the cache on emigration.
"""
from __future__ import annotations

from typing import Callable, Optional

from ..protocol.record_batch import Record, RecordBatch
from ..protocol.errors import Errors
from ..protocol.hashing import partition_for
from . import transaction_log as tlog
from .transaction_metadata import STATE_NAMES, S, TransactionMetadata, TxnTransitMetadata, from_transit

TOPIC = "__transaction_state"

# read on every write: a member read through its enum class costs CPython 3.11 a call of the class's attribute hook
_NONE = Errors.NONE

# KAFKA-EOS §2.3: append errors as the client sees them
_APPEND_ERROR_MAP = {
    Errors.UNKNOWN_TOPIC_OR_PARTITION: Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.NOT_ENOUGH_REPLICAS: Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND: Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.REQUEST_TIMED_OUT: Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.NOT_LEADER_OR_FOLLOWER: Errors.NOT_COORDINATOR,
    Errors.KAFKA_STORAGE_ERROR: Errors.NOT_COORDINATOR,
}


class TxnPartitionCache:
    def __init__(self, coordinator_epoch: int) -> None:
        self.coordinator_epoch = coordinator_epoch
        self.metadata: dict[str, TransactionMetadata] = {}


class TransactionStateManager:
    def __init__(self, broker) -> None:
        self.broker = broker
        self.caches: dict[int, TxnPartitionCache] = {}
        self.loading: dict[int, int] = {}        # partition -> coordinator epoch being loaded
        self.on_loaded: Optional[Callable[[int, TxnPartitionCache], None]] = None
        self._partition_of: dict[str, int] = {}     # transactional.id -> its partition (asked on every request)

    @property
    def num_partitions(self) -> int:
        return self.broker.config["transaction.state.log.num.partitions"]

    def partition_for(self, transactional_id: str) -> int:
        part = self._partition_of.get(transactional_id)
        if part is None:
            part = self._partition_of[transactional_id] = partition_for(transactional_id, self.num_partitions)
        return part

    def lookup(self, transactional_id: str) -> tuple:
        """(error, cache) — NOT_COORDINATOR if we do not lead its partition, LOAD_IN_PROGRESS while loading."""
        part = self.partition_for(transactional_id)
        if part in self.loading:
            return Errors.COORDINATOR_LOAD_IN_PROGRESS, None
        cache = self.caches.get(part)
        if cache is None:
            return Errors.NOT_COORDINATOR, None
        return _NONE, cache

    def all_metadata(self):
        for part, cache in sorted(self.caches.items()):
            for tid, md in sorted(cache.metadata.items()):
                yield part, cache, md

    # ----------------------------------------------------------------- writes
    def append_transition(self, md: TransactionMetadata, transit: TxnTransitMetadata, coordinator_epoch: int,
                          callback: Callable[[Errors], None], retry_on_error: bool = False) -> None:
        """Write ``transit`` to __transaction_state; complete it once durable; then callback(error)."""
        b = self.broker
        k = b.kernel
        tid = md.transactional_id
        part = self.partition_for(tid)
        dead = transit.txn_state is S.Dead
        value = None if dead else tlog.value_bytes(transit)
        rec = tuple.__new__(Record, (tlog.key_bytes(tid), value, (), k.now))     # Record(...), as its __new__ builds it
        # narrate_f: the line is formatted only if someone reads the step (a state's str() is its name)
        k.narrate_f(("coordinator writes %r -> %s (pid %s epoch %s) to " + TOPIC + "-%s%s", tid,
                     STATE_NAMES[transit.txn_state],
                     transit.producer_id, transit.producer_epoch, part, " [tombstone]" if dead else ""))

        def done(error, info):
            cache = self.caches.get(part)
            if cache is None or cache.coordinator_epoch != coordinator_epoch:
                b.narrate(f"{tid!r}: the write finished but this broker is no longer its "
                          f"coordinator (epoch changed) -> NOT_COORDINATOR")
                callback(Errors.NOT_COORDINATOR)
                return
            if error == _NONE:
                md.complete_transition(transit, k.now)
                k.narrate_f(("%r is now %s (the " + TOPIC + " record is replicated)", tid, STATE_NAMES[md.state]))
                if dead:
                    cache.metadata.pop(md.transactional_id, None)
                callback(_NONE)
                return
            mapped = _APPEND_ERROR_MAP.get(error, Errors.UNKNOWN_SERVER_ERROR)
            if not (retry_on_error and transit.txn_state in (S.CompleteCommit, S.CompleteAbort)):
                md.pending_state = None
            b.narrate(f"writing {md.transactional_id!r} -> {transit.txn_state.name} failed with {error.name} "
                      f"-> {mapped.name}")
            callback(mapped)

        b.append_internal((TOPIC, part), [RecordBatch((rec,))], done, timeout_ms=max(1, transit.txn_timeout_ms))

    # ------------------------------------------------------------- elections
    def on_elected(self, partition: int, coordinator_epoch: int) -> None:
        b = self.broker
        self.caches.pop(partition, None)
        self.loading[partition] = coordinator_epoch
        b.narrate(f"broker {b.broker_id} becomes transaction coordinator for {TOPIC}-{partition} "
                  f"(coordinator epoch {coordinator_epoch}); loading it")
        b.set_timer(1, f"load {TOPIC}-{partition}", lambda: self._load(partition, coordinator_epoch))

    def on_resigned(self, partition: int, coordinator_epoch: int) -> None:
        if partition in self.caches or partition in self.loading:
            self.broker.narrate(f"broker {self.broker.broker_id} is no longer coordinator for {TOPIC}-{partition}; "
                                f"its transactions are dropped from memory")
        self.caches.pop(partition, None)
        self.loading.pop(partition, None)

    def _load(self, partition: int, coordinator_epoch: int) -> None:
        b = self.broker
        if self.loading.get(partition) != coordinator_epoch:
            return
        p = b.partitions.get((TOPIC, partition))
        if p is None or not p.is_leader:
            self.loading.pop(partition, None)
            return
        log = p.log
        latest: dict[str, Optional[TxnTransitMetadata]] = {}
        offset = log.log_start_offset
        n = 0
        while offset < log.log_end_offset:
            batches = log.read(offset, log.log_end_offset, 5_242_880)
            if not batches:
                break
            for batch in batches:
                if not batch.is_control:
                    for rec in batch.records:
                        latest[tlog.decode_key(rec.key)] = tlog.decode_value(rec.value)
                        n += 1
                offset = batch.next_offset
        cache = TxnPartitionCache(coordinator_epoch)
        for tid, t in sorted(latest.items()):
            if t is not None:
                cache.metadata[tid] = from_transit(tid, t)
        del self.loading[partition]
        self.caches[partition] = cache
        b.narrate(f"loaded {TOPIC}-{partition}: {n} record(s), {len(cache.metadata)} transactional id(s)")
        if self.on_loaded:
            self.on_loaded(partition, cache)
