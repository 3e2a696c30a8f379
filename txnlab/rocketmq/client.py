"""The RocketMQ client process (``MQClientInstance``): one simulated process per producer/consumer.

Owns what RocketMQ's client factory does for the producer and consumer on it: route lookups at
the name server (GET_ROUTEINFO_BY_TOPIC), heartbeats to every broker it knows (HEART_BEAT, which
is how a broker learns the live members of a producer group), and the requests a broker sends to
the client: CHECK_TRANSACTION_STATE is handed to the producer of the group named in the half
message (``ClientRemotingProcessor.checkTransactionState``).  ``ExecutorService`` runs work on the
process later in simulated time (it dies with the process).
"""
from __future__ import annotations

from typing import Callable, Optional

from ..kernel.node import Node
from .protocol import GetRouteInfoRequestHeader, HeartbeatData, MessageConst, ResponseCode

NAMESRV = "namesrv"
HEARTBEAT_BROKER_INTERVAL = 30_000
AUTO_CREATE_TOPIC_KEY_TOPIC = "TBW102"


class ExecutorService:
    """Work handed to a thread pool of the client process, finishing ``takes_ms`` later in simulated time."""

    def __init__(self, node: Node) -> None:
        self.node = node

    def submit(self, task: Callable[[], None], takes_ms: int = 0, name: str = "submitted task") -> None:
        self.node.kernel.narrate(f"{self.node.name}: {name} is handed to a worker thread (done in {takes_ms}ms)")
        self.node.set_timer(takes_ms, name, task)


class MQClientInstance(Node):
    restartable = False

    def __init__(self, kernel, client_id: str, namesrv: str = NAMESRV) -> None:
        super().__init__(kernel, client_id)
        self.client_id = client_id
        self.namesrv = namesrv
        self.topic_route_table: dict = {}
        self.producer_table: dict = {}      # group -> DefaultMQProducerImpl
        self.consumer_groups: set = set()
        self.heartbeats_acked = 0
        self.started = False

    @property
    def crashed(self) -> bool:
        return not self.alive

    @property
    def broker_names(self) -> list[str]:
        names = set()
        for route in self.topic_route_table.values():
            names.update(b for b, _ in route.queue_datas)
        return sorted(names)

    # ---------------------------------------------------------------- routes
    def update_topic_route(self, topic: str, done: Callable[[Optional[object]], None]) -> None:
        def answered(route, err):
            if err is not None or route.code != ResponseCode.SUCCESS:
                done(None)
                return
            self.topic_route_table[topic] = route
            done(route)
        self.send_request(self.namesrv, GetRouteInfoRequestHeader(topic), answered, timeout_ms=3_000)

    # ------------------------------------------------------------ heartbeats
    def start(self) -> None:
        """Learn the brokers (route of TBW102), heartbeat them, then every heartbeatBrokerInterval."""
        if self.started:
            return
        self.started = True

        def routed(route):
            self.send_heartbeat_to_all_brokers()
        self.update_topic_route(AUTO_CREATE_TOPIC_KEY_TOPIC, routed)
        self.set_timer(HEARTBEAT_BROKER_INTERVAL, "sendHeartbeatToAllBroker", self._heartbeat_periodically,
                       background=True)

    def _heartbeat_periodically(self) -> None:
        self.send_heartbeat_to_all_brokers(background=True)
        self.set_timer(HEARTBEAT_BROKER_INTERVAL, "sendHeartbeatToAllBroker", self._heartbeat_periodically,
                       background=True)

    def send_heartbeat_to_all_brokers(self, background: bool = False) -> None:
        hb = HeartbeatData(self.client_id, tuple(sorted(self.producer_table)), tuple(sorted(self.consumer_groups)))

        def acked(resp, err):
            if err is None:
                self.heartbeats_acked += 1
        for b in self.broker_names:
            self.send_request(b, hb, acked, timeout_ms=3_000, background=background)

    # ------------------------------------------------------ broker -> client
    def handle_request(self, msg):
        if msg.api == "CHECK_TRANSACTION_STATE":
            header = msg.payload
            group = header.message_ext.get_property(MessageConst.PROPERTY_PRODUCER_GROUP)
            producer = self.producer_table.get(group)
            if producer is None:
                self.kernel.narrate(f"{self.name}: checkTransactionState, pick producer by group[{group}] failed")
                return None
            producer.check_transaction_state(msg.src, header)
            return None
        self.kernel.narrate(f"{self.name} does not handle {msg.api}")
        return None

    def on_crash(self) -> None:
        for p in self.producer_table.values():
            p.on_process_crash()
