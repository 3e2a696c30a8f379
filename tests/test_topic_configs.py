"""Topic configs Kafka honours are honoured by the lab, or refused clearly at creation (INVALID_CONFIG)."""
from __future__ import annotations

from txnlab import Cluster, Producer
from txnlab.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic, ResourceType)


def admin_of(c: Cluster) -> AdminClient:
    return AdminClient({"bootstrap.servers": c.bootstrap})


def error_of(future) -> tuple:
    e = future.exception()
    return (e.args[0].name(), e.args[0].code()) if e is not None else None


def send(c: Cluster, topic: str, value: bytes) -> list:
    p = Producer({"bootstrap.servers": c.bootstrap})
    reports = []
    p.produce(topic, value=value, partition=0, on_delivery=lambda err, msg: reports.append(err))
    p.flush(10)
    return reports


def test_a_record_larger_than_max_message_bytes_is_refused_and_nothing_is_committed():
    c = Cluster(brokers=3, seed=7)
    admin = admin_of(c)
    admin.create_topics([NewTopic("tiny", 1, 3, config={"max.message.bytes": "100"})])["tiny"].result()
    [err] = send(c, "tiny", b"x" * 500)
    assert (err.name(), err.code()) == ("MSG_SIZE_TOO_LARGE", 10)        # Kafka's MESSAGE_TOO_LARGE
    assert "max.message.bytes=100" in err.str()
    assert c.log("tiny", 0).log_end_offset == 0 and c.log("tiny", 0).high_watermark == 0


def test_raising_max_message_bytes_takes_effect_on_the_next_produce():
    c = Cluster(brokers=3, seed=7)
    admin = admin_of(c)
    admin.create_topics([NewTopic("tiny", 1, 3, config={"max.message.bytes": "100"})])["tiny"].result()
    res = ConfigResource(ResourceType.TOPIC, "tiny")
    res.add_incremental_config(ConfigEntry("max.message.bytes", "2000", incremental_operation=AlterConfigOpType.SET))
    assert admin.incremental_alter_configs([res])[res].result() is None
    assert send(c, "tiny", b"x" * 500) == [None]
    assert c.log("tiny", 0).log_end_offset == 1
    assert admin.describe_configs([res])[res].result()["max.message.bytes"].value == "2000"


def test_unknown_and_unhonourable_topic_configs_are_refused_with_invalid_config():
    c = Cluster(brokers=1, seed=3)
    got = admin_of(c).create_topics([NewTopic("typo", 1, 1, config={"max.mesage.bytes": "100"}),
                                     NewTopic("compacted", 1, 1, config={"cleanup.policy": "compact"}),
                                     NewTopic("short-lived", 1, 1, config={"retention.ms": "1000"}),
                                     NewTopic("negative", 1, 1, config={"max.message.bytes": "-5"}),
                                     NewTopic("forever", 1, 1, config={"retention.ms": "-1"})])
    for name in ("typo", "compacted", "short-lived", "negative"):
        assert error_of(got[name]) == ("INVALID_CONFIG", 40), name
    assert "Unknown topic config name: max.mesage.bytes" in got["typo"].exception().args[0].str()
    assert "cleanup.policy" in got["compacted"].exception().args[0].str()
    assert got["forever"].result() is None
    assert c.topics() == ["forever"]


def test_altering_to_an_unknown_key_is_refused_and_changes_nothing():
    c = Cluster(brokers=1, seed=3)
    admin = admin_of(c)
    admin.create_topics([NewTopic("t", 1, 1)])["t"].result()
    res = ConfigResource("topic", "t", set_config={"no.such.key": "1"})
    assert error_of(admin.alter_configs([res])[res]) == ("INVALID_CONFIG", 40)
    assert c.controller.topic_configs["t"] == {}


def test_segment_bytes_below_kafkas_least_is_refused_with_invalid_config():
    """Kafka 4.1.1's LogConfig: segment.bytes at least 1 MiB, at creation and on alteration (the differential
    scenario txn_batch_larger_than_segment: real Kafka refuses 4096 with INVALID_CONFIG; the lab accepted it).
    A batch larger than a 1 MiB segment (within max.message.bytes) is RECORD_LIST_TOO_LARGE."""
    c = Cluster(brokers=1, seed=3)
    admin = admin_of(c)
    got = admin.create_topics([NewTopic("tiny", 1, 1, config={"segment.bytes": "4096"}),
                               NewTopic("mib", 1, 1, config={"segment.bytes": "1048576",
                                                              "max.message.bytes": "2000000"})])
    assert error_of(got["tiny"]) == ("INVALID_CONFIG", 40)
    assert "Value must be at least 1048576" in got["tiny"].exception().args[0].str()
    assert got["mib"].result() is None
    res = ConfigResource("topic", "mib")
    res.add_incremental_config(ConfigEntry("segment.bytes", "65536", incremental_operation=AlterConfigOpType.SET))
    assert error_of(admin.incremental_alter_configs([res])[res]) == ("INVALID_CONFIG", 40)
    assert c.controller.topic_configs["mib"]["segment.bytes"] == 1048576
    p = Producer({"bootstrap.servers": c.bootstrap, "message.max.bytes": 2_000_000})
    reports = []
    p.produce("mib", value=b"s" * 1_100_000, partition=0, on_delivery=lambda err, msg: reports.append(err))
    p.flush(10)
    assert [(e.name(), e.code()) for e in reports] == [("RECORD_LIST_TOO_LARGE", 18)]
    assert c.topics() == ["mib"]


def _timestamps(c: Cluster, topic: str) -> list:
    from txnlab import Consumer
    co = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "ts-" + topic, "auto.offset.reset": "earliest",
                   "enable.auto.commit": False})
    co.subscribe([topic])
    out = []
    for _ in range(30):
        if len(out) == len(c.log(topic, 0).batches):
            break
        msg = co.poll(1)
        if msg is not None and msg.error() is None:
            out.append(msg.timestamp())
    co.close()
    return out


def test_message_timestamp_type_log_append_time_stamps_records_with_the_leaders_time():
    """LogAppendTime: the leader replaces the producer's timestamp by its append time (Kafka's LogValidator), and a
    consumer reads the type TIMESTAMP_LOG_APPEND_TIME (2); switched back by IncrementalAlterConfigs, the next record
    keeps the producer's CreateTime (1).  A value outside the two is refused naming the key."""
    c = Cluster(brokers=3, seed=7)
    admin = admin_of(c)
    admin.create_topics([NewTopic("stamped", 1, 3, config={"message.timestamp.type": "LogAppendTime"})])[
        "stamped"].result()
    producer_time = 1_700_000_000_000          # the producer's own CreateTime (2023): not what the log keeps
    p = Producer({"bootstrap.servers": c.bootstrap})
    p.produce("stamped", value=b"a", partition=0, timestamp=producer_time)
    p.flush(10)
    [(kind, ts)] = _timestamps(c, "stamped")
    assert kind == 2 and ts != producer_time
    assert ts == c.log("stamped", 0).batches[0].log_append_time + 1_767_225_600_000   # lab time, as Unix time
    res = ConfigResource(ResourceType.TOPIC, "stamped")
    res.add_incremental_config(ConfigEntry("message.timestamp.type", "CreateTime",
                                           incremental_operation=AlterConfigOpType.SET))
    assert admin.incremental_alter_configs([res])[res].result() is None
    p.produce("stamped", value=b"b", partition=0, timestamp=producer_time)
    p.flush(10)
    assert _timestamps(c, "stamped")[1] == (1, producer_time)
    assert admin.describe_configs([res])[res].result()["message.timestamp.type"].value == "CreateTime"
    bad = admin.create_topics([NewTopic("odd", 1, 1, config={"message.timestamp.type": "WallTime"})])["odd"]
    assert error_of(bad) == ("INVALID_CONFIG", 40)
    assert "message.timestamp.type" in bad.exception().args[0].str()
