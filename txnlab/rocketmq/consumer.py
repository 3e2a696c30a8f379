"""RocketMQ's ``DefaultLitePullConsumer``: a consumer of a real topic that polls.

Owns subscribe / start / poll over PULL_MESSAGE requests to each queue of the topic.  It reads the
consume queues of the real topic only, so it sees a transactional message once it was committed
(copied there by END_TRANSACTION or by a check-back) and never a half message.  One consumer gets
every queue (no rebalancing among several members); offsets are kept in the consumer.
"""
from __future__ import annotations

from enum import Enum
from typing import Optional

from .message import MessageExt, MQClientException
from .protocol import (SYSTEM_TOPICS, GetMaxOffsetRequestHeader, MessageConst, PullMessageRequestHeader,
                       ResponseCode)

PULL_INTERVAL_WHEN_EMPTY = 1_000


class ConsumeFromWhere(Enum):
    CONSUME_FROM_LAST_OFFSET = "CONSUME_FROM_LAST_OFFSET"
    CONSUME_FROM_FIRST_OFFSET = "CONSUME_FROM_FIRST_OFFSET"


class DefaultLitePullConsumer:
    def __init__(self, consumer_group: str, namesrv_addr: Optional[str] = None) -> None:
        self.consumer_group = consumer_group
        self.namesrv_addr = namesrv_addr
        self.consume_from_where = ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET
        self.subscriptions: dict[str, str] = {}
        self.offsets: dict[tuple, int] = {}          # (topic, broker, queue id) -> next offset
        self.lab = None
        self.node = None

    def set_namesrv_addr(self, addr: str) -> None:
        self.namesrv_addr = addr

    def set_consume_from_where(self, where: ConsumeFromWhere) -> None:
        self.consume_from_where = where

    def subscribe(self, topic: str, sub_expression: str = "*") -> None:
        if topic in SYSTEM_TOPICS:
            raise MQClientException(f"{topic} is a system topic: its messages belong to the broker, not to consumers")
        self.subscriptions[topic] = sub_expression

    # ----------------------------------------------------------------- start
    def start(self) -> None:
        from .cluster import RocketMQCluster
        lab = self.lab = RocketMQCluster.lookup(self.namesrv_addr)
        client = self.node = lab.new_client_instance(lab.next_client_name("consumer"))
        client.consumer_groups.add(self.consumer_group)
        lab.note(client.name, f"{client.name} starts DefaultLitePullConsumer of group {self.consumer_group!r} "
                              f"on {sorted(self.subscriptions)}")
        for topic in self.subscriptions:
            got = []
            client.update_topic_route(topic, got.append)
            lab.kernel.run_until(lambda: bool(got) or client.crashed, 10_000)
            if not got or got[0] is None:
                raise MQClientException(f"No route info of this topic: {topic}")
            for broker, n in got[0].queue_datas:
                for q in range(n):
                    self.offsets[(topic, broker, q)] = self._initial_offset(topic, broker, q)

    def _initial_offset(self, topic: str, broker: str, q: int) -> int:
        if self.consume_from_where == ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET:
            return 0
        got = []
        self.node.send_request(broker, GetMaxOffsetRequestHeader(topic, q), lambda r, e: got.append(r),
                               timeout_ms=3_000)
        self.lab.kernel.run_until(lambda: bool(got), 10_000)
        return got[0].offset if got and got[0] is not None else 0

    # ------------------------------------------------------------------ poll
    def poll(self, timeout: int = 5_000) -> list[MessageExt]:
        """Messages from the subscribed topics; waits up to ``timeout`` simulated ms for some."""
        if self.node is None:
            raise MQClientException("The consumer not started")
        if self.node.crashed:
            raise MQClientException(f"{self.node.name}'s process has crashed")
        kernel = self.lab.kernel
        deadline = kernel.now + int(timeout)
        while True:
            found = self._pull_once()
            if found or kernel.now >= deadline:
                return found
            kernel.run_until(lambda: False, timeout_ms=min(PULL_INTERVAL_WHEN_EMPTY, deadline - kernel.now))

    def _pull_once(self) -> list[MessageExt]:
        answers: dict = {}
        for key, offset in sorted(self.offsets.items()):
            topic, broker, q = key
            req = PullMessageRequestHeader(self.consumer_group, topic, q, offset)
            self.node.send_request(broker, req, lambda r, e, key=key: answers.__setitem__(key, r), timeout_ms=3_000)
        n = len(self.offsets)
        self.lab.kernel.run_until(lambda: len(answers) == n or self.node.crashed, 10_000)
        out: list[MessageExt] = []
        for key in sorted(answers):
            r = answers[key]
            if r is None:
                continue
            if r.code == ResponseCode.SUCCESS:
                self.offsets[key] = r.next_begin_offset
                out.extend(m for m in r.messages if self._matches(key[0], m))
            elif r.code == ResponseCode.NO_PERMISSION:
                raise MQClientException(r.remark, r.code)
        return out

    def _matches(self, topic: str, m: MessageExt) -> bool:
        expr = self.subscriptions.get(topic, "*")
        if expr in ("*", ""):
            return True
        return (m.get_property(MessageConst.PROPERTY_TAGS) or "") in {t.strip() for t in expr.split("||")}

    def shutdown(self) -> None:
        pass
