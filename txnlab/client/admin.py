"""``AdminClient``: confluent-kafka's admin surface plus Kafka's transaction tools (KIP-664).

Owns create_topics / delete_topics / describe_configs / list_topics (CreateTopics,
DeleteTopics, DescribeConfigs, Metadata: every one a protocol request to a broker,
which forwards topic changes to the controller), and what ``kafka-transactions.sh`` does:
list and describe transactions (asked of every transaction coordinator),
describe producers (asked of partition leaders), find hanging transactions,
and abort one (a WriteTxnMarkers ABORT sent to the partition leader with the
producer's id, epoch and coordinator epoch).  Results are
``concurrent.futures.Future`` objects, resolved once the simulation answered.
"""
from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass
from typing import Optional

from ..errors import KafkaError, KafkaException
from ..protocol import messages as m
from ..protocol.errors import Errors
from .admin_types import ConfigEntry, ConfigResource, ConfigSource  # noqa: F401 - ConfigResource: the public name
from .config import admin_config
from .message import TopicPartition
from .network_client import attach_client, broker_node


@dataclass
class NewTopic:
    topic: str
    num_partitions: int = 1
    replication_factor: int = 1
    config: Optional[dict] = None


@dataclass(frozen=True)
class TransactionListing:
    transactional_id: str
    producer_id: int
    state: str


@dataclass(frozen=True)
class ProducerState:
    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_timestamp: int
    coordinator_epoch: int
    current_transaction_start_offset: int


@dataclass(frozen=True)
class AbortTransactionSpec:
    topic_partition: TopicPartition
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int


@dataclass(frozen=True)
class PartitionMetadata:
    id: int
    leader: int
    replicas: list
    isrs: list


@dataclass(frozen=True)
class TopicMetadata:
    topic: str
    partitions: dict


@dataclass(frozen=True)
class ClusterMetadata:
    brokers: dict
    topics: dict


def _done(value=None, error: Optional[KafkaError] = None) -> Future:
    f: Future = Future()
    if error is not None:
        f.set_exception(KafkaException(error))
    else:
        f.set_result(value)
    return f


def cluster_metadata(node, kernel, topic: Optional[str] = None) -> ClusterMetadata:
    box = {}
    req = m.MetadataRequest(None if topic is None else (topic,))
    node.send_request(node.any_broker(), req, lambda r, e: box.update(r=r, e=e), timeout_ms=30_000)
    kernel.run_until(lambda: "r" in box)
    if box["e"] is not None:
        raise KafkaException(KafkaError(box["e"]))
    resp = box["r"]
    topics = {}
    for t, (err, parts) in resp.topics.items():
        topics[t] = TopicMetadata(t, {p.partition: PartitionMetadata(p.partition, p.leader, list(p.replicas),
                                                                      list(p.isr)) for p in parts})
    return ClusterMetadata({b: f"broker-{b}" for b in resp.brokers}, topics)


def _error(code: int, message: str = "") -> KafkaError:
    err = Errors(code)
    return KafkaError(err, message or err.name)


class AdminClient:
    def __init__(self, config: dict) -> None:
        cfg = admin_config(config)
        self._config = cfg
        self._attachment, self.name, self._node = attach_client(cfg, "admin", self)
        self._kernel = self._attachment.kernel

    def _on_process_crash(self) -> None:
        pass

    def _call(self, dst: str, request):
        box = {}
        self._node.send_request(dst, request, lambda r, e: box.update(r=r, e=e),
                                timeout_ms=self._config["request.timeout.ms"])
        self._kernel.run_until(lambda: "r" in box)
        if box["e"] is not None:
            raise KafkaException(KafkaError(box["e"], f"{request.API} failed: {Errors(box['e']).name}"))
        return box["r"]

    def _call_any(self, request):
        """``request`` to any broker; a broker that cannot be reached is left for another (it backs off, as
        Kafka's admin client retries with retry.backoff.ms) until request.timeout.ms has passed."""
        deadline = self._kernel.now + self._config["request.timeout.ms"]
        while True:
            try:
                return self._call(self._node.any_broker(), request)
            except KafkaException as e:
                if not e.error.retriable() or self._kernel.now >= deadline:
                    raise
            box: dict = {}
            self._node.set_timer(100, "admin retry backoff", lambda: box.update(done=True))
            self._kernel.run_until(lambda: "done" in box)

    def _live_brokers(self) -> list:
        md = cluster_metadata(self._node, self._kernel)
        return sorted(md.brokers)

    # ------------------------------------------------------------ topics
    def create_topics(self, new_topics, operation_timeout: float = 0, request_timeout: float = 0,
                      validate_only: bool = False) -> dict:
        """CreateTopics (to a broker, which forwards it to the controller): {topic: Future(None)}."""
        topics = tuple(m.CreatableTopic(nt.topic, nt.num_partitions, nt.replication_factor,
                                        tuple(sorted((nt.config or {}).items()))) for nt in new_topics)
        timeout_ms = int(operation_timeout * 1000) or self._config["request.timeout.ms"]
        return self._per_topic(m.CreateTopicsRequest(topics, timeout_ms, validate_only), [t.name for t in topics],
                               lambda r: r.topics)

    def delete_topics(self, topics, operation_timeout: float = 0, request_timeout: float = 0) -> dict:
        """DeleteTopics (to a broker, which forwards it to the controller): {topic: Future(None)}."""
        timeout_ms = int(operation_timeout * 1000) or self._config["request.timeout.ms"]
        return self._per_topic(m.DeleteTopicsRequest(tuple(topics), timeout_ms), list(topics), lambda r: r.responses)

    def _per_topic(self, request, names: list, results_of) -> dict:
        try:
            resp = self._call_any(request)
        except KafkaException as e:
            return {n: _done(error=e.error) for n in names}
        out = {}
        for r in results_of(resp):
            out[r.name] = _done(error=_error(r.error_code, r.error_message)) if r.error_code else _done(None)
        return out

    def describe_configs(self, resources, request_timeout: float = 0) -> dict:
        """DescribeConfigs: {ConfigResource: Future({name: ConfigEntry})}.  A broker's configs are asked of
        that broker, topics' of any broker (as Kafka's admin client does)."""
        out = {}
        for res in resources:
            rtype = int(res.restype)
            req = m.DescribeConfigsRequest((m.DescribeConfigsResource(rtype, str(res.name)),))
            try:
                if rtype == m.RESOURCE_BROKER and str(res.name).isdigit():
                    resp = self._call(broker_node(int(res.name)), req)
                else:
                    resp = self._call_any(req)
            except KafkaException as e:
                out[res] = _done(error=e.error)
                continue
            r = resp.results[0]
            if r.error_code:
                out[res] = _done(error=_error(r.error_code, r.error_message))
            else:
                out[res] = _done({c.name: ConfigEntry(c.name, c.value, ConfigSource(c.config_source),
                                                      is_read_only=c.read_only,
                                                      is_default=c.config_source == ConfigSource.DEFAULT_CONFIG,
                                                      is_sensitive=c.is_sensitive) for c in r.configs})
        return out

    def list_topics(self, topic: Optional[str] = None, timeout: float = -1) -> ClusterMetadata:
        return cluster_metadata(self._node, self._kernel, topic)

    # ------------------------------------------------------ transactions
    def list_transactions(self, states=(), producer_ids=()) -> Future:
        rows = []
        for b in self._live_brokers():
            resp = self._call(broker_node(b), m.ListTransactionsRequest(tuple(states), tuple(producer_ids)))
            rows.extend(TransactionListing(*r) for r in resp.transaction_states)
        return _done(sorted(rows, key=lambda r: r.transactional_id))

    def describe_transactions(self, transactional_ids) -> dict:
        out = {}
        for tid in transactional_ids:
            box = {}
            self._node.find_coordinator(tid, m.COORDINATOR_TRANSACTION, lambda n, e: box.update(n=n, e=e))
            self._kernel.run_until(lambda: "n" in box)
            if box["e"] is not None:
                out[tid] = _done(error=KafkaError(box["e"]))
                continue
            resp = self._call(box["n"], m.DescribeTransactionsRequest((tid,)))
            d = resp.transaction_states[0]
            out[tid] = _done(error=KafkaError(d["error"])) if d["error"] else _done(d)
        return out

    def describe_producers(self, partitions) -> dict:
        out = {}
        node = self._node
        for tp in partitions:
            key = (tp.topic, tp.partition)
            if node.leader_for(key) is None:
                node.request_metadata((tp.topic,))
                self._kernel.run_until(lambda: not node._metadata_in_flight)
            leader = node.leader_for(key)
            if leader is None:
                out[tp] = _done(error=KafkaError(Errors.LEADER_NOT_AVAILABLE))
                continue
            resp = self._call(leader, m.DescribeProducersRequest((key,)))
            err, producers = resp.partitions[key]
            out[tp] = _done(error=KafkaError(err)) if err else _done([ProducerState(*p) for p in producers])
        return out

    def abort_transaction(self, spec: AbortTransactionSpec) -> Future:
        """Write an ABORT marker for a hanging transaction (kafka-transactions.sh abort)."""
        tp = spec.topic_partition
        key = (tp.topic, tp.partition)
        self._node.request_metadata((tp.topic,))
        self._kernel.run_until(lambda: not self._node._metadata_in_flight)
        leader = self._node.leader_for(key)
        if leader is None:
            return _done(error=KafkaError(Errors.LEADER_NOT_AVAILABLE))
        entry = m.TxnMarkerEntry(spec.producer_id, spec.producer_epoch, False, (key,), spec.coordinator_epoch)
        resp = self._call(leader, m.WriteTxnMarkersRequest((entry,)))
        err = resp.markers.get(spec.producer_id, {}).get(key, Errors.NONE)
        return _done(error=KafkaError(err)) if err else _done(None)

    def find_hanging_transactions(self, partitions, max_transaction_timeout_ms: int = 900_000) -> list:
        """Open transactions older than the max timeout that no coordinator knows (kafka-transactions.sh
        find-hanging).  Returns AbortTransactionSpec-ready tuples (tp, ProducerState)."""
        now = self._kernel.now
        hanging = []
        listings = self.list_transactions().result()
        by_pid = {r.producer_id: r for r in listings}
        for tp, fut in self.describe_producers(partitions).items():
            for ps in fut.result():
                if ps.current_transaction_start_offset < 0 or now - ps.last_timestamp < max_transaction_timeout_ms:
                    continue
                listing = by_pid.get(ps.producer_id)
                if listing is None:
                    hanging.append((tp, ps))
                    continue
                d = self.describe_transactions([listing.transactional_id])[listing.transactional_id]
                try:
                    desc = d.result()
                except KafkaException:
                    hanging.append((tp, ps))
                    continue
                if (tp.topic, tp.partition) not in {tuple(x) for x in desc["partitions"]}:
                    hanging.append((tp, ps))
        return hanging
