"""``RocketMQCluster``: a name server and broker(s) on one deterministic kernel, with faults and views.

Owns construction (broker.conf keys such as transactionCheckInterval, transactionTimeOut and
transactionCheckMax), topics, the lab's faults (from ``txnlab.kernel.lab.Lab``: crash, pause,
drop/delay/duplicate the next END_TRANSACTION or any other request code, partitions), and the
read-only views that pictures and tests use: ``half_messages()`` (RMQ_SYS_TRANS_HALF_TOPIC with
each offset's fate), ``op_messages()`` (RMQ_SYS_TRANS_OP_HALF_TOPIC), ``transactions()`` (one
row per transaction id) and ``topic_messages(topic)`` (what consumers of a real topic can read).
"""
from __future__ import annotations

import itertools
import weakref
from typing import Optional

from ..kernel.lab import Lab
from .broker import AUTO_CREATE_TOPIC_KEY_TOPIC, BrokerController
from .client import MQClientInstance
from .message import MessageExt, MQClientException
from .namesrv import NamesrvController
from .protocol import (ALL_APIS, CID_SYS_RMQ_TRANS, RMQ_SYS_TRANS_HALF_TOPIC, RMQ_SYS_TRANS_OP_HALF_TOPIC,
                       SYSTEM_TOPICS, TRANS_CHECK_MAX_TIME_TOPIC, MessageConst, MessageSysFlag)

_REGISTRY: "weakref.WeakValueDictionary[str, RocketMQCluster]" = weakref.WeakValueDictionary()
_IDS = itertools.count(1)


class RocketMQCluster(Lab):
    """A simulated RocketMQ deployment: ``namesrv`` plus brokers ``broker-a``, ``broker-b``, ..."""

    APIS = ALL_APIS

    def __init__(self, brokers: int = 1, seed: int = 0, config: Optional[dict] = None,
                 latency_ms: int = 1, jitter_ms: int = 0) -> None:
        super().__init__(seed, latency_ms, jitter_ms)
        if not isinstance(brokers, int) or brokers < 1:
            raise ValueError(f"brokers must be a whole number of at least 1, got {brokers!r}")
        self.id = f"rmq-{next(_IDS)}"
        _REGISTRY[self.id] = self
        self.namesrv_addr = f"namesrv:9876@{self.id}"
        self.namesrv = NamesrvController(self.kernel)
        self.brokers = [BrokerController(self.kernel, f"broker-{chr(ord('a') + i)}", config) for i in range(brokers)]
        self._client_counts: dict[str, int] = {}
        self._instances = 0
        self.kernel.begin_step("admin", "namesrv", f"RocketMQ starts: a name server and {brokers} broker(s) "
                                                   f"(seed {seed})")
        for b in self.brokers:
            b.start()
        self.kernel.run_until_idle()

    @staticmethod
    def lookup(namesrv_addr: Optional[str]) -> "RocketMQCluster":
        if not isinstance(namesrv_addr, str) or "@" not in namesrv_addr:
            raise MQClientException(f"namesrvAddr must be a cluster's namesrv_addr, got {namesrv_addr!r}")
        lab = _REGISTRY.get(namesrv_addr.rsplit("@", 1)[1])
        if lab is None:
            raise MQClientException(f"no name server answers at {namesrv_addr!r}")
        return lab

    @property
    def broker(self) -> BrokerController:
        return self.brokers[0]

    def next_client_name(self, kind: str) -> str:
        n = self._client_counts.get(kind, 0) + 1
        self._client_counts[kind] = n
        return f"{kind}-{n}"

    def next_instance(self) -> int:
        self._instances += 1
        return self._instances

    def new_client_instance(self, name: str) -> MQClientInstance:
        return MQClientInstance(self.kernel, name)

    def create_topic(self, topic: str, queues: int = 4) -> None:
        if not isinstance(queues, int) or queues < 1:
            raise ValueError(f"queues must be at least 1, got {queues!r}")
        self.kernel.begin_step("admin", self.broker.name, f"create topic {topic} with {queues} queue(s)")
        for b in self.brokers:
            b.create_topic(topic, queues)
        self.kernel.run_until_idle()

    # ------------------------------------------------------------------ views
    def topic_messages(self, topic: str, broker: Optional[BrokerController] = None) -> list[MessageExt]:
        """What consumers of ``topic`` can read, queue by queue, oldest first."""
        out = []
        for b in ([broker] if broker else self.brokers):
            n = b.topic_config_table.get(topic, 0)
            for q in range(n):
                out.extend(b.store.queue_messages(topic, q))
        return out

    def op_messages(self, broker: Optional[BrokerController] = None) -> list[dict]:
        b = broker or self.broker
        return [{"offset": m.queue_offset, "tag": m.get_tags(), "half_offset": int(m.body.decode()),
                 "stored_at": m.store_timestamp}
                for m in b.store.queue_messages(RMQ_SYS_TRANS_OP_HALF_TOPIC, 0)]

    def check_offsets(self, broker: Optional[BrokerController] = None) -> dict:
        """How far the check service has read the half queue and the op queue."""
        s = (broker or self.broker).store
        return {"half": s.query_offset(CID_SYS_RMQ_TRANS, RMQ_SYS_TRANS_HALF_TOPIC, 0),
                "op": s.query_offset(CID_SYS_RMQ_TRANS, RMQ_SYS_TRANS_OP_HALF_TOPIC, 0)}

    def half_messages(self, broker: Optional[BrokerController] = None) -> list[dict]:
        """Every offset of RMQ_SYS_TRANS_HALF_TOPIC queue 0 with its fate: pending, committed,
        rolled back, discarded, or copied (the check service put it back at a later offset)."""
        b = broker or self.broker
        store = b.store
        halves = store.queue_messages(RMQ_SYS_TRANS_HALF_TOPIC, 0)
        processed = {op["half_offset"]: op["offset"] for op in self.op_messages(b)}
        committed_from = {m.prepared_transaction_offset for m in store.commit_log
                          if MessageSysFlag.get_transaction_value(m.sys_flag) == MessageSysFlag.TRANSACTION_COMMIT_TYPE}
        discarded = {(m.uniq_key, m.get_property(MessageConst.PROPERTY_TRANSACTION_CHECK_TIMES))
                     for m in store.queue_messages(TRANS_CHECK_MAX_TIME_TOPIC, 0)}
        later_copy = {}
        for m in halves:
            later_copy.setdefault(m.uniq_key, []).append(m.queue_offset)
        rows = []
        for m in halves:
            times = m.get_property(MessageConst.PROPERTY_TRANSACTION_CHECK_TIMES)
            copies = [o for o in later_copy[m.uniq_key] if o > m.queue_offset]
            if m.queue_offset in processed:
                status = "committed" if m.commit_log_offset in committed_from else "rolled back"
            elif (m.uniq_key, times) in discarded and times is not None:
                status = "discarded"
            elif copies:
                status = "copied"
            else:
                status = "pending"
            rows.append({"offset": m.queue_offset, "transaction_id": m.uniq_key,
                         "real_topic": m.get_property(MessageConst.PROPERTY_REAL_TOPIC),
                         "real_queue_id": int(m.get_property(MessageConst.PROPERTY_REAL_QUEUE_ID)),
                         "keys": m.get_keys(), "body": m.body, "check_times": int(times or 0),
                         "born_at": m.born_timestamp, "stored_at": m.store_timestamp, "status": status,
                         "op_offset": processed.get(m.queue_offset), "copied_to": copies[0] if copies else None,
                         "producer_group": m.get_property(MessageConst.PROPERTY_PRODUCER_GROUP)})
        return rows

    def transactions(self, broker: Optional[BrokerController] = None) -> list[dict]:
        """One row per transaction id (UNIQ_KEY): its outcome, how often it was checked, where it went."""
        b = broker or self.broker
        by_id: dict[str, dict] = {}
        for r in self.half_messages(b):
            t = by_id.setdefault(r["transaction_id"], {"transaction_id": r["transaction_id"], "keys": r["keys"],
                                                       "real_topic": r["real_topic"], "half_offsets": [],
                                                       "check_times": 0, "statuses": []})
            t["half_offsets"].append(r["offset"])
            t["check_times"] = max(t["check_times"], r["check_times"])
            t["statuses"].append(r["status"])
        for t in by_id.values():
            st = t.pop("statuses")
            for outcome in ("committed", "rolled back", "discarded", "pending"):
                if outcome in st:
                    t["status"] = outcome
                    break
            t["delivered"] = sum(1 for m in self.topic_messages(t["real_topic"], b)
                                 if m.uniq_key == t["transaction_id"])
        return list(by_id.values())

    def summary(self) -> dict:
        """What the run ended with: what consumers of each real topic can read (keys, queue by queue), and
        each transaction's fate (status, check-backs, deliveries).  For comparing two runs side by side."""
        out: dict = {}
        for topic in self.topics():
            if topic in SYSTEM_TOPICS:
                continue
            out[f"{topic}: what consumers can read"] = [
                f"q{m.queue_id}@{m.queue_offset} {m.get_keys() or m.uniq_key}" for m in self.topic_messages(topic)]
        for t in self.transactions():
            out[f"transaction {t['transaction_id']} ({t['keys']})"] = (
                f"{t['status']}, checked {t['check_times']}x, delivered {t['delivered']}x")
        return out

    def client_nodes(self) -> list[str]:
        return sorted(n for n, node in self.kernel.nodes.items() if isinstance(node, MQClientInstance))

    def topics(self) -> list[str]:
        return sorted(t for t in self.broker.topic_config_table if t != AUTO_CREATE_TOPIC_KEY_TOPIC)
