"""Replication: ISR, High Watermark, acks, min.insync.replicas, leader election, truncation."""
import pytest

from txnlab import Cluster, KafkaException, Producer
from txnlab.protocol.errors import Errors

from helpers import RawClient, check_watermarks, values_in_log


def three_brokers(**cfg):
    c = Cluster(brokers=3, seed=11, config=cfg or None)
    c.create_topic("t", partitions=1, replication_factor=3, config={"min.insync.replicas": 2})
    return c


def test_acks_all_leader_crash_after_ack_loses_nothing():
    c = three_brokers()
    p = Producer({"bootstrap.servers": c.bootstrap})
    acked = []
    for i in range(10):
        p.produce("t", value=b"r%d" % i, on_delivery=lambda e, m: acked.append(m.value()) if e is None else None)
    p.flush()
    assert len(acked) == 10
    old = c.leader("t", 0)
    c.crash(old)
    c.run_until(lambda: c.leader("t", 0) not in (-1, old), timeout_ms=30_000)
    c.restart(old)
    c.run_until_idle()
    for b in c.brokers:
        assert values_in_log(c, "t", broker=b) == acked


def test_acks_1_loses_an_acknowledged_record_when_the_leader_dies():
    c = three_brokers()
    p = Producer({"bootstrap.servers": c.bootstrap, "acks": "1"})     # idempotence silently off
    p.produce("t", value=b"safe")
    p.flush()
    c.run_until_idle()
    leader = c.leader("t", 0)
    followers = [b for b in c.brokers if b != leader]
    c.partition(followers, [leader])           # the followers cannot fetch any more
    acked = []
    p.produce("t", value=b"doomed", on_delivery=lambda e, m: acked.append((e, m.offset())))
    p.flush()
    assert acked == [(None, 1)]                # the client was told: written at offset 1
    c.crash(leader)
    c.heal()
    c.run_until(lambda: c.leader("t", 0) in followers, timeout_ms=30_000)
    c.restart(leader)
    c.run_until_idle()
    for b in c.brokers:
        assert values_in_log(c, "t", broker=b) == [b"safe"]          # the acked record is gone everywhere
    assert any("truncated its log" in e.narration for e in c.trace)


def test_not_enough_replicas_when_isr_below_min_insync():
    c = three_brokers(**{"replica.lag.time.max.ms": 2000})
    leader = c.leader("t", 0)
    others = [b for b in c.brokers if b != leader]
    c.crash(others[0])
    c.crash(others[1])
    c.advance(15_000)                          # followers fenced by the controller, ISR shrinks to the leader
    assert c.partition_state("t", 0)["isr"] == [leader]
    raw = RawClient(c)
    r = raw.produce("t", 0, [b"x"], acks=-1)
    assert r.error == Errors.NOT_ENOUGH_REPLICAS
    assert values_in_log(c, "t") == []
    r = raw.produce("t", 0, [b"y"], acks=1)    # acks=1 does not ask for min.insync
    assert r.error == Errors.NONE
    assert c.partition_state("t", 0)["hw"] == 0   # but the HW does not move while under min ISR


def test_high_watermark_never_passes_an_isr_member():
    c = three_brokers(**{"sim.network.jitter.ms": 3})
    p = Producer({"bootstrap.servers": c.bootstrap})
    for i in range(50):
        p.produce("t", value=b"%d" % i)
        if i % 7 == 0:
            for _ in range(5):
                c.step()
                check_watermarks(c, ["t"])
    while p._unacked:
        c.step()
        check_watermarks(c, ["t"])


def test_follower_that_stops_fetching_leaves_the_isr_and_rejoins():
    c = three_brokers(**{"replica.lag.time.max.ms": 3000})
    leader = c.leader("t", 0)
    lagging = [b for b in c.brokers if b != leader][0]
    c.partition([lagging], [leader])
    p = Producer({"bootstrap.servers": c.bootstrap})
    p.produce("t", value=b"a")
    p.flush()
    c.advance(5_000)
    assert lagging not in c.partition_state("t", 0)["isr"]
    c.heal()
    c.advance(35_000)     # its lost fetch times out (30 s), it fetches again, catches up, and rejoins
    assert lagging in c.partition_state("t", 0)["isr"]
    assert c.partition_state("t", 0)["replicas"][lagging]["leo"] == 1


def test_unclean_election_off_by_default_partition_stays_offline():
    c = Cluster(brokers=2, seed=1)
    c.create_topic("t", replication_factor=2)
    leader = c.leader("t", 0)
    other = 1 - leader
    c.partition([other], [leader])
    c.advance(50_000)                          # the follower drops out of the ISR
    c.heal()
    c.crash(leader)
    c.advance(15_000)
    assert c.leader("t", 0) == -1
    c2 = Cluster(brokers=2, seed=1, config={"unclean.leader.election.enable": True})
    c2.create_topic("t", replication_factor=2)
    leader = c2.leader("t", 0)
    other = 1 - leader
    c2.partition([other], [leader])
    c2.advance(50_000)
    c2.heal()
    c2.crash(leader)
    c2.advance(15_000)
    assert c2.leader("t", 0) == other


def test_produce_to_a_follower_is_not_leader():
    c = three_brokers()
    raw = RawClient(c)
    follower = [b for b in c.brokers if b != c.leader("t", 0)][0]
    from txnlab.protocol.record_batch import Record, RecordBatch
    from txnlab.protocol import messages as m
    resp = raw.call(follower, m.ProduceRequest(None, -1, 1000, {("t", 0): RecordBatch((Record(None, b"x"),))}))
    assert resp.responses[("t", 0)].error == Errors.NOT_LEADER_OR_FOLLOWER


def test_client_follows_leadership_after_a_crash():
    c = three_brokers()
    p = Producer({"bootstrap.servers": c.bootstrap})
    p.produce("t", value=b"1")
    p.flush()
    c.crash(c.leader("t", 0))
    p.produce("t", value=b"2")
    assert p.flush() == 0
    assert values_in_log(c, "t")[-1] == b"2"


def test_consumers_never_read_past_the_high_watermark():
    from txnlab import Consumer, TopicPartition
    c = three_brokers()
    p = Producer({"bootstrap.servers": c.bootstrap})
    p.produce("t", value=b"replicated")
    p.flush()
    leader = c.leader("t", 0)
    c.partition([b for b in c.brokers if b != leader], [leader])
    raw = RawClient(c)
    assert raw.produce("t", 0, [b"only-on-leader"], acks=1).error == Errors.NONE
    st = c.partition_state("t", 0)
    assert (st["hw"], st["leo"]) == (1, 2)
    consumer = Consumer({"group.id": "lab-reader", "enable.auto.commit": False, "bootstrap.servers": c.bootstrap, "isolation.level": "read_uncommitted"})
    consumer.assign([TopicPartition("t", 0, 0)])
    seen = [m.value() for m in consumer.consume(10, 2.0) if m.error() is None]
    assert seen == [b"replicated"]
    assert consumer.get_watermark_offsets(TopicPartition("t", 0)) == (0, 1)


def test_moving_the_leader_in_the_middle_of_a_transaction_loses_nothing():
    from helpers import read_all
    c = three_brokers()
    p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "mover"})
    p.init_transactions()
    p.begin_transaction()
    p.produce("t", value=b"before")
    p.flush()
    old = c.leader("t", 0)
    new = next(b for b in c.brokers if b != old)
    epoch = c.partition_state("t", 0)["leader_epoch"]
    c.move_leader("t", 0, new)                              # an operator's preferred-leader election
    c.run_until(lambda: c.broker(old).partitions[("t", 0)].leader == new)
    p.produce("t", value=b"after")                          # the producer finds the new leader
    p.commit_transaction()                                  # the COMMIT marker goes to it too
    c.run_until_idle()
    st = c.partition_state("t", 0)
    assert st["leader"] == new and st["leader_epoch"] == epoch + 1
    assert [b for b in c.brokers if not c.broker(b).partitions[("t", 0)].is_leader] == sorted(set(c.brokers) - {new})
    assert read_all(c, "t") == [b"before", b"after"]
    for b in c.brokers:                                     # every replica: data, data, COMMIT
        assert values_in_log(c, "t", broker=b) == [b"before", b"after"]
        assert c.log("t", 0, b).log_end_offset == 3
    assert c.trace.filter(contains=f"broker {new} is now the preferred replica of t-0")


def test_leadership_moves_only_to_a_live_in_sync_replica():
    c = three_brokers(**{"replica.lag.time.max.ms": 4_000})
    leader = c.leader("t", 0)
    with pytest.raises(KafkaException) as e:
        c.move_leader("t", 0, leader)
    assert e.value.error.name() == "ELECTION_NOT_NEEDED"
    other = next(b for b in c.brokers if b != leader)
    c.crash(other)
    # the controller learns of the crash when the broker's session expires; then it is out of the ISR
    assert c.run_until(lambda: other not in c.partition_state("t", 0)["isr"], timeout_ms=30_000)
    steps = c.kernel.step_count
    with pytest.raises(KafkaException) as e:
        c.move_leader("t", 0, other)
    assert e.value.error.name() == "PREFERRED_LEADER_NOT_AVAILABLE" and e.value.error.code() == 80
    assert c.kernel.step_count == steps and c.leader("t", 0) == leader      # refused: nothing happened
    with pytest.raises(KafkaException) as e:
        c.move_leader("t", 0, 7)
    assert e.value.error.name() == "ELIGIBLE_LEADERS_NOT_AVAILABLE"
