"""Requests and responses, named after Kafka's APIs, with Kafka's field names.

The only thing clients and brokers share.  Each message is a small
dataclass (slots, never changed once sent) with ``API`` (Kafka's request name) and ``API_KEY`` (its number).
Partitions are keyed by ``(topic, partition)`` tuples.  ``describe()`` gives
the short text the trace shows.  One module per family of APIs; this package
is the one name to import them by (``from txnlab.protocol import messages as m``).
"""
from ..message_base import CONSUMER_REPLICA_ID, READ_COMMITTED, READ_UNCOMMITTED, TP, committed_str, tp_str, tps_str  # noqa: F401
from .data import (  # noqa: F401
    PartitionMetadata, MetadataRequest, MetadataResponse, ProduceRequest, PartitionProduceResponse,
    ProduceResponse, FetchPartition, FetchRequest, FetchPartitionData, FetchResponse, ListOffsetsRequest,
    ListOffsetsResponse, FindCoordinatorRequest, FindCoordinatorResponse, InitProducerIdRequest,
    InitProducerIdResponse, ApiVersionsRequest, ApiVersionsResponse, COORDINATOR_GROUP,
    COORDINATOR_TRANSACTION, LATEST_TIERED, NO_TIMESTAMP, asked_time, lab_time, unix_time, OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse)
from .group import (  # noqa: F401
    COOPERATIVE_PROTOCOLS, JoinGroupRequest, JoinGroupResponse, SyncGroupRequest, SyncGroupResponse, HeartbeatRequest,
    HeartbeatResponse, LeaveGroupRequest, LeaveGroupResponse, OffsetCommitRequest, OffsetCommitResponse,
    OffsetFetchRequest, OffsetFetchResponse)
from .txn import (  # noqa: F401
    AddPartitionsToTxnRequest, AddPartitionsToTxnResponse, AddPartitionsToTxnTransaction, AddOffsetsToTxnRequest,
    AddOffsetsToTxnResponse,
    EndTxnRequest, EndTxnResponse, TxnMarkerEntry, WriteTxnMarkersRequest, WriteTxnMarkersResponse,
    TxnOffsetCommitRequest, TxnOffsetCommitResponse, DescribeProducersRequest, DescribeProducersResponse,
    DescribeTransactionsRequest, DescribeTransactionsResponse, ListTransactionsRequest,
    ListTransactionsResponse)
from .control import (  # noqa: F401
    BrokerHeartbeatRequest, BrokerHeartbeatResponse, BrokerRegistrationRequest, BrokerRegistrationResponse,
    PartitionState, LeaderAndIsrRequest, LeaderAndIsrResponse, BrokerState, AlterPartitionRequest, AlterPartitionResponse,
    StopReplicaRequest, StopReplicaResponse, topic_id_for,
    AllocateProducerIdsRequest, AllocateProducerIdsResponse)
from .admin import (  # noqa: F401
    CreatableTopic, CreateTopicsRequest, CreatableTopicResult, CreateTopicsResponse, DeleteTopicsRequest,
    DeletableTopicResult, DeleteTopicsResponse, DescribeConfigsResource, DescribeConfigsRequest,
    DescribeConfigsResourceResult, DescribeConfigsResult, DescribeConfigsResponse, RESOURCE_BROKER, RESOURCE_TOPIC,
    SOURCE_DEFAULT_CONFIG, SOURCE_DYNAMIC_TOPIC_CONFIG, SOURCE_STATIC_BROKER_CONFIG, CreatePartitionsTopic,
    CreatePartitionsRequest, CreatePartitionsTopicResult, CreatePartitionsResponse, AlterableConfig,
    AlterConfigsResource, AlterConfigsRequest, IncrementalAlterConfigsRequest, AlterConfigsResourceResponse,
    AlterConfigsResponse, OP_SET, OP_DELETE, OP_APPEND, OP_SUBTRACT)
from .admin_groups import (  # noqa: F401
    ListGroupsRequest, ListedGroup, ListGroupsResponse, DescribeGroupsRequest, DescribedGroupMember,
    DescribedGroup, DescribeGroupsResponse, DeleteGroupsRequest, DeletableGroupResult, DeleteGroupsResponse,
    DescribeClusterRequest, DescribeClusterResponse)
