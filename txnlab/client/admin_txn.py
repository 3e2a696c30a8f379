"""The admin client's partition calls: list_offsets (ListOffsets to each leader) and Kafka's transaction tools
(KIP-664, ``kafka-transactions.sh``; Kafka's Java Admin names, as confluent-kafka has none): list_transactions
(ListTransactions to every broker), describe_transactions (DescribeTransactions to the transaction
coordinator), describe_producers (DescribeProducers to the partition leader), abort_transaction (a
WriteTxnMarkers ABORT to the leader with the producer's id, epoch and coordinator epoch), and the lab's
find_hanging_transactions (``kafka-transactions.sh find-hanging``), which blocks and returns a list.
"""
from __future__ import annotations

import dataclasses

from ..errors import KafkaError, KafkaException
from ..protocol import messages as m
from ..protocol.errors import Errors
from .admin_future import AdminFuture, cluster_metadata, kafka_error
from .admin_model import IsolationLevel
from .config import dialect_of
from .admin_types import AbortTransactionSpec, ListOffsetsResultInfo, OffsetSpec, ProducerState, TransactionListing
from .message import TopicPartition
from .network_client import broker_node


class TransactionAdmin:
    """Mixed into ``AdminClient``."""

    # ------------------------------------------------------------- offsets
    def list_offsets(self, topic_partition_offsets: dict, **kwargs) -> dict:
        """ListOffsets to each partition's leader: {TopicPartition: Future(ListOffsetsResultInfo)}.  kwargs:
        isolation_level (IsolationLevel; READ_COMMITTED answers the LSO for latest), request_timeout.
        Times are Unix ms, as the application's (the lab's clock anchored at ``sim.clock.epoch.ms``): a
        ``for_timestamp`` asks the lab time it stands for, and the found record's timestamp comes back as Unix
        time (-1 for earliest and latest, or when nothing was found)."""
        if not isinstance(topic_partition_offsets, dict):
            raise TypeError("Expected topic_partition_offsets to be a dict of TopicPartition to OffsetSpec")
        iso = kwargs.get("isolation_level", IsolationLevel.READ_UNCOMMITTED)
        level = m.READ_COMMITTED if iso == IsolationLevel.READ_COMMITTED else m.READ_UNCOMMITTED
        specs = {}
        for tp, spec in topic_partition_offsets.items():
            if not isinstance(spec, OffsetSpec):
                raise TypeError("Value of topic_partition_offsets must be of OffsetSpec type")
            specs[(tp.topic, tp.partition)] = m.asked_time(spec._value, self._config["sim.clock.epoch.ms"])
        futures = {TopicPartition(t, p): self._future() for t, p in specs}
        by_key = {(tp.topic, tp.partition): f for tp, f in futures.items()}
        self._list_offsets(specs, level, by_key, self._deadline(kwargs))
        return futures

    def _list_offsets(self, specs: dict, level: int, futures: dict, deadline: int) -> None:
        def with_leaders():
            by_leader: dict = {}
            for key, ts in sorted(specs.items()):
                leader = self._node.leader_for(key)
                if leader is None:
                    err = self._node.topic_errors.get(key[0], Errors.LEADER_NOT_AVAILABLE)
                    futures[key].resolve(error=kafka_error(err))
                else:
                    by_leader.setdefault(leader, {})[key] = ts
            for leader, part in sorted(by_leader.items()):
                self._send(leader, m.ListOffsetsRequest(level, part), lambda r, e, part=part: answered(part, r, e))

        def answered(part, resp, err):
            retry = {}
            for key, ts in part.items():
                e, off, found_ts, epoch = (err, -1, None, -1) if err is not None else \
                    resp.partitions.get(key, (Errors.UNKNOWN_SERVER_ERROR, -1, None, -1))
                if e and Errors(e).retriable and self._kernel.now < deadline:
                    retry[key] = ts
                elif e:
                    futures[key].resolve(error=self._request_error(e) if err is not None else kafka_error(e))
                else:
                    unix = -1 if found_ts is None else found_ts + self._config["sim.clock.epoch.ms"]
                    futures[key].resolve(ListOffsetsResultInfo(off, unix, epoch))
            if retry:
                self._later(lambda: self._list_offsets(retry, level, futures, deadline))
        self._with_metadata({t for t, _ in specs}, with_leaders)

    # -------------------------------------------------------- transactions
    def list_transactions(self, states=(), producer_ids=()) -> AdminFuture:
        """ListTransactions to every live broker (each lists its coordinator's): Future([TransactionListing])."""
        f = self._future()
        rows, waiting = [], set()

        def listed(broker, resp, err):
            waiting.discard(broker)
            if err is not None or resp.error:
                f.resolve(error=self._request_error(err) if err is not None else kafka_error(resp.error))
                return
            rows.extend(TransactionListing(*r) for r in resp.transaction_states)
            if not waiting:
                f.resolve(sorted(rows, key=lambda r: r.transactional_id))

        def brokers(nodes, err):
            if err is not None:
                f.resolve(error=self._request_error(err))
                return
            waiting.update(nodes)
            req = m.ListTransactionsRequest(tuple(states), tuple(producer_ids))
            for b in nodes:
                self._send(b, req, lambda r, e, b=b: listed(b, r, e))
        self._live_broker_nodes(brokers)
        return f

    def describe_transactions(self, transactional_ids) -> dict:
        """DescribeTransactions to each id's coordinator: {transactional_id: Future(dict)} (state, producer id
        and epoch, timeout, start time, partitions)."""
        deadline = self._deadline({})
        out = {}
        for tid in transactional_ids:
            f = out[tid] = self._future()

            def then(resp, err, f=f):
                if err is not None:
                    f.resolve(error=self._request_error(err))
                    return
                d = dict(resp.transaction_states[0])
                d["transaction_start_ms"] = self._unix(d.get("transaction_start_ms", -1))
                f.resolve(d, kafka_error(d["error"]) if d["error"] else None)
            self._send_to_coordinator(tid, m.COORDINATOR_TRANSACTION, m.DescribeTransactionsRequest((tid,)),
                                      lambda r: r.transaction_states[0]["error"], then, deadline)
        return out

    def describe_producers(self, partitions) -> dict:
        """DescribeProducers to each partition's leader: {TopicPartition: Future([ProducerState])}."""
        out = {tp: self._future() for tp in partitions}

        def with_leaders():
            for tp, f in out.items():
                key = (tp.topic, tp.partition)
                leader = self._node.leader_for(key)
                if leader is None:     # (Kafka's PartitionLeaderStrategy: the topic's Metadata error, if any)
                    f.resolve(error=kafka_error(self._node.topic_errors.get(key[0], Errors.LEADER_NOT_AVAILABLE)))
                    continue

                def answered(resp, err, f=f, key=key):
                    if err is not None:
                        f.resolve(error=self._request_error(err))
                        return
                    e, producers = resp.partitions[key]
                    f.resolve([_unix_producer(p, self._unix) for p in producers], kafka_error(e) if e else None)
                self._send(leader, m.DescribeProducersRequest((key,)), answered)
        self._with_metadata({tp.topic for tp in partitions}, with_leaders)
        return out

    def abort_transaction(self, spec: AbortTransactionSpec) -> AdminFuture:
        """Write an ABORT marker for a hanging transaction (kafka-transactions.sh abort): Future(None)."""
        f = self._future()
        tp = spec.topic_partition
        key = (tp.topic, tp.partition)

        def with_leader():
            leader = self._node.leader_for(key)
            if leader is None:
                f.resolve(error=kafka_error(self._node.topic_errors.get(key[0], Errors.LEADER_NOT_AVAILABLE)))
                return
            entry = m.TxnMarkerEntry(spec.producer_id, spec.producer_epoch, False, (key,), spec.coordinator_epoch)

            def answered(resp, err):
                if err is not None:
                    f.resolve(None, self._request_error(err))
                    return
                err = resp.markers.get(spec.producer_id, {}).get(key, Errors.NONE) or None
                f.resolve(None, kafka_error(err) if err else None)
            self._send(leader, m.WriteTxnMarkersRequest((entry,)), answered)
        self._with_metadata((tp.topic,), with_leader)
        return f

    def _unix(self, lab_ms: int) -> int:
        """A time the brokers keep on the lab's clock as the application reads it (messages.unix_time, with the
        lab's 0 at ``sim.clock.epoch.ms``), as a real Admin client gets it."""
        return m.unix_time(lab_ms, self._config["sim.clock.epoch.ms"])

    # ------------------------------------------------- find-hanging (blocking)
    def find_hanging_transactions(self, partitions, max_transaction_timeout_ms: int = 900_000) -> list:
        """Open transactions older than the max timeout that no coordinator knows (kafka-transactions.sh
        find-hanging): a list of (TopicPartition, ProducerState), ready for AbortTransactionSpec.  A lab
        extension, blocking like the command line tool: it asks one thing after another."""
        now = self._unix(self._kernel.now)
        hanging = []
        by_pid = {r.producer_id: r for r in self._listings_one_by_one()}
        for tp, producers in [(tp, self._producers_of(tp)) for tp in partitions]:
            for ps in producers:
                if ps.current_transaction_start_offset < 0 or now - ps.last_timestamp < max_transaction_timeout_ms:
                    continue
                listing = by_pid.get(ps.producer_id)
                desc = None if listing is None else self._transaction_of(listing.transactional_id)
                if desc is None or (tp.topic, tp.partition) not in {tuple(x) for x in desc["partitions"]}:
                    hanging.append((tp, ps))
        return hanging

    def _call(self, dst: str, request):
        box = {}
        self._node.send_request(dst, request, lambda r, e: box.update(r=r, e=e))   # dialect.REQUEST_TIMEOUT
        self._kernel.run_until(lambda: "r" in box)
        if box["e"] is not None:
            raise KafkaException(self._request_error(box["e"], request.API))
        return box["r"]

    def _listings_one_by_one(self) -> list:
        rows = []
        for b in sorted(cluster_metadata(self._node, self._kernel, dialect=dialect_of(self._config)).brokers):
            resp = self._call(broker_node(b), m.ListTransactionsRequest((), ()))
            rows.extend(TransactionListing(*r) for r in resp.transaction_states)
        return rows

    def _producers_of(self, tp) -> list:
        node, key = self._node, (tp.topic, tp.partition)
        if node.leader_for(key) is None:
            node.request_metadata((tp.topic,))
            self._kernel.run_until(lambda: not node._metadata_in_flight)
        leader = node.leader_for(key)
        if leader is None:
            raise KafkaException(KafkaError(Errors.LEADER_NOT_AVAILABLE))
        err, producers = self._call(leader, m.DescribeProducersRequest((key,))).partitions[key]
        if err:
            raise KafkaException(kafka_error(err))
        return [_unix_producer(p, self._unix) for p in producers]

    def _transaction_of(self, tid: str):
        box = {}
        self._node.find_coordinator(tid, m.COORDINATOR_TRANSACTION, lambda n, e: box.update(n=n, e=e))
        self._kernel.run_until(lambda: "n" in box)
        if box["e"] is not None:
            return None
        d = self._call(box["n"], m.DescribeTransactionsRequest((tid,))).transaction_states[0]
        return None if d["error"] else d


def _unix_producer(p, unix) -> ProducerState:
    """A DescribeProducers entry as the application gets it: its last timestamp in Unix ms."""
    state = ProducerState(*p)
    return dataclasses.replace(state, last_timestamp=unix(state.last_timestamp))
