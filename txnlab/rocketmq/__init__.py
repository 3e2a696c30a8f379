"""RocketMQ-style transactional messages (half messages + check-back), on txnlab's deterministic kernel.

The comparison chapter of the lab: the seed article "RocketMQ与Kafka中如何实现事务" explains Kafka's
transactions by contrast with RocketMQ's.  Names follow RocketMQ (in Python spelling)::

    from txnlab.rocketmq import (RocketMQCluster, TransactionMQProducer, TransactionListener,
                                 LocalTransactionState, Message, DefaultLitePullConsumer)

    lab = RocketMQCluster(seed=7); lab.create_topic("order-topic", queues=4)
    producer = TransactionMQProducer("myGroup", namesrv_addr=lab.namesrv_addr)
    producer.set_transaction_listener(listener); producer.start()
    result = producer.send_message_in_transaction(Message("order-topic", b"..."), arg)
"""
from .broker import BrokerController, ProducerManager
from .client import ExecutorService, MQClientInstance
from .cluster import RocketMQCluster
from .consumer import ConsumeFromWhere, DefaultLitePullConsumer
from .message import (LocalTransactionState, Message, MessageExt, MessageQueue, MQClientException, SendResult,
                      SendStatus, TransactionSendResult)
from .namesrv import NamesrvController
from .producer import DefaultMQProducerImpl, TransactionListener, TransactionMQProducer, TransactionSendOp
from .protocol import (CID_SYS_RMQ_TRANS, RMQ_SYS_TRANS_HALF_TOPIC, RMQ_SYS_TRANS_OP_HALF_TOPIC,
                       TRANS_CHECK_MAX_TIME_TOPIC, EndTransactionRequestHeader, MessageConst, MessageSysFlag,
                       RequestCode, ResponseCode)

__all__ = ["BrokerController", "ProducerManager", "ExecutorService", "MQClientInstance", "RocketMQCluster",
           "ConsumeFromWhere", "DefaultLitePullConsumer", "LocalTransactionState", "Message", "MessageExt",
           "MessageQueue", "MQClientException", "SendResult", "SendStatus", "TransactionSendResult",
           "NamesrvController", "DefaultMQProducerImpl", "TransactionListener", "TransactionMQProducer",
           "TransactionSendOp", "CID_SYS_RMQ_TRANS", "RMQ_SYS_TRANS_HALF_TOPIC", "RMQ_SYS_TRANS_OP_HALF_TOPIC",
           "TRANS_CHECK_MAX_TIME_TOPIC", "EndTransactionRequestHeader", "MessageConst", "MessageSysFlag",
           "RequestCode", "ResponseCode"]
