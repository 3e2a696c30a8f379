"""RocketMQ's remoting protocol, the parts transactions use: request codes, response codes,
``MessageSysFlag`` transaction bits, ``MessageConst`` property names, system topics and the
request/response headers (``SendMessageRequestHeaderV2``, ``EndTransactionRequestHeader``,
``CheckTransactionStateRequestHeader``, ``PullMessageRequestHeader``, ...).

Each request is a small frozen dataclass whose ``API`` is RocketMQ's ``RequestCode`` name, so
the trace reads ``SEND_MESSAGE_V2``, ``END_TRANSACTION``, ``CHECK_TRANSACTION_STATE``.  A
RocketMQ header carries strings; here fields keep their Python types.  The body (the message)
travels beside the header fields in the same dataclass.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional


class RequestCode:
    """org.apache.rocketmq.common.protocol.RequestCode (the subset the lab speaks)."""
    SEND_MESSAGE = 10
    PULL_MESSAGE = 11
    GET_MAX_OFFSET = 30
    HEART_BEAT = 34
    UNREGISTER_CLIENT = 35
    END_TRANSACTION = 37
    CHECK_TRANSACTION_STATE = 39
    REGISTER_BROKER = 103
    GET_ROUTEINFO_BY_TOPIC = 105
    SEND_MESSAGE_V2 = 310       # what the producer sends (MQClientAPIImpl: sendSmartMsg, true by default)


class ResponseCode:
    """org.apache.rocketmq.common.protocol.ResponseCode (subset)."""
    SUCCESS = 0
    SYSTEM_ERROR = 1
    SERVICE_NOT_AVAILABLE = 14
    NO_PERMISSION = 16
    TOPIC_NOT_EXIST = 17
    PULL_NOT_FOUND = 19
    PULL_OFFSET_MOVED = 21

    @classmethod
    def name(cls, code: int) -> str:
        for k, v in vars(cls).items():
            if v == code and k.isupper():
                return k
        return str(code)


class MessageSysFlag:
    """The transaction bits of a stored message's sysFlag (bits 2-3)."""
    TRANSACTION_NOT_TYPE = 0
    TRANSACTION_PREPARED_TYPE = 0x1 << 2
    TRANSACTION_COMMIT_TYPE = 0x2 << 2
    TRANSACTION_ROLLBACK_TYPE = 0x3 << 2

    @staticmethod
    def get_transaction_value(flag: int) -> int:
        return flag & MessageSysFlag.TRANSACTION_ROLLBACK_TYPE

    @staticmethod
    def reset_transaction_value(flag: int, type_: int) -> int:
        return (flag & ~MessageSysFlag.TRANSACTION_ROLLBACK_TYPE) | type_

    @staticmethod
    def name(type_: int) -> str:
        return {0: "TRANSACTION_NOT_TYPE", 4: "TRANSACTION_PREPARED_TYPE", 8: "TRANSACTION_COMMIT_TYPE",
                12: "TRANSACTION_ROLLBACK_TYPE"}[type_ & 12]


class MessageConst:
    """Property keys a RocketMQ message carries (org.apache.rocketmq.common.message.MessageConst)."""
    PROPERTY_KEYS = "KEYS"
    PROPERTY_TAGS = "TAGS"
    PROPERTY_TRANSACTION_PREPARED = "TRAN_MSG"
    PROPERTY_PRODUCER_GROUP = "PGROUP"
    PROPERTY_REAL_TOPIC = "REAL_TOPIC"
    PROPERTY_REAL_QUEUE_ID = "REAL_QID"
    PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX = "UNIQ_KEY"
    PROPERTY_TRANSACTION_CHECK_TIMES = "TRANSACTION_CHECK_TIMES"
    PROPERTY_TRANSACTION_PREPARED_QUEUE_OFFSET = "TRAN_PREPARED_QUEUE_OFFSET"


# System topics (MixAll / TopicValidator) and the broker's own consumer group for them.
RMQ_SYS_TRANS_HALF_TOPIC = "RMQ_SYS_TRANS_HALF_TOPIC"
RMQ_SYS_TRANS_OP_HALF_TOPIC = "RMQ_SYS_TRANS_OP_HALF_TOPIC"
TRANS_CHECK_MAX_TIME_TOPIC = "TRANS_CHECK_MAX_TIME_TOPIC"
CID_SYS_RMQ_TRANS = "CID_SYS_RMQ_TRANS"
SYSTEM_TOPICS = frozenset({RMQ_SYS_TRANS_HALF_TOPIC, RMQ_SYS_TRANS_OP_HALF_TOPIC, TRANS_CHECK_MAX_TIME_TOPIC})
REMOVETAG = "d"          # TransactionalMessageUtil.REMOVETAG: the tag of an op message


def commit_or_rollback_name(v: int) -> str:
    return MessageSysFlag.name(v)


# ----------------------------------------------------------------- namesrv
@dataclass(frozen=True)
class RegisterBrokerRequestHeader:
    API = "REGISTER_BROKER"
    broker_name: str
    broker_addr: str
    topic_config_table: tuple      # ((topic, read_queue_nums), ...)

    def describe(self) -> str:
        return f"{self.broker_name} with {len(self.topic_config_table)} topic(s)"


@dataclass(frozen=True)
class GetRouteInfoRequestHeader:
    API = "GET_ROUTEINFO_BY_TOPIC"
    topic: str

    def describe(self) -> str:
        return f"topic {self.topic}"


@dataclass(frozen=True)
class TopicRouteData:
    code: int
    queue_datas: tuple = ()        # ((broker_name, queue_nums), ...)
    broker_datas: tuple = ()       # ((broker_name, broker_addr), ...)
    remark: str = ""

    def describe(self) -> str:
        if self.code != ResponseCode.SUCCESS:
            return f"{ResponseCode.name(self.code)}: {self.remark}"
        return ", ".join(f"{b}: {n} queue(s)" for b, n in self.queue_datas)


# ------------------------------------------------------------------ client
@dataclass(frozen=True)
class HeartbeatData:
    API = "HEART_BEAT"
    client_id: str
    producer_groups: tuple = ()
    consumer_groups: tuple = ()

    def describe(self) -> str:
        g = list(self.producer_groups) + list(self.consumer_groups)
        return f"client {self.client_id}, group(s) {', '.join(g)}"


@dataclass(frozen=True)
class UnregisterClientRequestHeader:
    API = "UNREGISTER_CLIENT"
    client_id: str
    producer_group: Optional[str] = None
    consumer_group: Optional[str] = None

    def describe(self) -> str:
        return f"client {self.client_id}"


@dataclass(frozen=True)
class RemotingResponse:
    """A plain response command: a code and a remark."""
    code: int
    remark: str = ""

    def describe(self) -> str:
        return ResponseCode.name(self.code) + (f": {self.remark}" if self.remark else "")


# ------------------------------------------------------------------- send
@dataclass(frozen=True)
class SendMessageRequestHeaderV2:
    """What RocketMQ's producer sends: MQClientAPIImpl.sendMessage uses SEND_MESSAGE_V2 (the fields of
    SendMessageRequestHeader under one-letter names on the wire) unless the system property
    ``org.apache.rocketmq.client.sendSmartMsg`` is false; the broker's SendMessageProcessor reads it back as the
    plain header."""
    API = "SEND_MESSAGE_V2"
    producer_group: str
    topic: str
    queue_id: int
    sys_flag: int
    born_timestamp: int
    born_host: str
    properties: tuple              # ((key, value), ...) in insertion order
    body: bytes

    def describe(self) -> str:
        props = dict(self.properties)
        prepared = props.get(MessageConst.PROPERTY_TRANSACTION_PREPARED) == "true"
        half = " half message (TRAN_MSG=true)" if prepared else ""
        uniq = props.get(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
        return f"{self.topic} queue {self.queue_id}{half}, UNIQ_KEY {uniq}"


@dataclass(frozen=True)
class SendMessageResponseHeader:
    code: int
    msg_id: str = ""               # offsetMsgId: where the broker stored it
    queue_id: int = -1
    queue_offset: int = -1
    commit_log_offset: int = -1
    transaction_id: Optional[str] = None
    remark: str = ""

    def describe(self) -> str:
        if self.code != ResponseCode.SUCCESS:
            return f"{ResponseCode.name(self.code)}: {self.remark}"
        return f"SEND_OK queue {self.queue_id} offset {self.queue_offset}, commit log {self.commit_log_offset}"


# ------------------------------------------------------------ transactions
@dataclass(frozen=True)
class EndTransactionRequestHeader:
    """The producer's one-way commit/rollback (EndTransactionRequestHeader).  tranStateTableOffset
    is the half message's offset in RMQ_SYS_TRANS_HALF_TOPIC queue 0."""
    API = "END_TRANSACTION"
    producer_group: str
    tran_state_table_offset: int
    commit_log_offset: int
    commit_or_rollback: int        # MessageSysFlag.TRANSACTION_{COMMIT,ROLLBACK,NOT}_TYPE
    from_transaction_check: bool
    msg_id: str
    transaction_id: str
    remark: str = ""

    def describe(self) -> str:
        src = " (answering a check)" if self.from_transaction_check else ""
        return (f"{commit_or_rollback_name(self.commit_or_rollback)} for half offset {self.tran_state_table_offset}, "
                f"transactionId {self.transaction_id}{src}")


@dataclass(frozen=True)
class CheckTransactionStateRequestHeader:
    """The broker's one-way question to a producer of the group: what became of this transaction?"""
    API = "CHECK_TRANSACTION_STATE"
    tran_state_table_offset: int
    commit_log_offset: int
    msg_id: str
    transaction_id: str
    message_ext: object            # the half message (a MessageExt copy)

    def describe(self) -> str:
        times = self.message_ext.get_property(MessageConst.PROPERTY_TRANSACTION_CHECK_TIMES)
        return f"transactionId {self.transaction_id} at half offset {self.tran_state_table_offset}, check #{times}"


# ------------------------------------------------------------------ consume
@dataclass(frozen=True)
class PullMessageRequestHeader:
    API = "PULL_MESSAGE"
    consumer_group: str
    topic: str
    queue_id: int
    queue_offset: int
    max_msg_nums: int = 32

    def describe(self) -> str:
        return f"{self.topic} queue {self.queue_id} from offset {self.queue_offset}"


@dataclass(frozen=True)
class PullMessageResponseHeader:
    code: int                      # SUCCESS (FOUND), PULL_NOT_FOUND (NO_NEW_MSG), ...
    next_begin_offset: int = 0
    min_offset: int = 0
    max_offset: int = 0
    messages: tuple = ()
    remark: str = ""

    def describe(self) -> str:
        if self.code == ResponseCode.SUCCESS:
            return f"FOUND {len(self.messages)} message(s), next offset {self.next_begin_offset}"
        return f"{ResponseCode.name(self.code)} (next offset {self.next_begin_offset})" + (
            f": {self.remark}" if self.remark else "")


@dataclass(frozen=True)
class GetMaxOffsetRequestHeader:
    API = "GET_MAX_OFFSET"
    topic: str
    queue_id: int

    def describe(self) -> str:
        return f"{self.topic} queue {self.queue_id}"


@dataclass(frozen=True)
class GetMaxOffsetResponseHeader:
    code: int
    offset: int = 0

    def describe(self) -> str:
        return f"max offset {self.offset}"


ALL_APIS = frozenset(c.API for c in (RegisterBrokerRequestHeader, GetRouteInfoRequestHeader, HeartbeatData,
                                     UnregisterClientRequestHeader, SendMessageRequestHeaderV2,
                                     EndTransactionRequestHeader, CheckTransactionStateRequestHeader,
                                     PullMessageRequestHeader, GetMaxOffsetRequestHeader))

__all__ = [n for n in list(globals()) if not n.startswith("_") and n not in ("annotations", "dataclass", "Optional")]
