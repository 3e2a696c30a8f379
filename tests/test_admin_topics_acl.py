"""CreateTopics and DeleteTopics at an in-process broker, with Kafka's ControllerApis rules and words: a duplicated
name is answered once, INVALID_REQUEST "Duplicate topic name."; DeleteTopics allows every topic with DELETE on the
cluster, refuses a topic the principal may not DESCRIBE with TOPIC_AUTHORIZATION_FAILED whether or not it exists,
answers an unknown topic it may DESCRIBE with UNKNOWN_TOPIC_OR_PARTITION, and refuses an existing one it may not
DELETE.  (The wire door's own part, topic ids: tests/test_wire_delete_topics.py.)"""
from __future__ import annotations

from helpers import RawClient
from txnlab import Cluster
from txnlab.protocol import messages as m
from txnlab.protocol.errors import Errors

AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
WHO = "User:ANONYMOUS"          # a raw client has no SASL name


def cluster(authorizer: bool = True):
    c = Cluster(brokers=3, seed=8, config={"authorizer.class.name": AUTHORIZER} if authorizer else {})
    for t in ("kept", "doomed"):
        c.create_topic(t, partitions=1, replication_factor=3)
    return c, RawClient(c, "raw-admin")


def delete(raw, *names):
    resp = raw.call(0, m.DeleteTopicsRequest(tuple(names), 30_000))
    answered = [r.name for r in resp.responses]
    assert len(answered) == len(set(answered))           # one answer per name
    return {r.name: (Errors(r.error_code), r.error_message) for r in resp.responses}


def test_duplicated_names_are_answered_once_in_kafkas_words():
    c, raw = cluster(authorizer=False)
    resp = raw.call(0, m.CreateTopicsRequest((m.CreatableTopic("twice", 1, 3), m.CreatableTopic("twice", 1, 3)),
                                             30_000))
    assert [(r.name, Errors(r.error_code), r.error_message) for r in resp.topics] == \
        [("twice", Errors.INVALID_REQUEST, "Duplicate topic name.")]
    assert delete(raw, "doomed", "doomed") == {"doomed": (Errors.INVALID_REQUEST, "Duplicate topic name.")}
    assert "doomed" in c.topics()


def test_delete_topics_authorization_as_kafka():
    c, raw = cluster()
    c.add_acl(WHO, "TOPIC", "ghost", "DESCRIBE")          # may see that 'ghost' does not exist
    c.add_acl(WHO, "TOPIC", "kept", "DESCRIBE")           # may see 'kept', not delete it
    got = delete(raw, "ghost", "phantom", "kept", "doomed")
    assert got["ghost"][0] == Errors.UNKNOWN_TOPIC_OR_PARTITION
    assert got["phantom"] == (Errors.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed.")   # not revealed
    assert got["kept"] == (Errors.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed.")
    assert got["doomed"] == (Errors.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed.")
    assert {"kept", "doomed"} <= set(c.topics())
    c.add_acl(WHO, "CLUSTER", "kafka-cluster", "DELETE")  # DELETE on the cluster: every topic
    got = delete(raw, "kept", "doomed")
    assert got == {"kept": (Errors.NONE, got["kept"][1]), "doomed": (Errors.NONE, got["doomed"][1])}
    c.run_until_idle()
    assert not {"kept", "doomed"} & set(c.topics())


def test_create_partitions_in_controller_apis_words():
    """ControllerApis.createPartitions: a duplicated name answered once with INVALID_REQUEST "Duplicate topic
    name.", a topic the principal may not ALTER refused with TOPIC_AUTHORIZATION_FAILED and no message, the
    others grown."""
    c, raw = cluster()
    c.add_acl(WHO, "TOPIC", "kept", "ALTER")
    resp = raw.call(0, m.CreatePartitionsRequest((m.CreatePartitionsTopic("kept", 2), m.CreatePartitionsTopic("doomed", 2),
                                                  m.CreatePartitionsTopic("kept", 3))))
    got = {r.name: (Errors(r.error_code), r.error_message) for r in resp.results}
    assert len(resp.results) == 2
    assert got == {"kept": (Errors.INVALID_REQUEST, "Duplicate topic name."),
                   "doomed": (Errors.TOPIC_AUTHORIZATION_FAILED, "")}
    resp = raw.call(0, m.CreatePartitionsRequest((m.CreatePartitionsTopic("kept", 2),)))
    assert [(r.name, Errors(r.error_code)) for r in resp.results] == [("kept", Errors.NONE)]
    c.run_until_idle()
    parts = sorted(tp for tp in c.controller.states if tp[0] in ("kept", "doomed"))
    assert parts == [("doomed", 0), ("kept", 0), ("kept", 1)]
