"""A real librdkafka client (confluent-kafka) against the in-kernel cluster through the wire door:
every request it sends is a message of the simulated network, and what it sees is what the engine did."""
from __future__ import annotations


from helpers import values_in_log
from wire_helpers import commit_abort_commit, ck, consumer, lab, producer, read_all, values


def test_idempotent_producer_writes_each_record_once_with_its_producer_id():
    with lab(topics=(("t", 2),)) as (c, door):
        p = producer(door, **{"enable.idempotence": True, "client.id": "copier-1"})
        for i in range(20):
            p.produce("t", key=str(i).encode(), value=f"v{i}".encode())
        assert p.flush(30) == 0
        logs = [c.log("t", part) for part in (0, 1)]
        written = sorted(v for part in (0, 1) for v in values_in_log(c, "t", part))
        assert written == sorted(f"v{i}".encode() for i in range(20))
        batches = [b for log in logs for b in log.batches]
        assert batches and all(b.producer_id >= 0 and b.base_sequence >= 0 for b in batches)
        # the client is a lane of the simulated network, named by its client.id and the software it reported
        assert "copier-1" in c.kernel.nodes
        assert door.nodes[("copier-1", "confluent-kafka-python")].label.endswith("producer copier-1")
        steps = [e for e in c.trace.events if e.kind == "remote" and "copier-1" in e.text]
        assert any("InitProducerId" in e.text for e in steps) and any("Produce" in e.text for e in steps)


def test_read_committed_consumer_skips_the_aborted_transaction_and_the_markers():
    with lab() as (c, door):
        _p = commit_abort_commit(door, 5)
        # the log: a0..a4, COMMIT, b0..b4, ABORT, c0..c4, COMMIT
        kinds = [(b.base_offset, b.control_type.name if b.is_control else b.record_count)
                 for b in c.log("t").batches]
        assert kinds == [(0, 5), (5, "COMMIT"), (6, 5), (11, "ABORT"), (12, 5), (17, "COMMIT")]
        committed = read_all(consumer(door, "rc"), ["t"], expect=10)
        assert values(committed) == [f"a{i}".encode() for i in range(5)] + [f"c{i}".encode() for i in range(5)]
        assert [o for _, o, _ in committed] == [0, 1, 2, 3, 4, 12, 13, 14, 15, 16]
        everything = read_all(consumer(door, "ru", "read_uncommitted"), ["t"], expect=15)
        assert [o for _, o, _ in everything] == [0, 1, 2, 3, 4, 6, 7, 8, 9, 10, 12, 13, 14, 15, 16]


def test_send_offsets_to_transaction_commits_the_groups_offsets_with_the_output():
    with lab(topics=(("in", 1), ("out", 1))) as (c, door):
        seed = producer(door)
        for i in range(6):
            seed.produce("in", value=f"x{i}".encode())
        assert seed.flush(30) == 0
        src = consumer(door, "copiers", **{"client.id": "copier-in"})
        rows = read_all(src, ["in"], expect=6)
        assert len(rows) == 6
        p = producer(door, **{"transactional.id": "copier", "client.id": "copier-out"})
        p.init_transactions(30)
        p.begin_transaction()
        for _, _, v in rows:
            p.produce("out", value=v.upper())
        p.send_offsets_to_transaction([ck.TopicPartition("in", 0, 6)], src.consumer_group_metadata(), 30)
        p.commit_transaction(30)
        assert [tp.offset for tp in src.committed([ck.TopicPartition("in", 0)], 30)] == [6]
        src.close()
        assert values(read_all(consumer(door, "check"), ["out"], expect=6)) == [f"X{i}".encode() for i in range(6)]


def test_a_second_producer_with_the_same_transactional_id_fences_the_first():
    with lab() as (c, door):
        zombie = producer(door, **{"transactional.id": "copier", "client.id": "zombie"})
        zombie.init_transactions(30)
        zombie.begin_transaction()
        zombie.produce("t", value=b"from the zombie")
        zombie.flush(30)
        successor = producer(door, **{"transactional.id": "copier", "client.id": "successor"})
        successor.init_transactions(30)        # bumps the epoch and aborts the zombie's open transaction
        try:
            zombie.commit_transaction(30)
            raise AssertionError("the fenced producer committed")
        except ck.KafkaException as e:
            err = e.args[0]
            assert err.fatal() and err.code() == ck.KafkaError._FENCED
        successor.begin_transaction()
        successor.produce("t", value=b"from the successor")
        successor.commit_transaction(30)
        assert values(read_all(consumer(door, "rc"), ["t"], expect=1)) == [b"from the successor"]


def test_the_transaction_coordinator_crashes_mid_transaction_and_the_real_client_commits():
    with lab() as (c, door):
        p = producer(door, **{"transactional.id": "copier", "client.id": "copier-1"})
        p.init_transactions(30)
        p.begin_transaction()
        for i in range(3):
            p.produce("t", value=f"v{i}".encode())
        p.flush(30)
        coordinator = c.transaction_coordinator("copier")
        c.crash(f"broker-{coordinator}")
        p.commit_transaction(60)               # librdkafka finds the new coordinator and retries EndTxn
        assert c.transaction_coordinator("copier") != coordinator
        c.restart(f"broker-{coordinator}")
        assert values(read_all(consumer(door, "rc"), ["t"], expect=3)) == [b"v0", b"v1", b"v2"]
        assert c.transaction_state("copier")["state"] == "CompleteCommit"


def test_the_partition_leader_crashes_mid_transaction_and_the_real_client_commits():
    with lab() as (c, door):
        p = producer(door, **{"transactional.id": "copier", "client.id": "copier-1"})
        p.init_transactions(30)
        p.begin_transaction()
        p.produce("t", value=b"before")
        p.flush(30)
        leader = c.leader("t")
        c.crash(f"broker-{leader}")
        p.produce("t", value=b"after")         # goes to the new leader once librdkafka has the new metadata
        p.commit_transaction(60)
        assert c.leader("t") != leader
        c.restart(f"broker-{leader}")
        assert values(read_all(consumer(door, "rc"), ["t"], expect=2)) == [b"before", b"after"]


def test_a_transaction_version_2_cluster_advertises_the_feature_and_a_real_client_commits_and_aborts():
    with lab(config={"transaction.version": 2}) as (c, door):
        assert door.supported()[26][2] == 5 and door.supported()[0][2] == 12
        p = producer(door, **{"transactional.id": "copier", "client.id": "copier-tv2"})
        p.init_transactions(30)
        for value, commit in ((b"kept", True), (b"dropped", False), (b"kept too", True)):
            p.begin_transaction()
            p.produce("t", value=value)
            p.flush(30)
            (p.commit_transaction if commit else p.abort_transaction)(30)
        assert values(read_all(consumer(door, "rc"), ["t"], expect=2)) == [b"kept", b"kept too"]
        sent = " ".join(e.text for e in c.trace.events if e.kind == "remote" and "copier-tv2" in e.text)
        assert "EndTxn" in sent
        # librdkafka speaks the classic protocol (EndTxn below v5): Kafka ends its transactions without an epoch
        # bump even on this cluster, and writes their markers the classic way
        said = " ".join(str(e) for e in c.trace.events)
        assert "EndTxn of the classic protocol" in said
        markers = [b for b in c.log("t").batches if b.is_control]
        assert [b.control_type.name for b in markers] == ["COMMIT", "ABORT", "COMMIT"]
        assert len({b.producer_epoch for b in markers}) == 1


def test_admin_list_topics_asks_for_all_topics_and_gets_them():
    """librdkafka's all-topics Metadata (v12 here) carries three bytes after its body (the unused part of the
    topic count it reserved); Kafka reads the fields it knows and ignores the rest, and so does the door."""
    from confluent_kafka.admin import AdminClient

    with lab(topics=(("t", 2), ("u", 1))) as (c, door):
        admin = AdminClient({"bootstrap.servers": door.bootstrap_servers, "log_level": 0})
        md = admin.list_topics(timeout=10)
        assert {"t", "u"} <= set(md.topics)
        assert sorted(md.topics["t"].partitions) == [0, 1]
        assert not any("after its body" in e.text for e in c.trace.events)
