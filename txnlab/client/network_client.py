"""A client process on the simulated network (Kafka's ``NetworkClient`` + ``Metadata``).

Owns what every client needs: its node on the network, the cluster metadata
it has learned (topics, partition leaders, live brokers) and its refresh,
coordinator lookup (FindCoordinator), and "which broker should I ask".
Clients speak only the protocol: they never import broker, coordinator or log, and they never
hold the lab's ``Cluster``: ``attach_client`` turns ``bootstrap.servers`` into a node on the
network through the kernel's registry (``txnlab.kernel.attach``).
"""
from __future__ import annotations

from typing import Callable, Optional

from ..errors import ConfigException, KafkaError, KafkaException
from ..kernel import NothingCanArrive, attach
from ..kernel.node import Node
from ..protocol import messages as m
from ..protocol.errors import Errors
from .config import dialect_of, principal
from .dialect import JAVA, LIBRDKAFKA, PERMANENT_TOPIC_ERRORS, RequestTimeouts, request_timeouts


_NODE_NAMES: dict = {}      # broker id -> its node's name (asked for at every leader lookup)


def broker_node(broker_id: int) -> str:
    name = _NODE_NAMES.get(broker_id)
    if name is None:
        name = _NODE_NAMES[broker_id] = f"broker-{broker_id}"
    return name


def attachment_for(bootstrap) -> attach.Attachment:
    """What ``bootstrap.servers`` dials: the kernel's registry answers (ConfigException if nobody does)."""
    try:
        return attach.lookup(bootstrap)
    except attach.AddressError as e:
        raise ConfigException("bootstrap.servers", str(e)) from None


def attach_client(cfg: dict, kind: str, owner, node_class=None) -> tuple:
    """(attachment, node name, node) of a new client of kind ``kind`` (``producer``, ``consumer``,
    ``admin``) on the network ``cfg["bootstrap.servers"]`` names.  The lab-only client keys the
    attachment carries (``sim.*``) are applied to ``cfg`` when the client's config knows them."""
    att = attachment_for(cfg["bootstrap.servers"])
    for k, v in att.client_config.items():
        if k in cfg:
            cfg[k] = v
    name = att.client_node_name(kind, cfg.get("client.id"))     # client.id is a label, not an identity
    node = att.attach(name, owner, node_class or ClientNode, principal(cfg))
    node.timeouts = request_timeouts(cfg)
    node.dialect = dialect_of(cfg)
    if kind == "consumer":
        node.allow_auto_create_topics = bool(cfg.get("allow.auto.create.topics", False))
    return att, name, node



def block(kernel, predicate: Callable[[], bool], timeout_ms: Optional[int], call: str) -> bool:
    """A client's blocking call: ``kernel.run_until``; a wait without a timeout on a simulation where nothing
    can happen any more raises confluent-kafka's KafkaException (_TIMED_OUT) saying so, instead of hanging."""
    try:
        return kernel.run_until(predicate, timeout_ms=timeout_ms)
    except NothingCanArrive as e:
        raise KafkaException(KafkaError(KafkaError._TIMED_OUT, f"{call} with no timeout: {e}")) from None


_JAVA_TIMEOUTS = RequestTimeouts()
_JAVA_TIMEOUTS.default = 30_000         # request.timeout.ms: a node without a client config (Spark's, a Java client)


class ClientNode(Node):
    # librdkafka talks to the group and transaction coordinators on connections of their own (its
    # "GroupCoordinator" and "TxnCoordinator" logical brokers); everything else shares one per broker
    CHANNELS = {**{api: "group-coordinator" for api in ("JoinGroup", "SyncGroup", "Heartbeat", "LeaveGroup",
                                                         "OffsetCommit", "OffsetFetch")},
                **{api: "txn-coordinator" for api in ("InitProducerId", "AddPartitionsToTxn", "AddOffsetsToTxn",
                                                       "EndTxn")}}

    def __init__(self, kernel, name: str, bootstrap: list[str], owner) -> None:
        super().__init__(kernel, name)
        self.owner = owner
        self.bootstrap = list(bootstrap)
        self.live_brokers: list[str] = list(bootstrap)
        self.topics: dict[str, list] = {}            # topic -> [PartitionMetadata]
        self.topic_ids: dict[str, str] = {}          # topic -> its id (KIP-516), as the last metadata gave it
        self.topic_errors: dict[str, Errors] = {}
        self.dialect = LIBRDKAFKA                    # whose client this is (attach_client sets it from the config)
        # librdkafka's allow.auto.create.topics: true for a producer, false for a consumer unless set
        self.allow_auto_create_topics = True
        self._metadata_in_flight = False
        self._metadata_waiters: list[Callable[[], None]] = []
        self._rr = 0
        self.crashed = False
        # librdkafka's reconnect.backoff.ms (100) doubling up to reconnect.backoff.max.ms (10000): a broker
        # that refused a connection is not asked again before its backoff ends, if another one can be
        self._reconnect_at: dict[str, int] = {}
        self._reconnect_backoff: dict[str, int] = {}
        self.tx: dict[str, int] = {}                 # requests sent / responses received per broker (statistics)
        self.rx: dict[str, int] = {}
        # how long each request waits for its answer: the client dialect's rule (dialect.REQUEST_TIMEOUT), set
        # by attach_client from the client's config
        self.timeouts: RequestTimeouts = _JAVA_TIMEOUTS

    def send_request(self, dst, request, callback, timeout_ms: Optional[int] = None, background: bool = False):
        """Send ``request``; it waits ``timeout_ms`` for its answer, by default what the client's dialect
        waits for that request (``self.timeouts``)."""
        self.tx[dst] = self.tx.get(dst, 0) + 1
        if timeout_ms is None:
            timeout_ms = self.timeouts[request.API]
        return Node.send_request(self, dst, request, callback, timeout_ms, background)     # (super(): no object)

    def _event(self, code: int, text: str) -> None:
        events = getattr(self.owner, "_events", None)
        if events is not None:
            events.error(code, text)

    # librdkafka's logical brokers for the coordinators' connections (rd_kafka_broker_add_logical): their name
    _LOGICAL = {"group-coordinator": "GroupCoordinator", "txn-coordinator": "TxnCoordinator"}

    def _on_timeout(self, cid: int) -> None:
        """A request's timeout passed: the kernel fails it and closes its connection (Node._on_timeout); the client
        logs it as its dialect does (ClientEvents.request_timed_out), nothing for error_cb.  Counted as timed out
        with it: the others in flight on that connection whose own timeout passed at the same time."""
        p = self._pending.get(cid)
        events = getattr(self.owner, "_events", None)
        if p is not None and events is not None:
            now, conn = self.kernel.now, p.msg.conn
            timed_out = sorted((c, q.api, now - q.msg.sent_at) for c, q in self._pending.items()
                               if q.msg.conn is conn and q.timeout_event.time <= now)
            bid = p.dst.rsplit("-", 1)[-1]
            thread = self._LOGICAL.get(self.CHANNELS.get(p.api, ""), f"{p.dst}/{bid}")
            events.request_timed_out(thread, f"{thread.split('/')[0]}/{bid}", bid, [t[1:] for t in timed_out])
        super()._on_timeout(cid)

    def _broker_down(self, broker: str, why: str) -> None:
        """librdkafka's rd_kafka_broker_fail: a transport error for the application, and when it was the last
        broker up, "all brokers down" (once, until one answers again)."""
        bid = broker.rsplit("-", 1)[-1]
        self._event(KafkaError._TRANSPORT, f"{broker}/{bid}: {why}")
        events = getattr(self.owner, "_events", None)
        now = self.kernel.now
        pool = self.live_brokers or self.bootstrap
        if events is not None and not events.all_down_reported \
                and all(self._reconnect_at.get(b, 0) > now for b in pool):
            events.all_down_reported = True
            self._event(KafkaError._ALL_BROKERS_DOWN, f"{len(pool)}/{len(pool)} brokers are down")

    def disconnect(self, peer: str, channel: str, why: str) -> None:
        """Java's NetworkClient.disconnect(node): close the connection to ``peer`` on ``channel``, if one is open;
        the requests in flight on it fail as disconnected (DisconnectException, the lab's NETWORK_EXCEPTION).  As
        a client's orderly close, what it already sent still reaches the broker, but no answer comes back."""
        conn = next((c for c in self.kernel.network.connections()
                     if c.client == self.name and c.server == peer and c.channel == channel), None)
        if conn is None:
            return
        failed = self._pending_on(conn)
        self.kernel.narrate(f"{why}: it closes its connection to {peer}"
                            + (f"; {', '.join(p.api for p in failed)} in flight on it fail(s) as disconnected"
                               if failed else ""))
        self.kernel.network.close(conn, why, by_client=True)
        self._fail(failed, Errors.NETWORK_EXCEPTION)

    def handle_request(self, msg):
        return None

    def on_crash(self) -> None:
        self.crashed = True
        self.owner._on_process_crash()

    # ------------------------------------------------------------ metadata
    def any_broker(self) -> str:
        pool = self.live_brokers or self.bootstrap
        n = len(pool)
        now = self.kernel.now
        for _ in range(n):
            self._rr = (self._rr + 1) % n
            node = pool[self._rr]
            if self._reconnect_at.get(node, 0) <= now:
                return node
        return min(pool, key=lambda b: (self._reconnect_at.get(b, 0), b))   # all backing off: the soonest

    def connection_refused(self, msg) -> None:
        backoff = min(10_000, self._reconnect_backoff.get(msg.dst, 50) * 2)
        self._reconnect_backoff[msg.dst] = backoff
        self._reconnect_at[msg.dst] = self.kernel.now + backoff
        super().connection_refused(msg)
        self._broker_down(msg.dst, "Connect failed: Connection refused (the broker's process is down)")

    def connection_broken(self, conn) -> None:
        super().connection_broken(conn)
        self._broker_down(conn.server, "Disconnected (the connection broke)")

    def disconnected(self, peer: str) -> None:
        super().disconnected(peer)
        if peer.startswith("broker-"):
            self._broker_down(peer, "Disconnected (the broker's process went down)")

    def on_message(self, msg) -> None:
        if msg.is_response:
            self.rx[msg.src] = self.rx.get(msg.src, 0) + 1
            events = getattr(self.owner, "_events", None)
            if events is not None:
                events.all_down_reported = False
        if msg.is_response and msg.src in self._reconnect_backoff:
            del self._reconnect_backoff[msg.src]       # it answers again: the backoff starts over
            self._reconnect_at.pop(msg.src, None)
        Node.on_message(self, msg)      # (super(), without making its object: once per message of a client)

    def leader_for(self, tp) -> Optional[str]:
        parts = self.topics.get(tp[0])
        if not parts or tp[1] >= len(parts):
            return None
        leader = parts[tp[1]].leader
        if leader < 0:
            return None
        name = _NODE_NAMES.get(leader)          # broker_node(), inlined
        return name if name is not None else broker_node(leader)

    def leader_epoch_for(self, tp) -> int:
        parts = self.topics.get(tp[0])
        if not parts or tp[1] >= len(parts):
            return -1
        return parts[tp[1]].leader_epoch

    def num_partitions(self, topic: str) -> Optional[int]:
        parts = self.topics.get(topic)
        return len(parts) if parts else None

    def request_metadata(self, topics=None, then: Optional[Callable[[], None]] = None, retry_ms: int = 100) -> None:
        """Ask some broker for metadata; ``then()`` runs after the answer is applied."""
        if then is not None:
            self._metadata_waiters.append(then)
        if self._metadata_in_flight:
            return
        self._metadata_in_flight = True
        want = tuple(sorted(set(self.topics) | set(topics or ())))

        def done(resp, err):
            self._metadata_in_flight = False
            if err is None:
                self.live_brokers = [broker_node(b) for b in resp.brokers] or self.live_brokers
                ids = resp.topic_ids or {}
                for t, (e, parts) in resp.topics.items():
                    if e == Errors.NONE and parts:
                        self.topics[t] = self._newer_of(t, parts, ids.get(t, ""))
                        self.topic_errors.pop(t, None)
                    else:
                        self.topic_errors[t] = Errors(e)
                        if e in PERMANENT_TOPIC_ERRORS:    # (librdkafka: partition count 0; dialect.METADATA_TOPIC)
                            self.topics.pop(t, None)
            waiters, self._metadata_waiters = self._metadata_waiters, []
            if err is not None:
                self.set_timer(retry_ms, "metadata retry backoff",
                               lambda: self.request_metadata(topics, None, retry_ms))
                self._metadata_waiters = waiters
                return
            for w in waiters:
                w()

        self.send_request(self.any_broker(), m.MetadataRequest(want, self.allow_auto_create_topics), done)

    def _newer_of(self, topic: str, parts: list, topic_id: str) -> list:
        """The partitions of ``topic`` a metadata answer gives, except those whose leader epoch is older than the one
        this client knows: a broker that has not yet learned of a leader change (cut off from the controller,
        catching up) answers with the old leader, and the client keeps the newer one it has.  librdkafka
        (rd_kafka_toppar_leader_update) ignores "outdated metadata" whatever the topic's id; Kafka's Java client
        (Metadata.updateLatestMetadata) takes every epoch of a topic whose id changed (deleted and created again).
        An epoch of -1 (unknown) is always taken."""
        old, old_id = self.topics.get(topic), self.topic_ids.get(topic)
        if topic_id:
            self.topic_ids[topic] = topic_id
        if not old:
            return parts
        if self.dialect == JAVA and topic_id and old_id and topic_id != old_id:
            self.kernel.narrate(f"{self.name}: {topic} has a new topic id: its partitions' leader epochs start again "
                                f"(Java's Metadata: the last seen epochs reset)")
            return parts
        out = []
        for p in parts:
            o = old[p.partition] if p.partition < len(old) else None
            if o is not None and p.leader_epoch != -1 and p.leader_epoch < o.leader_epoch:
                self.kernel.narrate(
                    f"{self.name}: {topic}-{p.partition}: ignoring outdated metadata (leader {p.leader}, leader epoch "
                    f"{p.leader_epoch}) which is older than its cached leader epoch {o.leader_epoch} (leader "
                    f"{o.leader})" if self.dialect == LIBRDKAFKA else
                    f"{self.name}: got metadata for an older epoch {p.leader_epoch} (current is {o.leader_epoch}) for "
                    f"partition {topic}-{p.partition}, not updating")
                out.append(o)
            else:
                out.append(p)
        return out

    def find_coordinator(self, key: str, key_type: int, then: Callable[[Optional[str], Optional[Errors]], None],
                         retry_ms: int = 100) -> None:
        def done(resp, err):
            if err is not None:
                then(None, err)
            elif resp.error != Errors.NONE:
                then(None, Errors(resp.error))
            else:
                then(broker_node(resp.node_id), None)
        self.send_request(self.any_broker(), m.FindCoordinatorRequest(key, key_type), done)
