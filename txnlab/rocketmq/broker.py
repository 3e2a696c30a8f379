"""A RocketMQ broker (``BrokerController``) as a simulated process.

Owns the request processors by RocketMQ request code: SEND_MESSAGE_V2 (``SendMessageProcessor``: a
message with TRAN_MSG=true becomes a half message), END_TRANSACTION (``EndTransactionProcessor``:
commit copies the half message to its real topic and queue, then writes the op message; rollback
writes only the op message), PULL_MESSAGE, GET_MAX_OFFSET, HEART_BEAT / UNREGISTER_CLIENT
(``ProducerManager``: which live clients belong to a producer group, so the check service can call
one back), and the broker's registration with the name server.  The ``DefaultMessageStore`` is the
disk and survives a crash; everything else is rebuilt when the broker restarts.
"""
from __future__ import annotations

from typing import Optional

from ..kernel.node import Node
from .message import MessageExt
from .protocol import (RMQ_SYS_TRANS_HALF_TOPIC, SYSTEM_TOPICS, GetMaxOffsetResponseHeader, MessageConst,
                       MessageSysFlag, PullMessageResponseHeader, RegisterBrokerRequestHeader, RemotingResponse,
                       ResponseCode, SendMessageResponseHeader, commit_or_rollback_name)
from .store import DefaultMessageStore
from .transaction import (DefaultTransactionalMessageCheckListener, TransactionalMessageBridge,
                          TransactionalMessageCheckService, TransactionalMessageServiceImpl)

NAMESRV = "namesrv"
AUTO_CREATE_TOPIC_KEY_TOPIC = "TBW102"     # every broker registers it; producers learn brokers from it

BROKER_DEFAULTS = {
    "transactionCheckInterval": 60_000,    # RocketMQ 4.x default (5.x: 30 s)
    "transactionTimeOut": 6_000,
    "transactionCheckMax": 15,
    "rejectTransactionMessage": False,
    "registerNameServerPeriod": 30_000,
    "channelExpiredTimeout": 120_000,      # ProducerManager drops a client silent this long
    "defaultTopicQueueNums": 4,
}


class ProducerManager:
    """Producer group -> live client ids (channels), from HEART_BEAT; dropped when the connection breaks."""

    def __init__(self) -> None:
        self.groups: dict[str, dict[str, int]] = {}
        self._counter = 0

    def register(self, group: str, client_id: str, now: int) -> bool:
        g = self.groups.setdefault(group, {})
        new = client_id not in g
        g[client_id] = now
        return new

    def unregister(self, group: str, client_id: str) -> None:
        self.groups.get(group, {}).pop(client_id, None)

    def do_channel_close_event(self, client_id: str) -> list[str]:
        gone = []
        for group, clients in self.groups.items():
            if clients.pop(client_id, None) is not None:
                gone.append(group)
        return gone

    def scan_not_active_channel(self, now: int, expired_ms: int) -> list[tuple]:
        out = []
        for group, clients in self.groups.items():
            for cid, last in list(clients.items()):
                if now - last > expired_ms:
                    del clients[cid]
                    out.append((group, cid))
        return out

    def get_available_channel(self, group: str) -> Optional[str]:
        clients = sorted(self.groups.get(group, {}))
        if not clients:
            return None
        self._counter += 1
        return clients[self._counter % len(clients)]


class BrokerController(Node):
    restartable = True

    def __init__(self, kernel, broker_name: str, config: dict) -> None:
        super().__init__(kernel, broker_name)
        self.broker_name = broker_name
        self.config = {**BROKER_DEFAULTS, **(config or {})}
        self.store = DefaultMessageStore(broker_name)                  # the disk
        self.topic_config_table: dict[str, int] = {AUTO_CREATE_TOPIC_KEY_TOPIC: self.config["defaultTopicQueueNums"]}
        self._init_memory()

    def _init_memory(self) -> None:
        self.producer_manager = ProducerManager()
        bridge = TransactionalMessageBridge(self)
        self.transactional_message_service = TransactionalMessageServiceImpl(bridge)
        self.check_listener = DefaultTransactionalMessageCheckListener(self)
        self.check_service = TransactionalMessageCheckService(self)

    def narrate(self, text: str) -> None:
        self.kernel.narrate(text)

    # ------------------------------------------------------------ lifecycle
    def start(self) -> None:
        self.register_broker_all()
        self.set_timer(self.config["registerNameServerPeriod"], "registerBrokerAll", self._register_periodically,
                       background=True)
        self.check_service.start()
        self.set_timer(10_000, "ClientHousekeepingService", self._scan_channels, background=True)

    def register_broker_all(self, background: bool = False) -> None:
        topics = tuple(sorted((t, n) for t, n in self.topic_config_table.items() if t not in SYSTEM_TOPICS))
        self.send_request(NAMESRV, RegisterBrokerRequestHeader(self.broker_name, f"{self.broker_name}:10911", topics),
                          lambda resp, err: None, timeout_ms=3_000, background=background)

    def _register_periodically(self) -> None:
        self.register_broker_all(background=True)
        self.set_timer(self.config["registerNameServerPeriod"], "registerBrokerAll", self._register_periodically,
                       background=True)

    def _scan_channels(self) -> None:
        for group, cid in self.producer_manager.scan_not_active_channel(self.kernel.now,
                                                                         self.config["channelExpiredTimeout"]):
            self.narrate(f"{cid} of producer group {group!r} sent no heartbeat for "
                         f"{self.config['channelExpiredTimeout']}ms: its channel is closed")
        self.set_timer(10_000, "ClientHousekeepingService", self._scan_channels, background=True)

    def on_crash(self) -> None:
        self._init_memory()

    def on_restart(self) -> None:
        self.narrate(f"{self.broker_name} restarted: the commit log, consume queues and the check service's "
                     f"offsets are read back from disk")
        self.start()

    def disconnected(self, peer: str) -> None:
        super().disconnected(peer)
        for group in self.producer_manager.do_channel_close_event(peer):
            self.narrate(f"{self.broker_name}: the connection to {peer} closed; it no longer counts as a "
                         f"producer of group {group!r}")

    def create_topic(self, topic: str, queues: int) -> None:
        self.topic_config_table[topic] = queues
        self.register_broker_all()

    # -------------------------------------------------------------- dispatch
    def handle_request(self, msg):
        handler = getattr(self, "handle_" + msg.api, None)
        if handler is None:
            self.narrate(f"{self.broker_name} does not support {msg.api} (REQUEST_CODE_NOT_SUPPORTED)")
            return RemotingResponse(3, f"request code {msg.api} not supported")
        return handler(msg.payload)

    # ----------------------------------------------------- client management
    def handle_HEART_BEAT(self, hb):
        for g in hb.producer_groups:
            if self.producer_manager.register(g, hb.client_id, self.kernel.now):
                self.narrate(f"{hb.client_id} is now a producer of group {g!r} here: the check service can call "
                             f"it back")
        return RemotingResponse(ResponseCode.SUCCESS)

    def handle_UNREGISTER_CLIENT(self, req):
        if req.producer_group:
            self.producer_manager.unregister(req.producer_group, req.client_id)
            self.narrate(f"{req.client_id} left producer group {req.producer_group!r}")
        return RemotingResponse(ResponseCode.SUCCESS)

    # ------------------------------------------------------------------ send
    def handle_SEND_MESSAGE_V2(self, req):
        R = SendMessageResponseHeader
        if req.topic in SYSTEM_TOPICS:
            self.narrate(f"{req.topic} is a system topic: clients may not send to it -> NO_PERMISSION")
            return R(ResponseCode.NO_PERMISSION, remark=f"sending message to topic[{req.topic}] is forbidden")
        queues = self.topic_config_table.get(req.topic)
        if queues is None:
            self.narrate(f"topic {req.topic} does not exist on {self.broker_name} -> TOPIC_NOT_EXIST")
            return R(ResponseCode.TOPIC_NOT_EXIST, remark=f"topic[{req.topic}] not exist")
        if not 0 <= req.queue_id < queues:
            return R(ResponseCode.SYSTEM_ERROR, remark=f"queueId[{req.queue_id}] is illegal")
        inner = MessageExt(req.topic, req.body, dict(req.properties), req.queue_id, req.sys_flag,
                           req.born_timestamp, req.born_host)
        uniq = inner.uniq_key
        if inner.get_property(MessageConst.PROPERTY_TRANSACTION_PREPARED) == "true":
            if self.config["rejectTransactionMessage"]:
                self.narrate("this broker rejects transactional messages -> NO_PERMISSION")
                return R(ResponseCode.NO_PERMISSION, remark="the broker rejects transaction messages")
            r = self.transactional_message_service.prepare_message(inner)
            self.narrate(f"TRAN_MSG=true: a half message. It is stored in {RMQ_SYS_TRANS_HALF_TOPIC} queue 0 at "
                         f"offset {r.queue_offset}, with REAL_TOPIC={req.topic} and REAL_QID={req.queue_id} kept in "
                         f"its properties; consumers of {req.topic} cannot see it")
        else:
            r = self.store.put_message(inner, self.kernel.now)
            self.narrate(f"stored in {req.topic} queue {req.queue_id} at offset {r.queue_offset}: consumers can "
                         f"read it now")
        return R(ResponseCode.SUCCESS, r.msg_id, req.queue_id, r.queue_offset, r.commit_log_offset, uniq)

    # ------------------------------------------------------ end transaction
    def handle_END_TRANSACTION(self, h):
        """EndTransactionProcessor.  One-way: the producer never hears how it went."""
        what = commit_or_rollback_name(h.commit_or_rollback)
        if h.commit_or_rollback == MessageSysFlag.TRANSACTION_NOT_TYPE:
            why = "the check found it still pending" if h.from_transaction_check else "the local transaction is pending"
            self.narrate(f"TRANSACTION_NOT_TYPE ({why}): nothing to do; the check service will ask again")
            return None
        svc = self.transactional_message_service
        commit = h.commit_or_rollback == MessageSysFlag.TRANSACTION_COMMIT_TYPE
        if not commit and h.commit_or_rollback != MessageSysFlag.TRANSACTION_ROLLBACK_TYPE:
            return None
        result = svc.commit_message(h) if commit else svc.rollback_message(h)
        if result.response_code != ResponseCode.SUCCESS:
            self.narrate(f"{what}: {result.response_remark}")
            return None
        half = result.prepare_message
        bad = self._check_prepare_message(half, h)
        if bad:
            self.narrate(f"{what} refused: {bad}")
            return None
        if commit:
            final = self._end_message_transaction(half)
            final.sys_flag = MessageSysFlag.reset_transaction_value(final.sys_flag, h.commit_or_rollback)
            final.prepared_transaction_offset = h.commit_log_offset
            r = self.store.put_message(final, self.kernel.now)
            self.narrate(f"COMMIT: the half message at offset {half.queue_offset} is copied to its real topic "
                         f"{final.topic} queue {final.queue_id} (offset {r.queue_offset}); consumers see it now")
            if r.ok:
                svc.delete_prepare_message(half)
        else:
            self.narrate(f"ROLLBACK: the half message at offset {half.queue_offset} is only marked processed; "
                         f"nothing is copied, so no consumer will ever see it")
            svc.delete_prepare_message(half)
        return None

    @staticmethod
    def _check_prepare_message(half: MessageExt, h) -> str:
        if half.get_property(MessageConst.PROPERTY_PRODUCER_GROUP) != h.producer_group:
            return "The producer group wrong"
        if half.queue_offset != h.tran_state_table_offset:
            return "The transaction state table offset wrong"
        if half.commit_log_offset != h.commit_log_offset:
            return "The commit log offset wrong"
        return ""

    @staticmethod
    def _end_message_transaction(half: MessageExt) -> MessageExt:
        props = dict(half.properties)
        topic = props.pop(MessageConst.PROPERTY_REAL_TOPIC)
        qid = int(props.pop(MessageConst.PROPERTY_REAL_QUEUE_ID))
        m = MessageExt(topic, half.body, props, qid, half.sys_flag, half.born_timestamp, half.born_host)
        m.transaction_id = half.uniq_key
        return m

    # ------------------------------------------------------------------ pull
    def handle_PULL_MESSAGE(self, req):
        R = PullMessageResponseHeader
        if req.topic in SYSTEM_TOPICS:
            self.narrate(f"{req.topic} is a system topic: only the broker's own services read it -> NO_PERMISSION")
            return R(ResponseCode.NO_PERMISSION, req.queue_offset, remark=f"{req.topic} is a system topic")
        if req.topic not in self.topic_config_table:
            return R(ResponseCode.TOPIC_NOT_EXIST, req.queue_offset, remark=f"topic[{req.topic}] not exist")
        mx = self.store.max_offset_in_queue(req.topic, req.queue_id)
        msgs = self.store.get_message(req.topic, req.queue_id, req.queue_offset, req.max_msg_nums)
        if not msgs:
            return R(ResponseCode.PULL_NOT_FOUND, req.queue_offset, 0, mx)
        return R(ResponseCode.SUCCESS, req.queue_offset + len(msgs), 0, mx, tuple(msgs))

    def handle_GET_MAX_OFFSET(self, req):
        return GetMaxOffsetResponseHeader(ResponseCode.SUCCESS, self.store.max_offset_in_queue(req.topic, req.queue_id))
