"""RocketMQ's name server (``NamesrvController``): the route table clients ask before they send.

Owns REGISTER_BROKER (a broker announces itself and its topics) and GET_ROUTEINFO_BY_TOPIC (which
broker holds how many queues of a topic).  It keeps no messages; a crash only loses the table,
which brokers fill again on their next registration.
"""
from __future__ import annotations

from ..kernel.node import Node
from .protocol import RemotingResponse, ResponseCode, TopicRouteData


class NamesrvController(Node):
    restartable = True

    def __init__(self, kernel, name: str = "namesrv") -> None:
        super().__init__(kernel, name)
        self.topic_queue_table: dict[str, dict[str, int]] = {}    # topic -> broker name -> queue count
        self.broker_addr_table: dict[str, str] = {}

    def on_crash(self) -> None:
        self.topic_queue_table = {}
        self.broker_addr_table = {}

    def handle_request(self, msg):
        if msg.api == "REGISTER_BROKER":
            req = msg.payload
            self.broker_addr_table[req.broker_name] = req.broker_addr
            for topic, n in req.topic_config_table:
                self.topic_queue_table.setdefault(topic, {})[req.broker_name] = n
            return RemotingResponse(ResponseCode.SUCCESS)
        if msg.api == "GET_ROUTEINFO_BY_TOPIC":
            topic = msg.payload.topic
            brokers = self.topic_queue_table.get(topic)
            if not brokers:
                self.kernel.narrate(f"the name server knows no route for topic {topic}")
                return TopicRouteData(ResponseCode.TOPIC_NOT_EXIST,
                                      remark=f"No topic route info in name server for the topic: {topic}")
            return TopicRouteData(ResponseCode.SUCCESS, tuple(sorted(brokers.items())),
                                  tuple((b, self.broker_addr_table.get(b, b)) for b in sorted(brokers)))
        return RemotingResponse(3, f"request code {msg.api} not supported")
