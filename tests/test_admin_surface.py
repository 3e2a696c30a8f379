"""``txnlab.admin`` has confluent_kafka.admin's shape: the same AdminClient methods (or a stated reason why one is
left out), futures that drive the simulation, and each call a protocol request."""
from __future__ import annotations

import inspect
from concurrent.futures import Future

import confluent_kafka
import confluent_kafka.admin as ck_admin
import pytest

import txnlab
import txnlab.admin as lab_admin
from txnlab import Cluster, ConsumerGroupTopicPartitions, Consumer, Producer, TopicCollection, TopicPartition
from txnlab.admin import AdminClient, ConsumerGroupState, NewPartitions, NewTopic, OffsetSpec

# confluent_kafka.admin.AdminClient methods the lab leaves out, and why
LEFT_OUT = {
    "create_acls": "ACLs are the operator's (Cluster.add_acl); CreateAcls/DescribeAcls/DeleteAcls are not modelled",
    "describe_acls": "as create_acls",
    "delete_acls": "as create_acls",
    "alter_user_scram_credentials": "the lab has no SASL/SCRAM authentication (principals come from sasl.username)",
    "describe_user_scram_credentials": "as alter_user_scram_credentials",
    "set_sasl_credentials": "the principal is fixed when the client attaches (no re-authentication)",
    "elect_leaders": "ElectLeaders (43) is not modelled; the operator moves leaders with Cluster.move_leader",
    "delete_records": "the log cannot move its log start offset on request and followers learn no log start "
                      "offset from Fetch (Kafka's DelayedDeleteRecords waits for every replica's low watermark)",
    "list_groups": "deprecated in confluent-kafka for list_consumer_groups / describe_consumer_groups",
    "cluster_id": "librdkafka answers it from Metadata's cluster id, which the lab's Metadata lacks; "
                  "describe_cluster().result().cluster_id has it",
}
# the lab's extensions: Kafka's Java Admin transaction tools (KIP-664) and kafka-transactions.sh find-hanging
EXTRA = {"list_transactions", "describe_transactions", "describe_producers", "abort_transaction",
         "find_hanging_transactions"}


def public(cls) -> set:
    return {n for n in dir(cls) if not n.startswith("_") and callable(getattr(cls, n))}


def test_the_admin_client_has_confluent_kafkas_methods_or_a_reason():
    theirs, ours = public(ck_admin.AdminClient), public(AdminClient)
    assert theirs - ours == set(LEFT_OUT)
    assert ours - theirs == EXTRA


def test_the_admin_module_has_confluent_kafkas_names_it_can_back():
    missing = {n for n in dir(ck_admin) if not n.startswith("_") and n[0].isupper()} - set(dir(lab_admin))
    assert missing <= {"AclBinding", "AclBindingFilter", "AclOperation", "AclPermissionType", "ResourcePatternType",
                       "ScramCredentialInfo", "ScramMechanism", "UserScramCredentialAlteration",
                       "UserScramCredentialDeletion", "UserScramCredentialUpsertion",
                       "UserScramCredentialsDescription", "DeletedRecords", "GroupMetadata", "GroupMember",
                       "Any", "Dict", "List", "Optional", "Set", "Tuple", "Union"}
    for n in ("RESOURCE_TOPIC", "RESOURCE_BROKER", "CONFIG_SOURCE_DEFAULT_CONFIG", "CONFIG_SOURCE_GROUP_CONFIG"):
        assert getattr(lab_admin, n) == getattr(ck_admin, n)


def test_the_top_level_exports_only_confluent_kafkas_top_level_names():
    ours = {n for n in txnlab.__all__ if n[0].isupper() or n.startswith("OFFSET") or n.startswith("TIMESTAMP")}
    lab_only = {"Cluster", "Errors", "MUTATIONS", "KafkaStateError", "ConfigException", "ConsumerGroupMetadata"}
    assert ours - lab_only <= set(dir(confluent_kafka))
    assert "AdminClient" not in txnlab.__all__ and "NewTopic" not in txnlab.__all__


def test_a_future_drives_the_simulation_until_the_response_arrives():
    c = Cluster(brokers=3, seed=2)
    admin = AdminClient({"bootstrap.servers": c.bootstrap})
    futures = admin.create_topics([NewTopic("orders", 2, 3)])
    f = futures["orders"]
    assert isinstance(f, Future) and not f.done()            # sent, not answered: nothing ran the kernel
    assert f.result() is None and c.topics() == ["orders"]
    grown = admin.create_partitions([NewPartitions("orders", 4)])["orders"]
    assert grown.result() is None
    desc = admin.describe_topics(TopicCollection(["orders"]))["orders"].result()
    assert [p.id for p in desc.partitions] == [0, 1, 2, 3] and len(desc.partitions[3].replicas) == 3
    sent = {msg.api for msg in c.network_messages() if msg.src == admin.name}
    assert {"CreateTopics", "CreatePartitions", "Metadata"} <= sent


def test_consumer_group_admin_lists_describes_resets_and_deletes_a_group():
    c = Cluster(brokers=3, seed=5)
    c.create_topic("in", partitions=2, replication_factor=3)
    p = Producer({"bootstrap.servers": c.bootstrap})
    for i in range(4):
        p.produce("in", value=str(i).encode(), partition=i % 2)
    p.flush(10)
    consumer = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "readers", "auto.offset.reset": "earliest",
                         "enable.auto.commit": False})
    consumer.subscribe(["in"])
    seen = 0
    for _ in range(30):
        msg = consumer.poll(1.0)
        seen += msg is not None
        if seen == 4:
            break
    consumer.commit(asynchronous=False)
    admin = AdminClient({"bootstrap.servers": c.bootstrap})
    listing = admin.list_consumer_groups().result()
    assert [(g.group_id, g.state) for g in listing.valid] == [("readers", ConsumerGroupState.STABLE)]
    desc = admin.describe_consumer_groups(["readers"])["readers"].result()
    assert desc.partition_assignor and len(desc.members) == 1
    assert sorted((tp.topic, tp.partition) for tp in desc.members[0].assignment.topic_partitions) == \
        [("in", 0), ("in", 1)]
    offsets = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions("readers")])["readers"].result()
    assert sorted((tp.partition, tp.offset) for tp in offsets.topic_partitions) == [(0, 2), (1, 2)]
    # a group with a member refuses a reset and its deletion
    reset = [ConsumerGroupTopicPartitions("readers", [TopicPartition("in", 0, 0)])]
    refused = admin.alter_consumer_group_offsets(reset)["readers"].result()
    assert refused.topic_partitions[0].error.name() == "UNKNOWN_MEMBER_ID"
    gone = admin.delete_consumer_groups(["readers"])["readers"].exception()
    assert (gone.args[0].name(), gone.args[0].code()) == ("NON_EMPTY_GROUP", 68)
    consumer.close()
    assert admin.alter_consumer_group_offsets(reset)["readers"].result().topic_partitions[0].error is None
    assert admin.delete_consumer_groups(["readers"])["readers"].result() is None
    assert admin.list_consumer_groups().result().valid == []
    again = admin.delete_consumer_groups(["readers"])["readers"].exception()
    assert again.args[0].name() == "GROUP_ID_NOT_FOUND"


def test_list_offsets_and_describe_cluster():
    c = Cluster(brokers=2, seed=4)
    c.create_topic("t", partitions=1, replication_factor=2)
    p = Producer({"bootstrap.servers": c.bootstrap})
    for i in range(3):
        p.produce("t", value=b"v", partition=0)
    p.flush(10)
    admin = AdminClient({"bootstrap.servers": c.bootstrap})
    tp = TopicPartition("t", 0)
    assert admin.list_offsets({tp: OffsetSpec.latest()})[tp].result().offset == 3
    assert admin.list_offsets({tp: OffsetSpec.earliest()})[tp].result().offset == 0
    cluster = admin.describe_cluster().result()
    assert sorted(n.id for n in cluster.nodes) == [0, 1] and cluster.cluster_id == c.cluster_id


def test_result_with_a_timeout_raises_when_the_simulation_has_not_answered():
    c = Cluster(brokers=1, seed=1)
    admin = AdminClient({"bootstrap.servers": c.bootstrap})
    f = admin.describe_cluster()
    with pytest.raises(TimeoutError):
        f.result(timeout=0.001)
    assert inspect.signature(f.result).parameters["timeout"].default is None
